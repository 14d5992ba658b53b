package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A tool list read from the cache gives the key a first reading gives, and only for the same bytes. */
class ToolsCacheTest {

    private static final String TOOLS = "[{\"type\":\"function\",\"function\":{\"name\":\"search_orders\","
            + "\"description\":\"Search orders; returns JSON.\\nFails when the \\\"id\\\" is unknown (caf\u00e9).\","
            + "\"parameters\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},"
            + "\"limit\":{\"type\":\"integer\",\"maximum\":100}},\"required\":[\"id\"]}}}]";

    private static byte[] body(String tools, String user) {
        return ("{\"model\":\"m\",\"tools\":" + tools + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + user
                        + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
    }

    private static PromptKey cold(byte[] body) throws ExtractionException {
        return new PromptExtractor(ExtractOptions.defaults())
                .extract(Endpoint.CHAT_COMPLETIONS, body)
                .key();
    }

    @Test
    void aRepeatedListGivesTheKeyOfAFirstReading() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        byte[] first = body(TOOLS, "hello");
        assertEquals(cold(first), x.extract(Endpoint.CHAT_COMPLETIONS, first).key());
        // the same list, another conversation after it: read from the cache
        byte[] next = body(TOOLS, "another turn, longer than the first one");
        assertEquals(cold(next), x.extract(Endpoint.CHAT_COMPLETIONS, next).key());
        // the same list in a body laid out differently (messages first, the list last)
        byte[] moved = ("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":" + TOOLS
                        + ",\"model\":\"m\"}")
                .getBytes(StandardCharsets.UTF_8);
        assertEquals(cold(moved), x.extract(Endpoint.CHAT_COMPLETIONS, moved).key());
    }

    @Test
    void aListDifferingInOneByteIsReadAgain() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        x.extract(Endpoint.CHAT_COMPLETIONS, body(TOOLS, "hello"));
        String changed = TOOLS.replace("\"maximum\":100", "\"maximum\":101");
        byte[] b = body(changed, "hello");
        PromptKey k = x.extract(Endpoint.CHAT_COMPLETIONS, b).key();
        assertEquals(cold(b), k);
        assertNotEquals(cold(body(TOOLS, "hello")), k);
    }

    @Test
    void anErrorAfterACachedListHasTheLineAndColumnOfAFirstReading() throws Exception {
        String pretty =
                TOOLS.replace("[{", "[\n  {").replace(",\"", ",\r\n    \"").replace("}]", "}\r  ]");
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        x.extract(Endpoint.CHAT_COMPLETIONS, body(pretty, "hello"));
        byte[] broken = ("{\"model\":\"m\",\"tools\":" + pretty + ",\n\"messages\":[{\"role\":\"user\",,}]}")
                .getBytes(StandardCharsets.UTF_8);
        ExtractionException warm =
                assertThrows(ExtractionException.class, () -> x.extract(Endpoint.CHAT_COMPLETIONS, broken));
        ExtractionException cold = assertThrows(
                ExtractionException.class,
                () -> new PromptExtractor(ExtractOptions.defaults()).extract(Endpoint.CHAT_COMPLETIONS, broken));
        assertEquals("invalid_json", cold.code());
        assertEquals(cold.getMessage(), warm.getMessage());
    }

    @Test
    void aBodyCutInsideACachedListIsStillAnError() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        byte[] whole = body(TOOLS, "hello");
        x.extract(Endpoint.CHAT_COMPLETIONS, whole);
        int listEnd = new String(whole, StandardCharsets.UTF_8).indexOf(",\"messages\"");
        byte[] cut = java.util.Arrays.copyOf(whole, listEnd - 1);
        assertEquals(
                "invalid_json",
                assertThrows(ExtractionException.class, () -> x.extract(Endpoint.CHAT_COMPLETIONS, cut))
                        .code());
        // the list is whole but invalid UTF-8 follows it
        byte[] bad = java.util.Arrays.copyOf(whole, whole.length);
        int at = new String(whole, StandardCharsets.ISO_8859_1).indexOf("hello");
        bad[at] = (byte) 0xFF;
        assertEquals(
                "invalid_encoding",
                assertThrows(ExtractionException.class, () -> x.extract(Endpoint.CHAT_COMPLETIONS, bad))
                        .code());
    }

    @Test
    void aListThatIsNotUtf8IsRejectedEveryTimeItIsSent() throws Exception {
        // an overlong form (C1 81 for 'A') that Jackson decodes without complaint, inside the list: the body is
        // rejected after the list was read; the list must not be cached as if its bytes had been checked
        byte[] bad = body(TOOLS.replace("search_orders", "search_##rders"), "hello");
        int at = new String(bad, StandardCharsets.ISO_8859_1).indexOf("##");
        bad[at] = (byte) 0xC1;
        bad[at + 1] = (byte) 0x81;
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        for (int i = 0; i < 3; i++) {
            assertEquals(
                    "invalid_encoding",
                    assertThrows(ExtractionException.class, () -> x.extract(Endpoint.CHAT_COMPLETIONS, bad))
                            .code());
        }
    }
}
