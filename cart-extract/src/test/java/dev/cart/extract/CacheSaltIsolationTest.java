package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code cache_salt} (vLLM) and {@code lora_path} (SGLang) separate a replica's prefix caches, so they enter
 * the key's first block: two requests that differ only in them never share a block, and so never a
 * predicted hit; the same salt or adapter shares everything; without them the key is what it always was.
 */
class CacheSaltIsolationTest {

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    private static final String MESSAGES = "\"messages\":[{\"role\":\"system\",\"content\":\""
            + "You are a careful assistant. ".repeat(20) + "\"},{\"role\":\"user\",\"content\":\"hi\"}]";

    private PromptKey key(Endpoint endpoint, String extraFields) throws ExtractionException {
        String body = "{\"model\":\"llama-3-8b\"," + extraFields + MESSAGES + "}";
        return extractor
                .extract(endpoint, body.getBytes(StandardCharsets.UTF_8))
                .key();
    }

    private PromptKey chat(String extraFields) throws ExtractionException {
        return key(Endpoint.CHAT_COMPLETIONS, extraFields);
    }

    /** Blocks two keys share from the start. */
    private static int sharedBlocks(PromptKey a, PromptKey b) {
        int n = 0;
        while (n < Math.min(a.blockCount(), b.blockCount()) && a.blockHash(n) == b.blockHash(n)) {
            n++;
        }
        return n;
    }

    @Test
    void differentSaltsShareNoBlockAndTheSameSaltSharesAll() throws Exception {
        PromptKey a = chat("\"cache_salt\":\"tenant-a\",");
        PromptKey b = chat("\"cache_salt\":\"tenant-b\",");
        PromptKey none = chat("");
        assertEquals(0, sharedBlocks(a, b));
        assertEquals(0, sharedBlocks(a, none));
        assertEquals(a, chat("\"cache_salt\":\"tenant-a\","));
        // where the field sits in the body does not matter
        String body = "{" + MESSAGES + ",\"cache_salt\":\"tenant-a\",\"model\":\"llama-3-8b\"}";
        assertEquals(
                a,
                extractor
                        .extract(Endpoint.CHAT_COMPLETIONS, body.getBytes(StandardCharsets.UTF_8))
                        .key());
    }

    @Test
    void anAbsentNullOrEmptySaltKeepsTheKeyOfOldAndSaltsEveryDialect() throws Exception {
        PromptKey none = chat("");
        assertEquals(none, chat("\"cache_salt\":null,"));
        assertEquals(none, chat("\"cache_salt\":\"\","));
        assertEquals(Extraction.modelMarker("llama-3-8b"), Extraction.modelMarker("llama-3-8b", "", null));
        assertEquals(0, sharedBlocks(key(Endpoint.MESSAGES, "\"cache_salt\":\"s\","), key(Endpoint.MESSAGES, "")));
    }

    @Test
    void adaptersAreTheirOwnCache() throws Exception {
        PromptKey sql = chat("\"lora_path\":\"sql\",");
        assertEquals(0, sharedBlocks(sql, chat("\"lora_path\":\"python\",")));
        assertEquals(0, sharedBlocks(sql, chat("")));
        assertEquals(sql, chat("\"lora_path\":\"sql\","));
        assertEquals(0, sharedBlocks(sql, chat("\"cache_salt\":\"sql\",")), "a salt is not an adapter");
        assertEquals(
                0,
                sharedBlocks(chat("\"lora_path\":[\"sql\",null],"), chat("\"lora_path\":[null,\"sql\"],")),
                "a batch's adapters in order");
    }

    @Test
    void noModelNameSpellsTheMarkerOfASaltedRequest() {
        String salted = Extraction.modelMarker("m", "x", null);
        assertNotEquals(salted, Extraction.modelMarker("m\u0000cache_salt:1:x"));
        assertNotEquals(salted, Extraction.modelMarker("1:m\u0000cache_salt:1:x"));
        assertNotEquals(salted, Extraction.modelMarker("m", null, "x"));
        assertEquals(Extraction.modelMarker("m").length(), salted.length());
    }

    @Test
    void aSaltThatIsNotAStringIsABadRequest() {
        ExtractionException e = assertThrows(ExtractionException.class, () -> chat("\"cache_salt\":7,"));
        assertEquals(400, e.status());
        assertThrows(ExtractionException.class, () -> chat("\"lora_path\":{\"a\":1},"));
    }
}
