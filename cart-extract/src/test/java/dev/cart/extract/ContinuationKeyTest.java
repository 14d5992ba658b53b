package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The continuation key (a conversation followed by the assistant's reply) is the start of the key a full
 * extraction gives the next turn's body: the same blocks, boundaries and anchor up to its length.
 */
class ContinuationKeyTest {

    @Test
    void continuationIsThePrefixOfTheNextTurnsKey() {
        qt().withFixedSeed(1612L)
                .withExamples(300)
                .forAll(integers().all(), integers().between(1, 70), integers().between(0, 3))
                .checkAssert((seed, block, shape) -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    boolean anthropic = (shape & 1) == 1;
                    boolean stream = (shape & 2) == 2;
                    PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                            .blockChars(block)
                            .anchorLimit(1 + rnd.nextInt(600))
                            .build());
                    check(x, rnd, anthropic, stream);
                });
    }

    @Test
    void tokenModeContinuesWithTheReplysIds() {
        PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(new Tokenizer() {
                    @Override
                    public int[] encode(String text) {
                        return text.codePoints().toArray();
                    }

                    @Override
                    public String name() {
                        return "code-points";
                    }
                })
                .blockTokens(4)
                .build());
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < 40; i++) {
            check(x, rnd, i % 2 == 0, i % 4 < 2);
        }
    }

    @Test
    void nothingToLearn() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        ExtractedRequest prefill = x.extract(
                Endpoint.CHAT_COMPLETIONS,
                utf8("{\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"The answer is\"}]}"));
        assertNull(x.continuationKey(prefill, List.of(" 42")));
        ExtractedRequest completion = x.extract(Endpoint.COMPLETIONS, utf8("{\"prompt\":\"once upon\"}"));
        assertNull(x.continuationKey(completion, List.of(" a time")));
        ExtractedRequest made = new ExtractedRequest(PromptKey.ofText("x", 64), null, false);
        assertNull(x.continuationKey(made, List.of("y")));
    }

    private static void check(PromptExtractor x, SplittableRandom rnd, boolean anthropic, boolean stream) {
        String model = "\"model\":\"m\",\"stream\":" + stream;
        StringBuilder messages = new StringBuilder();
        int turns = rnd.nextInt(1, 5);
        for (int t = 0; t < turns; t++) {
            if (t > 0) {
                messages.append(',');
            }
            String role = t % 2 == 0 ? "user" : "assistant";
            messages.append("{\"role\":\"")
                    .append(role)
                    .append("\",\"content\":")
                    .append(KeyPathsTest.json(rnd, KeyPathsTest.text(rnd, rnd.nextInt(0, 200), true)))
                    .append('}');
        }
        if (turns % 2 == 0) {
            messages.append(",{\"role\":\"user\",\"content\":\"and?\"}");
        }
        String head =
                "{" + model + (anthropic ? ",\"system\":" + KeyPathsTest.json(rnd, KeyPathsTest.text(rnd, 50)) : "")
                        + ",\"messages\":[" + messages;
        List<String> reply = new ArrayList<>();
        int pieces = rnd.nextInt(1, 4);
        for (int i = 0; i < pieces; i++) {
            reply.add(KeyPathsTest.text(rnd, rnd.nextInt(0, 150), true));
        }
        StringBuilder assistant = new StringBuilder(",{\"role\":\"assistant\",\"content\":");
        if (anthropic && pieces > 1) {
            assistant.append('[');
            for (int i = 0; i < pieces; i++) {
                assistant
                        .append(i == 0 ? "" : ",")
                        .append("{\"type\":\"text\",\"text\":")
                        .append(KeyPathsTest.json(rnd, reply.get(i)))
                        .append('}');
            }
            assistant.append(']');
        } else {
            assistant.append(KeyPathsTest.json(rnd, String.join("", reply)));
        }
        assistant.append('}');
        String next = head + assistant + ",{\"role\":\"user\",\"content\":\"next question\"}]}";
        Endpoint e = anthropic ? Endpoint.MESSAGES : Endpoint.CHAT_COMPLETIONS;
        try {
            ExtractedRequest routed = x.extract(e, utf8(head + "]}"));
            PromptKey cont = x.continuationKey(routed, reply);
            assertNotNull(cont);
            PromptKey full = x.extract(e, utf8(next)).key();
            assertTrue(cont.length() < full.length());
            assertEquals(full.prefix(cont.length()), cont);
            assertEquals(routed.key().boundaryCount() + 1, cont.boundaryCount());
            assertEquals(routed.key().unit(), cont.unit());
        } catch (ExtractionException ex) {
            throw new AssertionError(ex.code() + " " + ex.param(), ex);
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
