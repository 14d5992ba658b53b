package dev.cart.extract.answer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The observer reads usage and answers from bytes however they are cut; the continuation splice. */
class AnswerReaderTest {

    private static final String OPENAI_STREAM = ""
            + "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},"
            + "\"finish_reason\":null}],\"usage\":null}\r\n\r\n"
            + ": a comment line\n"
            + "data: {\"choices\":[{\"delta\":{\"content\":\"lo, \\\"w\\u00f6rld\\\"\\n\"},\"index\":0}]}\n\n"
            + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\u4e2d\",\"tool_calls\":[]}}]}\n\n"
            + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":9,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n"
            + "data: [DONE]\n\n";

    private static AnswerReader feed(Endpoint e, String contentType, byte[] bytes, int... cuts) {
        return feed(true, e, contentType, bytes, cuts);
    }

    private static AnswerReader feed(boolean learn, Endpoint e, String contentType, byte[] bytes, int... cuts) {
        AnswerReader o = AnswerReader.create(e, contentType, null, learn);
        int from = 0;
        for (int cut : cuts) {
            o.accept(bytes, from, cut - from);
            from = cut;
        }
        o.accept(bytes, from, bytes.length - from);
        o.finish();
        return o;
    }

    @Test
    void anOpenAiStreamGivesTheSameUsageAndAnswerCutAnywhere() {
        byte[] bytes = OPENAI_STREAM.getBytes(StandardCharsets.UTF_8);
        String expected = "Hello, \"w\u00f6rld\"\n\u4e2d";
        for (int cut = 0; cut <= bytes.length; cut++) {
            AnswerReader o = feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream", bytes, cut);
            assertEquals(new ServedUsage(1200, 1024), o.usage(), "cut at " + cut);
            assertEquals(List.of(expected), o.reply(), "cut at " + cut);
        }
        SplittableRandom rnd = new SplittableRandom(7);
        for (int i = 0; i < 200; i++) {
            int a = rnd.nextInt(bytes.length + 1);
            int b = a + rnd.nextInt(bytes.length + 1 - a);
            AnswerReader o = feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream; charset=utf-8", bytes, a, b);
            assertEquals(new ServedUsage(1200, 1024), o.usage());
            assertEquals(List.of(expected), o.reply());
        }
    }

    /**
     * A JSON body that arrives whole with its declared length is parsed in place at once (no copy kept for the
     * end); cut in pieces, or of an unknown length, it is kept and parsed at the end: the same usage and answer.
     */
    @Test
    void aJsonBodyArrivingWholeIsParsedWhereItLies() {
        byte[] body = ("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hi there\"}}],"
                        + "\"usage\":{\"prompt_tokens\":300,\"completion_tokens\":2}}")
                .getBytes(StandardCharsets.UTF_8);
        byte[] framed = new byte[body.length + 8];
        System.arraycopy(body, 0, framed, 4, body.length);
        AnswerReader whole =
                AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", null, true, body.length);
        whole.accept(framed, 4, body.length);
        assertEquals(300, whole.usage().promptTokens(), "read as it arrived, before the end");
        java.util.Arrays.fill(framed, (byte) 'x'); // the caller's array is not kept
        whole.finish();
        assertEquals(300, whole.usage().promptTokens());
        assertEquals(List.of("Hi there"), whole.reply());
        assertEquals(0, whole.parseFailures());
        for (long declared : new long[] {body.length, -1}) {
            AnswerReader cut = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", null, true, declared);
            cut.accept(body, 0, 10);
            cut.accept(body, 10, body.length - 10);
            assertEquals(ServedUsage.UNKNOWN, cut.usage().promptTokens(), "in pieces, read at the end");
            cut.finish();
            assertEquals(300, cut.usage().promptTokens());
            assertEquals(List.of("Hi there"), cut.reply());
        }
    }

