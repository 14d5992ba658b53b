package dev.cart.extract.answer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A streamed answer's events read by the template (the bytes around the text of an event already parsed whole)
 * give exactly what parsing every event whole gives: the same text, usage, failures and reason the text is
 * unavailable, for random streams of mutated events.
 */
class AnswerReaderTemplateTest {

    private static final String[] PIECES = {
        "the",
        " order",
        " was",
        " sent",
        "\\n",
        "\\\"",
        "\\\\",
        "\\/",
        "\\t",
        "\\u00e9",
        "\\u4e2d",
        "\\ud83d\\ude00",
        "\u00e9",
        "\u4e2d",
        "\ud83d\ude00",
        " ",
        "",
        "usage",
        "\\u0075sage",
        "}",
        "]",
        "{",
        ",",
        ":",
        "data: ",
        "\\\"}]}",
        "\\ud800",
        "\\udc00x"
    };
    /** Pieces that make the text no JSON string, or another structure. */
    private static final String[] BAD = {"\"", "\\x", "\\u12", "\u0001", "\t", "\\", "\",\"content\":\"", "\"}}]"};

    private static String text(SplittableRandom rnd) {
        StringBuilder t = new StringBuilder();
        int n = rnd.nextInt(5);
        for (int i = 0; i < n; i++) {
            t.append(PIECES[rnd.nextInt(PIECES.length)]);
        }
        if (rnd.nextInt(25) == 0) {
            t.insert(rnd.nextInt(t.length() + 1), BAD[rnd.nextInt(BAD.length)]);
        }
        return t.toString();
    }

    private static String openAi(SplittableRandom rnd, String id, int calm) {
        String text = text(rnd);
        int m = rnd.nextInt(24 * calm);
        String delta = switch (m) {
            case 1 -> "{\"role\":\"assistant\",\"content\":\"" + text + "\"}";
            case 9 -> "{\"content\":\"" + text + "\",\"content\":\"" + text(rnd) + "\"}";
            case 10 -> "{\"content\":null}";
            case 11 -> "{\"content\":" + rnd.nextInt(9) + "}";
            case 6 ->
                "{\"content\":\"" + text + "\",\"tool_calls\":" + (rnd.nextBoolean() ? "[]" : "[{\"index\":0}]") + "}";
            default -> "{\"content\":\"" + text + "\"}";
        };
        String choice = switch (m) {
            case 2 -> "{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,\"finish_reason\":\"stop\"}";
            case 7 -> "{\"finish_reason\":null,\"delta\":" + delta + ",\"index\":0}"; // reordered
            case 13 -> "{\"index\":1,\"delta\":" + delta + "}";
            default -> "{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,\"finish_reason\":null}";
        };
        String choices = switch (m) {
            case 5 -> "[" + choice + ",{\"index\":1,\"delta\":{\"content\":\"b\"}}]";
            case 8 -> "[]";
            default -> "[" + choice + "]";
        };
        String tail = switch (m) {
            case 3 ->
                ",\"usage\":{\"prompt_tokens\":" + rnd.nextInt(1, 1000) + ",\"prompt_tokens_details\":"
                        + "{\"cached_tokens\":" + rnd.nextInt(1000) + "}}";
            case 4 -> ",\"usage\":null";
            case 12 -> " ,\"x\":\"y\"";
            default -> "";
        };
        if (m == 0) {
            id = "chatcmpl-" + rnd.nextInt(3); // another id
        }
        return "{\"id\":\"" + id + "\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\","
                + "\"choices\":" + choices + tail + "}";
    }

    private static String anthropic(SplittableRandom rnd, int index, int calm) {
        String text = text(rnd);
        String delta = "{\"type\":\"text_delta\",\"text\":\"" + text + "\"}";
        String type = "content_block_delta";
        String idx = ",\"index\":" + index;
        String tail = "";
        switch (rnd.nextInt(16 * calm)) {
            case 0 -> idx = ",\"index\":" + rnd.nextInt(3);
            case 1 -> idx = "";
            case 2 -> delta = "{\"type\":\"input_json_delta\",\"partial_json\":\"" + text + "\"}";
            case 3 ->
                tail = ",\"usage\":{\"input_tokens\":" + rnd.nextInt(100) + ",\"cache_read_input_tokens\":"
                        + rnd.nextInt(100) + "}";
            case 4 -> {
                type = "content_block_start";
                delta = null;
                tail = ",\"content_block\":{\"type\":\"text\",\"text\":\"" + text + "\"}";
            }
            case 5 -> delta = "{\"text\":\"" + text + "\",\"type\":\"text_delta\"}";
            case 6 -> delta = "{\"type\":\"text_delta\",\"text\":\"" + text + "\",\"text\":\"" + text(rnd) + "\"}";
            default -> {}
        }
        return "{\"type\":\"" + type + "\"" + idx + (delta == null ? "" : ",\"delta\":" + delta) + tail + "}";
    }

