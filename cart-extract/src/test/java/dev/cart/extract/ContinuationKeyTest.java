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

    /**
     * Replies that end a unit before, at, or after a block's end (the default 64-character blocks), from a few
     * characters to over 2,500: raw and escaped non-ASCII text, surrogate pairs, lone surrogates, in one to
     * three pieces, given as Strings and as StringBuilders.
     */
    @Test
    void repliesEndingAroundABlocksEndContinueAsTheNextTurnsKey() {
        qt().withFixedSeed(1613L)
                .withExamples(300)
                .forAll(integers().all(), integers().between(-2, 2), integers().between(0, 7))
                .checkAssert((seed, edge, shape) -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
                    boolean ascii = (shape & 4) == 4;
                    check(x, rnd, (shape & 1) == 1, (shape & 2) == 2, (routedLength, pieces) -> {
                        int block = PromptKey.DEFAULT_BLOCK_CHARS;
                        int before = routedLength + Extraction.ASSISTANT.length() + ((shape & 1) == 1 ? pieces - 1 : 0);
                        int total = Math.floorMod(edge - before, block) + block * rnd.nextInt(0, 40);
                        List<String> reply = new ArrayList<>();
                        for (int i = 0; i < pieces; i++) {
                            int len = i == pieces - 1 ? total : rnd.nextInt(0, total + 1);
                            String t = ascii ? asciiText(rnd, len) : KeyPathsTest.text(rnd, len, true);
                            reply.add(t.substring(0, len));
                            total -= len;
                        }
                        return reply;
                    });
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

    private static String asciiText(SplittableRandom rnd, int len) {
        StringBuilder sb = new StringBuilder(len);
        while (sb.length() < len) {
            sb.append((char) rnd.nextInt(0x20, 0x7F));
        }
        return sb.toString();
    }

    /** The reply to continue a routed key of {@code routedLength} units with, in {@code pieces} pieces. */
    private interface Replies {
        List<String> reply(int routedLength, int pieces);
    }

    private static void check(PromptExtractor x, SplittableRandom rnd, boolean anthropic, boolean stream) {
        check(x, rnd, anthropic, stream, (routedLength, pieces) -> {
            List<String> reply = new ArrayList<>();
            for (int i = 0; i < pieces; i++) {
                reply.add(KeyPathsTest.text(rnd, rnd.nextInt(0, 150), true));
            }
            return reply;
        });
    }

    private static void check(
            PromptExtractor x, SplittableRandom rnd, boolean anthropic, boolean stream, Replies replies) {
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
        Endpoint e = anthropic ? Endpoint.MESSAGES : Endpoint.CHAT_COMPLETIONS;
        ExtractedRequest routed;
        try {
            routed = x.extract(e, utf8(head + "]}"));
        } catch (ExtractionException ex) {
            throw new AssertionError(ex.code() + " " + ex.param(), ex);
        }
        int pieces = rnd.nextInt(1, 4);
        List<String> reply = replies.reply(routed.key().length(), pieces);
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
        try {
            PromptKey cont = x.continuationKey(routed, reply);
            assertNotNull(cont);
            List<StringBuilder> held = new ArrayList<>();
            for (String r : reply) {
                held.add(new StringBuilder(r));
            }
            assertEquals(cont, x.continuationKey(routed, held), "the same reply held in StringBuilders");
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