    @Test
    void anAnthropicStreamAndMessage() {
        String stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],"
                + "\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":50,\"cache_read_input_tokens\":850,"
                + "\"output_tokens\":1}}}\n\n"
                + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                + "event: ping\ndata: {\"type\":\"ping\"}\n\n"
                + "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"One\"}}\n\n"
                + "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                + "data: {\"index\":1,\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                + "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"text\":\"Two\",\"type\":\"text_delta\"}}\n\n"
                + "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n"
                + "data: {\"type\":\"message_stop\"}\n\n";
        AnswerReader s = feed(Endpoint.MESSAGES, "text/event-stream", stream.getBytes(StandardCharsets.UTF_8));
        assertEquals(new ServedUsage(1000, 850), s.usage());
        assertEquals(List.of("One", "Two"), s.reply());

        String whole = "{\"id\":\"m\",\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"Only\"}],"
                + "\"usage\":{\"input_tokens\":10,\"output_tokens\":2}}";
        AnswerReader m = feed(Endpoint.MESSAGES, "application/json", whole.getBytes(StandardCharsets.UTF_8), 7);
        assertEquals(new ServedUsage(10, ServedUsage.UNKNOWN), m.usage(), "no cache fields: cached is unknown");
        assertEquals(List.of("Only"), m.reply());

        String thinking =
                "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\"}}\n\n";
        AnswerReader t = feed(Endpoint.MESSAGES, "text/event-stream", thinking.getBytes(StandardCharsets.UTF_8));
        assertNull(t.reply());
        assertEquals("not_text", t.textProblem());
    }