    /** An event's bytes mutated: a byte changed, dropped or added, the event cut short, bytes after it. */
    private static byte[] mutate(SplittableRandom rnd, byte[] e, int calm) {
        if (rnd.nextInt(6 * calm) != 0 || e.length < 2) {
            return e;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int at = rnd.nextInt(1, e.length);
        switch (rnd.nextInt(5)) {
            case 0 -> {
                out.write(e, 0, at);
                out.write("\"\\{}[],:0 x\u00e9".getBytes(StandardCharsets.UTF_8)[rnd.nextInt(13)]);
                out.write(e, at + 1, e.length - at - 1);
            }
            case 1 -> {
                out.write(e, 0, at);
                out.write(e, at + 1, e.length - at - 1);
            }
            case 2 -> {
                out.write(e, 0, at);
                out.write(rnd.nextBoolean() ? (byte) 0xff : (byte) 0xc3);
                out.write(e, at, e.length - at);
            }
            case 3 -> out.write(e, 0, at);
            default -> {
                out.write(e, 0, e.length);
                out.writeBytes((rnd.nextBoolean() ? " }{\"usage\":{\"prompt_tokens\":1}}" : " \"x")
                        .getBytes(StandardCharsets.UTF_8));
            }
        }
        return out.toByteArray();
    }

    private static void feed(AnswerReader o, byte[] bytes, int cut) {
        o.accept(bytes, 0, cut);
        o.accept(bytes, cut, bytes.length - cut);
        o.finish();
    }

    @Test
    void byTheTemplateAsParsedWhole() {
        SplittableRandom rnd = new SplittableRandom(2026);
        long byTemplate = 0;
        long events = 0;
        for (int run = 0; run < 3000; run++) {
            boolean anthropic = run % 3 == 2;
            ByteArrayOutputStream stream = new ByteArrayOutputStream();
            int n = 1 + rnd.nextInt(40);
            int calm = 1 + rnd.nextInt(8); // how rarely an event is of another shape or mutated
            String id = "chatcmpl-" + rnd.nextInt(2);
            for (int i = 0; i < n; i++) {
                String event = anthropic ? anthropic(rnd, i / 10, calm) : openAi(rnd, id, calm);
                stream.writeBytes("data: ".getBytes(StandardCharsets.UTF_8));
                stream.writeBytes(mutate(rnd, event.getBytes(StandardCharsets.UTF_8), calm));
                stream.writeBytes((rnd.nextInt(8) == 0 ? "\r\n\r\n" : "\n\n").getBytes(StandardCharsets.UTF_8));
            }
            stream.writeBytes("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
            byte[] bytes = stream.toByteArray();
            int cut = rnd.nextInt(bytes.length + 1);
            Endpoint endpoint = anthropic ? Endpoint.MESSAGES : Endpoint.CHAT_COMPLETIONS;
            AnswerReader fast = AnswerReader.create(endpoint, "text/event-stream", null, true);
            AnswerReader whole = AnswerReader.create(endpoint, "text/event-stream", null, true)
                    .withoutTemplate();
            feed(fast, bytes, cut);
            feed(whole, bytes, cut);
            String where = "run " + run + ": " + new String(bytes, StandardCharsets.UTF_8);
            assertEquals(whole.reply(), fast.reply(), where);
            assertEquals(whole.textProblem(), fast.textProblem(), where);
            assertEquals(whole.usage(), fast.usage(), where);
            assertEquals(whole.parseFailures(), fast.parseFailures(), where);
            assertEquals(0, whole.templateReads());
            byTemplate += fast.templateReads();
            events += n;
        }
        assertTrue(byTemplate > events / 3, byTemplate + " of " + events + " events read by the template");
    }

    /** The bench's fake replica's stream: after the first event, each text event is read by the template. */
    @Test
    void aStreamOfLikeEventsIsReadByTheTemplate() {
        StringBuilder s = new StringBuilder();
        StringBuilder expected = new StringBuilder();
        String head = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                + "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":";
        s.append(head)
                .append("{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        for (int i = 0; i < 30; i++) {
            String word = i % 7 == 3 ? "\\u00e9\\\"\\n" : " w" + i;
            expected.append(i % 7 == 3 ? "\u00e9\"\n" : " w" + i);
            s.append(head)
                    .append("{\"content\":\"")
                    .append(word)
                    .append("\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        }
        s.append(head).append("{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n");
        s.append("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":"
                + "\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":250,\"prompt_tokens_details\":"
                + "{\"cached_tokens\":128}}}\n\ndata: [DONE]\n\n");
        byte[] bytes = s.toString().getBytes(StandardCharsets.UTF_8);
        AnswerReader o = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "text/event-stream", null, true);
        o.accept(bytes, 0, bytes.length);
        o.finish();
        assertEquals(List.of(expected.toString()), o.reply());
        assertEquals(new ServedUsage(250, 128), o.usage());
        assertEquals(29, o.templateReads(), "the second text event is the template of the rest");

        String a = "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"";
        String stream = a + "One\"}}\n\n" + a + " two\"}}\n\n" + a + " three\"}}\n\n"
                + "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\","
                + "\"partial_json\":\"x\"}}\n\n";
        AnswerReader m = AnswerReader.create(Endpoint.MESSAGES, "text/event-stream", null, true);
        byte[] mb = stream.substring(0, stream.lastIndexOf("data:")).getBytes(StandardCharsets.UTF_8);
        m.accept(mb, 0, mb.length);
        m.finish();
        assertEquals(List.of("One two three"), m.reply());
        assertEquals(2, m.templateReads());
        AnswerReader t = AnswerReader.create(Endpoint.MESSAGES, "text/event-stream", null, true);
        byte[] tb = stream.getBytes(StandardCharsets.UTF_8);
        t.accept(tb, 0, tb.length);
        t.finish();
        assertEquals("not_text", t.textProblem(), "an event of another shape is parsed whole");
    }
}
