package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.strings;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.PromptKey;
import java.util.Arrays;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What must not change a key, and what must. */
class KeyStabilityTest {

    private static final Set<String> KNOWN_PART_TYPES = Set.of(
            "text",
            "refusal",
            "image_url",
            "audio_url",
            "video_url",
            "input_audio",
            "file",
            "image",
            "document",
            "tool_use",
            "tool_result",
            "thinking",
            "redacted_thinking");

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    private PromptKey key(String fixture, byte[] body) throws ExtractionException {
        return extractor.extract(Fixtures.endpoint(fixture), body).key();
    }

    private String text(String fixture, byte[] body) throws ExtractionException {
        return extractor.keyText(Fixtures.endpoint(fixture), body);
    }

    @Test
    void memberOrderAndWhitespaceDoNotMatter() {
        qt().withFixedSeed(20240501L)
                .withExamples(300)
                .forAll(
                        integers().between(0, Fixtures.all().size() - 1),
                        integers().all())
                .checkAssert((i, seed) -> {
                    String f = Fixtures.all().get(i);
                    byte[] original = Fixtures.bytes(f);
                    JsonNode shuffled = Json.shuffled(Json.parse(original), new Random(seed));
                    try {
                        assertEquals(text(f, original), text(f, Json.bytes(shuffled)), f);
                        assertEquals(key(f, original), key(f, Json.pretty(shuffled)), f);
                    } catch (ExtractionException e) {
                        throw new AssertionError(f + ": " + e.code() + " " + e.param(), e);
                    }
                });
    }

    @Test
    void unknownFieldsAndSamplingParametersDoNotMatter() throws Exception {
        Random rnd = new Random(7);
        for (String f : Fixtures.all()) {
            byte[] original = Fixtures.bytes(f);
            ObjectNode body = Json.parse(original);
            body.put("temperature", 0.1)
                    .put("max_tokens", 7)
                    .put("top_p", 0.5)
                    .put("seed", 42)
                    .put("n", 3)
                    .put("x_vendor_extension", "whatever")
                    .put("stream", !body.path("stream").asBoolean());
            body.putObject("response_format").put("type", "json_object");
            body.put("tool_choice", "required");
            body.putArray("stop").add("\n");
            if (body.get("messages") instanceof ArrayNode messages) {
                for (JsonNode m : messages) {
                    ((ObjectNode) m).put("x_" + rnd.nextInt(1000), rnd.nextInt());
                    if (m.get("content") instanceof ArrayNode parts) {
                        for (JsonNode part : parts) {
                            if (KNOWN_PART_TYPES.contains(part.path("type").asText())) {
                                ((ObjectNode) part).putObject("cache_control").put("type", "ephemeral");
                                ((ObjectNode) part).put("x_new_field", "ignored");
                            }
                        }
                    }
                }
            }
            assertEquals(key(f, original), key(f, Json.bytes(body)), f);
        }
    }

    @Test
    void aLongerConversationStartsWithTheShorterOnesKey() throws Exception {
        for (String f : Fixtures.all()) {
            ObjectNode full = Json.parse(Fixtures.bytes(f));
            ArrayNode turns = Json.turns(full);
            if (turns == null
                    || !turns.get(0).isContainerNode() && !turns.get(0).isTextual()) {
                continue; // a single token-id prompt is one turn
            }
            PromptKey longKey = key(f, Json.bytes(full));
            for (int k = 1; k < turns.size(); k++) {
                ObjectNode shorter = full.deepCopy();
                ArrayNode cut = Json.turns(shorter);
                while (cut.size() > k) {
                    cut.remove(cut.size() - 1);
                }
                PromptKey shortKey = key(f, Json.bytes(shorter));
                assertTrue(shortKey.length() < longKey.length(), f);
                for (int b = 0; b < shortKey.blockCount(); b++) {
                    assertEquals(shortKey.blockHash(b), longKey.blockHash(b), f + " k=" + k + " block " + b);
                }
                int[] sb = shortKey.boundaries();
                assertTrue(Arrays.equals(sb, Arrays.copyOf(longKey.boundaries(), sb.length)), f + " k=" + k);
                assertEquals(shortKey.anchorHash(), longKey.anchorHash(), f + " k=" + k);
            }
        }
    }