    @Test
    void whatCannotBeReadIsUnknownNotZero() {
        AnswerReader none = feed(
                Endpoint.CHAT_COMPLETIONS,
                "application/json",
                "{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}".getBytes(StandardCharsets.UTF_8));
        assertEquals(ServedUsage.unknown(), none.usage());
        assertEquals(List.of("hi"), none.reply());

        byte[] big = ("{\"pad\":\"" + "x".repeat(AnswerReader.MAX_JSON_BYTES) + "\",\"usage\":{\"prompt_tokens\":5,"
                        + "\"prompt_tokens_details\":{\"cached_tokens\":5}}}")
                .getBytes(StandardCharsets.UTF_8);
        AnswerReader tooBig = feed(Endpoint.CHAT_COMPLETIONS, "application/json", big, 1000);
        assertEquals(new ServedUsage(5, 5), tooBig.usage(), "a body too long to keep: its usage read from its tail");
        assertNull(tooBig.reply());
        assertEquals("too_long", tooBig.textProblem());

        String longLine = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""
                + "y".repeat(AnswerReader.MAX_LINE_BYTES)
                + "\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"prompt_tokens_details\":"
                + "{\"cached_tokens\":3}}}\n\n";
        AnswerReader skipped = feed(
                Endpoint.CHAT_COMPLETIONS, "text/event-stream", longLine.getBytes(StandardCharsets.UTF_8), 4096, 8192);
        assertEquals(new ServedUsage(9, 3), skipped.usage(), "the usage after a skipped line is still read");
        assertEquals("too_long", skipped.textProblem());

        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", "gzip", true));
        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "text/html", null, true));
        assertNull(AnswerReader.create(null, "application/json", null, true));
        AnswerReader several = feed(
                Endpoint.CHAT_COMPLETIONS,
                "application/json",
                "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"a\"}},{\"index\":1,\"message\":{\"content\":\"b\"}}]}"
                        .getBytes(StandardCharsets.UTF_8));
        assertEquals("several_choices", several.textProblem());
    }

    @Test
    void eventsThatAreNotJsonAreCountedNotSwallowed() {
        String stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
                + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut\n\n"
                + "data: {\"usage\": nope}\n\n"
                + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":5}}}\n\n"
                + "data: [DONE]\n\n";
        AnswerReader o = feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream", stream.getBytes(StandardCharsets.UTF_8));
        assertEquals(2, o.parseFailures());
        assertEquals(new ServedUsage(10, 5), o.usage(), "the events that parse are still read");
        AnswerReader clean =
                feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream", OPENAI_STREAM.getBytes(StandardCharsets.UTF_8));
        assertEquals(0, clean.parseFailures(), "[DONE], comments and events are not failures");
        AnswerReader body = feed(
                Endpoint.CHAT_COMPLETIONS,
                "application/json",
                "{\"usage\":{\"prompt_tokens\":3".getBytes(StandardCharsets.UTF_8));
        assertEquals(1, body.parseFailures());
    }

    /** A chunk of an OpenAI-compatible server, its members in the order such servers write them. */
    private static String chunk(String delta, String tail) {
        return "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                + "\"model\":\"m\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,\"delta\":" + delta
                + ",\"logprobs\":null,\"finish_reason\":null}]" + tail + "}\n\n";
    }

    /**
     * Members are matched first against the name servers write next: in that order, in another, with names
     * the reader does not know between them, or with a name written with escapes, the same usage and text.
     */
    @Test
    void membersInAnyOrderReadTheSame() {
        String usual = chunk("{\"role\":\"assistant\",\"content\":\"\"}", "")
                + chunk("{\"content\":\"Hel\"}", "")
                + chunk("{\"content\":\"lo\"}", ",\"usage\":null")
                + "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                + "\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":70,\"completion_tokens\":2,"
                + "\"total_tokens\":72,\"prompt_tokens_details\":{\"cached_tokens\":64}}}\n\ndata: [DONE]\n\n";
        String other =
                "data: {\"choices\":[{\"finish_reason\":null,\"delta\":{\"content\":\"Hel\",\"role\":\"assistant\"},"
                        + "\"index\":0}],\"x\":{\"choices\":[{\"index\":1}]},\"created\":1}\n\n"
                        + "data: {\"usage\":{\"prompt_tokens_details\":{\"audio_tokens\":0,\"cached_tokens\":64},"
                        + "\"prompt_tokens\":70},\"choices\":[{\"\\u0064elta\":{\"content\":\"lo\"}}],\"id\":\"c\"}\n\n";
        for (String stream : new String[] {usual, other}) {
            AnswerReader o =
                    feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream", stream.getBytes(StandardCharsets.UTF_8));
            assertEquals(new ServedUsage(70, 64), o.usage());
            assertEquals(List.of("Hello"), o.reply());
            assertEquals(0, o.parseFailures());
        }
        String message =
                "{\"id\":\"c\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
                        + "\"message\":{\"role\":\"assistant\",\"content\":\"Hi\",\"refusal\":null},\"logprobs\":null,"
                        + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}";
        AnswerReader m = feed(Endpoint.CHAT_COMPLETIONS, "application/json", message.getBytes(StandardCharsets.UTF_8));
        assertEquals(new ServedUsage(5, ServedUsage.UNKNOWN), m.usage());
        assertEquals(List.of("Hi"), m.reply());
    }

    /**
     * When the text is not wanted (answer learning off, or the answer already unusable), only events that may
     * name {@code usage} are parsed: the same usage, cut anywhere, and a name written with escapes still found.
     */
    @Test
    void withoutTheTextOnlyEventsThatMayCarryUsageAreRead() {
        byte[] bytes = OPENAI_STREAM.getBytes(StandardCharsets.UTF_8);
        for (int cut = 0; cut <= bytes.length; cut++) {
            AnswerReader o = feed(false, Endpoint.CHAT_COMPLETIONS, "text/event-stream", bytes, cut);
            assertEquals(new ServedUsage(1200, 1024), o.usage(), "cut at " + cut);
            assertEquals("not_collected", o.textProblem());
        }
        String escaped = "data: {\"choices\":[],\"\\u0075sage\":{\"prompt_tokens\":8}}\n\n"
                + "data: {\"choices\":[],\"u\\u0073age\":{\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n";
        AnswerReader e =
                feed(false, Endpoint.CHAT_COMPLETIONS, "text/event-stream", escaped.getBytes(StandardCharsets.UTF_8));
        assertEquals(new ServedUsage(8, 4), e.usage());

        // a tool call makes the text unusable: what follows is read for its usage only, and a broken event
        // that cannot name usage is no longer parsed (nothing the observer wants was in it)
        String tools = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\n"
                + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut\n\n"
                + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n";
        AnswerReader t = feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream", tools.getBytes(StandardCharsets.UTF_8));
        assertEquals(new ServedUsage(3, ServedUsage.UNKNOWN), t.usage());
        assertEquals("not_text", t.textProblem());
        assertEquals(0, t.parseFailures());

        String anthropic =
                "data: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":10,"
                        + "\"cache_read_input_tokens\":90}}}\n\n"
                        + "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"
                        + "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n";
        AnswerReader a =
                feed(false, Endpoint.MESSAGES, "text/event-stream", anthropic.getBytes(StandardCharsets.UTF_8));
        assertEquals(new ServedUsage(100, 90), a.usage());
    }

    @Test
    void whatMayNameUsage() {
        for (String yes : new String[] {
            "{\"usage\":1}", "{\"a\":{\"usage\":null}}", "{\"\\u0075sage\":1}", "{\"x\":\"\\u00e9\"}", "\"usage\""
        }) {
            byte[] b = yes.getBytes(StandardCharsets.UTF_8);
            assertEquals(true, AnswerReader.mayNameUsage(b, 0, b.length), yes);
        }
        for (String no :
                new String[] {"{\"usages\":1}", "{\"x\":\"usage\\n\"}", "{\"usage", "usage\"", "{\"choices\":[]}", ""
                }) {
            byte[] b = no.getBytes(StandardCharsets.UTF_8);
            assertEquals(false, AnswerReader.mayNameUsage(b, 0, b.length), no);
        }
        byte[] framed = "\"usage\"".getBytes(StandardCharsets.UTF_8);
        assertEquals(false, AnswerReader.mayNameUsage(framed, 1, framed.length - 1), "only the bytes given");
        assertEquals(false, AnswerReader.mayNameUsage(framed, 0, framed.length - 1), "only the bytes given");
    }

    /**
     * One parser reads a streamed answer's events one after another: each event still reads as with a parser
     * of its own. An event cut short or with a bad token is a failure and the next event is read as usual;
     * what follows an event's object is ignored; an event longer than the parser's read buffer reads whole.
     */
    @Test
    void eachEventReadsAsWithAParserOfItsOwn() {
        SplittableRandom rnd = new SplittableRandom(11);
        for (int run = 0; run < 300; run++) {
            StringBuilder stream = new StringBuilder();
            StringBuilder text = new StringBuilder();
            int failures = 0;
            long prompt = ServedUsage.UNKNOWN;
            int events = 1 + rnd.nextInt(12);
            for (int i = 0; i < events; i++) {
                String word = "w" + i + (rnd.nextInt(4) == 0 ? "x".repeat(1500 + rnd.nextInt(1500)) : "") + " ";
                String delta = "{\"id\":\"c\",\"created\":1,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + word
                        + "\"},\"finish_reason\":null}]}";
                switch (rnd.nextInt(6)) {
                    case 0 -> { // cut short
                        int textEnd = delta.indexOf(word) + word.length(); // before the text's closing quote
                        stream.append("data: ")
                                .append(delta, 0, rnd.nextInt(1, textEnd))
                                .append("\n\n");
                        failures++;
                    }
                    case 1 -> { // a bad token before the text
                        stream.append("data: {\"id\": nope, \"choices\":[{\"delta\":{\"content\":\"lost\"}}]}\n\n");
                        failures++;
                    }
                    case 2 -> { // more after the object: ignored
                        stream.append("data: ")
                                .append(delta)
                                .append(rnd.nextBoolean() ? " }{\"usage\":{\"prompt_tokens\":1}}" : " \"x")
                                .append("\n\n");
                        text.append(word);
                    }
                    case 3 -> {
                        prompt = rnd.nextInt(1, 100_000);
                        stream.append("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":")
                                .append(prompt)
                                .append("}}\n\n");
                    }
                    default -> {
                        stream.append("data: ").append(delta).append("\n\n");
                        text.append(word);
                    }
                }
            }
            stream.append("data: [DONE]\n\n");
            byte[] bytes = stream.toString().getBytes(StandardCharsets.UTF_8);
            int a = rnd.nextInt(bytes.length + 1);
            AnswerReader o = feed(Endpoint.CHAT_COMPLETIONS, "text/event-stream", bytes, a);
            assertEquals(failures, o.parseFailures(), "run " + run);
            assertEquals(prompt, o.usage().promptTokens());
            if (text.length() == 0) {
                assertEquals("empty", o.textProblem());
            } else {
                assertEquals(List.of(text.toString()), o.reply());
            }
        }
    }
}
