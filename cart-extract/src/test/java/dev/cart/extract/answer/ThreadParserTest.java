package dev.cart.extract.answer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.StreamReadConstraints;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * JSON answers read one after another by the thread's parser ({@link ThreadParser}) read as each would with a
 * parser of its own: whatever the one before held after its object, or however it failed.
 */
class ThreadParserTest {

    private static String answer(String text, int prompt) {
        return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"m\","
                + "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" + text
                + "\"},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":" + prompt
                + ",\"completion_tokens\":2,\"total_tokens\":" + (prompt + 2) + "}}";
    }

    /** Reads {@code body} as the proxy hands it over: whole, with its declared length, inside a larger array. */
    private static AnswerReader read(byte[] body) {
        byte[] framed = new byte[body.length + 6];
        System.arraycopy(body, 0, framed, 3, body.length);
        AnswerReader r = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", null, true, body.length);
        r.accept(framed, 3, body.length);
        r.finish();
        return r;
    }

    private static AnswerReader read(String body) {
        return read(body.getBytes(StandardCharsets.UTF_8));
    }

    private static void assertRead(AnswerReader r, String text, int prompt, String what) {
        assertEquals(new ServedUsage(prompt, ServedUsage.UNKNOWN), r.usage(), what);
        assertEquals(List.of(text), r.reply(), what);
        assertEquals(0, r.parseFailures(), what);
    }

    /**
     * Answers between which come answers with bytes after their object (another object, or anything), answers cut
     * short or with a bad token, and more answers than one parser reads: each reads as alone.
     */
    @Test
    void eachAnswerReadsAsWithAParserOfItsOwn() {
        for (int i = 0; i < ThreadParser.MAX_USES + 50; i++) {
            String text = "answer " + i;
            switch (i % 7) {
                case 1 -> {
                    // an object after the object: ignored, and not read by the next answer
                    AnswerReader r = read(answer(text, i) + "{\"usage\":{\"prompt_tokens\":999999}}");
                    assertRead(r, text, i, "an object after the object, at " + i);
                }
                case 2 -> assertRead(read(answer(text, i) + " ]] not json"), text, i, "bytes after, at " + i);
                case 3 -> {
                    String whole = answer(text, i);
                    AnswerReader cut = read(whole.substring(0, whole.length() - 1 - i % 40));
                    assertEquals(1, cut.parseFailures(), "cut short, at " + i);
                }
                case 4 -> {
                    AnswerReader bad = read("{\"choices\":[{\"index\":0,\"message\":{\"content\":\"x\"}}],"
                            + "\"usage\":{\"prompt_tokens\": nope}}");
                    assertEquals(1, bad.parseFailures(), "a bad token, at " + i);
                }
                default -> assertRead(read(answer(text, i)), text, i, "at " + i);
            }
        }
    }

    /**
     * A body Jackson reads as UTF-16 or UTF-32 (a zero byte among its first) or that opens with a byte order mark
     * is read as before, by a parser of its own that detects its encoding; one over the size the thread's parser
     * reads, too.
     */
    @Test
    void otherEncodingsAndLargeBodiesReadAsBefore() {
        String body = answer("h\u00e9llo \u4e2d", 42);
        for (Charset cs :
                new Charset[] {StandardCharsets.UTF_16LE, StandardCharsets.UTF_16BE, Charset.forName("UTF-32")}) {
            assertRead(read(body.getBytes(cs)), "h\u00e9llo \u4e2d", 42, cs.name());
        }
        assertRead(read("\ufeff" + body), "h\u00e9llo \u4e2d", 42, "a byte order mark");
        String large = "y".repeat(ThreadParser.MAX_BYTES);
        assertRead(read(answer(large, 7)), large, 7, "larger than the thread's parser reads");
        assertRead(read(answer("after", 8)), "after", 8, "then a small one");
    }

    @Test
    void aPerDocumentLimitKeepsAParserPerAnswer() {
        assertTrue(ThreadParser.noDocumentLimit(StreamReadConstraints.defaults()));
        assertFalse(ThreadParser.noDocumentLimit(
                StreamReadConstraints.builder().maxDocumentLength(1 << 20).build()));
        assertFalse(ThreadParser.noDocumentLimit(
                StreamReadConstraints.builder().maxTokenCount(100_000).build()));
    }

    /**
     * The content type is matched as its lower-case form: ASCII capitals match, characters that only case-fold to
     * ASCII letters ({@code U+0130}, the long s) do not.
     */
    @Test
    void contentTypesMatchAsTheirLowerCase() {
        assertNotNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "Application/JSON; charset=UTF-8", null, true));
        byte[] stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
                .getBytes(StandardCharsets.UTF_8);
        AnswerReader sse = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "TEXT/Event-Stream", null, true);
        sse.accept(stream, 0, stream.length);
        sse.finish();
        assertEquals(List.of("Hi"), sse.reply(), "read as a stream");
        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "appl\u0130cation/json", null, true));
        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "text/event-\u017Ftream", null, true));
        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/jso", null, true));
    }

    /** A JSON answer's choice holding a {@code delta}, or a chunk's a {@code message}: read alike, either order. */
    @Test
    void aChoiceReadsTheSameWhicheverBodyItHolds() {
        assertRead(read(answer("Hi", 5).replace("\"message\"", "\"delta\"")), "Hi", 5, "a delta in an answer");
        byte[] stream = ("data: {\"choices\":[{\"index\":0,\"message\":{\"content\":\"Hel\"},\"logprobs\":null}]}\n\n"
                        + "data: {\"choices\":[{\"message\":{\"content\":\"lo\"},\"index\":0}]}\n\n")
                .getBytes(StandardCharsets.UTF_8);
        AnswerReader sse = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "text/event-stream", null, true);
        sse.accept(stream, 0, stream.length);
        sse.finish();
        assertEquals(List.of("Hello"), sse.reply());
    }
}