    @Test
    void aLongerTextInTheLastMessageKeepsTheEarlierBlocks() throws Exception {
        String base = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"" + "s".repeat(300)
                + "\"},{\"role\":\"user\",\"content\":\"";
        PromptKey a = key("chat-", (base + "abc\"}]}").getBytes());
        PromptKey b = key("chat-", (base + "abcdef" + "x".repeat(500) + "\"}]}").getBytes());
        for (int i = 0; i < a.blockCount(); i++) {
            assertEquals(a.blockHash(i), b.blockHash(i));
        }
    }

    @Test
    void differentModelsNeverShareBlockZero() {
        qt().withFixedSeed(99L)
                .withExamples(500)
                .forAll(
                        strings().allPossible().ofLengthBetween(0, 200),
                        strings().allPossible().ofLengthBetween(0, 200))
                .checkAssert((m1, m2) -> {
                    if (m1.equals(m2)) {
                        return;
                    }
                    try {
                        PromptKey k1 = keyFor(m1);
                        PromptKey k2 = keyFor(m2);
                        assertNotEquals(k1.blockHash(0), k2.blockHash(0));
                    } catch (ExtractionException e) {
                        throw new AssertionError(e.code(), e);
                    }
                });
    }

    private PromptKey keyFor(String model) throws ExtractionException {
        ObjectNode body = Json.parse(Fixtures.bytes("chat-stream"));
        body.put("model", model);
        return key("chat-stream", Json.bytes(body));
    }

    @Test
    void toolsChangeTheKeyFromTheFirstBlock() throws Exception {
        for (String f : new String[] {"chat-tools", "messages-tools"}) {
            ObjectNode withTools = Json.parse(Fixtures.bytes(f));
            ObjectNode without = withTools.deepCopy();
            without.remove("tools");
            ObjectNode fewer = withTools.deepCopy();
            ((ArrayNode) fewer.get("tools")).remove(1);
            ObjectNode edited = withTools.deepCopy();
            JsonNode firstTool = edited.get("tools").get(0);
            ObjectNode target =
                    firstTool.has("function") ? (ObjectNode) firstTool.get("function") : (ObjectNode) firstTool;
            target.put("description", "Something else entirely");
            PromptKey k = key(f, Json.bytes(withTools));
            assertNotEquals(k.blockHash(0), key(f, Json.bytes(without)).blockHash(0), f);
            PromptKey kf = key(f, Json.bytes(fewer));
            assertNotEquals(k.blockHash(k.blockCount() - 1), kf.blockHash(kf.blockCount() - 1), f);
            assertNotEquals(k.blockHash(1), key(f, Json.bytes(edited)).blockHash(1), f);
        }
    }

    @Test
    void contentChangesTheKey() throws Exception {
        for (String f : Fixtures.all()) {
            ObjectNode body = Json.parse(Fixtures.bytes(f));
            ArrayNode turns = Json.turns(body);
            if (turns == null) {
                continue;
            }
            PromptKey before = key(f, Json.bytes(body));
            ObjectNode changed = body.deepCopy();
            ArrayNode t = Json.turns(changed);
            JsonNode last = t.get(t.size() - 1);
            if (last.isObject()) {
                ((ObjectNode) last)
                        .put("content", "a different last message, long enough to fill a block or two of key");
            } else if (last.isTextual()) {
                t.set(t.size() - 1, "a different last prompt");
            } else if (last.isArray()) {
                t.set(t.size() - 1, Json.MAPPER.createArrayNode().add(7));
            } else {
                t.set(t.size() - 1, 7);
            }
            assertNotEquals(before, key(f, Json.bytes(changed)), f);
        }
    }
}
