package dev.cart.jmh.extract;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * Chat request bodies for the extraction and end-to-end benchmarks.
 *
 * <ul>
 *   <li>{@link #plain}: a system prompt and alternating turns of plain ASCII words, one small tool, fields
 *       in the order the OpenAI Python SDK writes them (messages before model).</li>
 *   <li>{@link #realistic}: what an agent sends: three tools with JSON-schema parameters; a system prompt
 *       with paragraphs ({@code \n}), quoted phrases ({@code \"}), code with tabs and backslashes;
 *       turns mixing English with accented Latin-1 text, CJK, typographic quotes and dashes (raw UTF-8)
 *       and the same characters as JSON unicode escapes, an emoji as a raw 4-byte sequence and as a
 *       surrogate-pair escape; an assistant turn with {@code tool_calls} and a {@code tool} result.</li>
 *   <li>{@link #bench}: the proxy benchmark's body, a long system message and a long user message of
 *       plain words.</li>
 * </ul>
 * Both are deterministic (fixed seeds) and about {@code size} bytes long.
 */
public final class Bodies {

    private static final String[] WORDS = ("the of and to in is that for it as with was on be by this are from at "
                    + "or an which have not but they his her their one all were there been has when who will more no if "
                    + "out so said what up its about into than them can only other new some could time these two may then")
            .split(" ");

    /** Runs of text, already JSON-escaped where needed: what realistic turns are made of. */
    private static final String[] PIECES = {
        "\\n\\n",
        "\\n- ",
        "\\\"quoted\\\" ",
        "caf\u00e9 ",
        "na\u00efve ",
        "\u00fcber ",
        "Stra\u00dfe ",
        "\u2014 ",
        "\u201csmart quotes\u201d ",
        "\u65e5\u672c\u8a9e\u306e\u6587 ",
        "\u4f60\u597d ",
        "\\u00e9t\\u00e9 ",
        "\\u2019s ",
        "\\ud83d\\ude00 ",
        "\ud83d\ude80 ",
        "C:\\\\Users\\\\me ",
        "\\tindented ",
        "x < 3 && y > 2 ",
        "{\\\"k\\\": [1, 2]} ",
        "Ma\u00f1ana ",
        "\u00bfqu\u00e9? ",
    };

    private Bodies() {}

    public static byte[] plain(int size) {
        SplittableRandom rnd = new SplittableRandom(42);
        StringBuilder sb = new StringBuilder("{\"messages\":[{\"role\":\"system\",\"content\":\"");
        words(sb, rnd, Math.min(2_000, size / 4), false);
        sb.append("\"}");
        int turn = 0;
        while (utf8Length(sb) < size - 600) {
            sb.append(",{\"role\":\"")
                    .append(turn++ % 2 == 0 ? "user" : "assistant")
                    .append("\",\"content\":\"");
            words(sb, rnd, Math.min(1_200, size - 600 - sb.length()), false);
            sb.append("\"}");
        }
        sb.append("],\"model\":\"llama-3.1-8b-instruct\",\"stream\":true,\"tools\":[{\"type\":\"function\","
                + "\"function\":{\"name\":\"lookup\",\"description\":\"Look up an order\",\"parameters\":{\"type\":"
                + "\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}}}],\"temperature\":0.2}");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A body of the proxy benchmark's shape ({@code ProxyBench.requests} in examples/bench): a system
     * message of half the body (one of 16, by {@code variant}), then a user message of plain words of its
     * own, {@code "stream": false}.
     */
    public static byte[] bench(int size, int variant) {
        SplittableRandom sys = new SplittableRandom(size * 31L + variant % 16);
        StringBuilder head = new StringBuilder("{\"model\":\"bench\",\"messages\":[{\"role\":\"system\",\"content\":\"")
                .append("You are assistant number ")
                .append(variant % 16)
                .append(". ");
        words(head, sys, size / 2 - 40, false);
        head.append("\"},{\"role\":\"user\",\"content\":\"");
        String tail = "\"}],\"stream\":false,\"max_tokens\":32}";
        StringBuilder sb = new StringBuilder(size + 64).append(head);
        words(sb, new SplittableRandom(variant), Math.max(16, size - head.length() - tail.length()), false);
        return sb.append(tail).toString().getBytes(StandardCharsets.UTF_8);
    }

    public static byte[] realistic(int size) {
        return realistic(size, -1);
    }

    /**
     * {@link #realistic(int)} whose first tool is named after {@code variant} (none when negative): bodies
     * of different variants have different tool lists, as requests of different agents do.
     */
    public static byte[] realistic(int size, int variant) {
        SplittableRandom rnd = new SplittableRandom(7);
        StringBuilder sb = new StringBuilder(size + 1024);
        sb.append("{\"model\":\"llama-3.1-8b-instruct\",\"stream\":false,\"temperature\":0.3,\"tools\":[");
        String[] tools = {variant < 0 ? "search_orders" : "search_orders_" + variant, "refund_order", "send_email"};
        for (int t = 0; t < tools.length; t++) {
            sb.append(t == 0 ? "" : ",")
                    .append("{\"type\":\"function\",\"function\":{\"name\":\"")
                    .append(tools[t])
                    .append("\",\"description\":\"")
                    .append(tools[t].replace('_', ' '))
                    .append(" for the customer; returns JSON.\\nFails when the \\\"id\\\" is unknown.\",")
                    .append("\"parameters\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\","
                            + "\"description\":\"order id, e.g. \\\"A-1234\\\"\"},\"reason\":{\"type\":\"string\","
                            + "\"enum\":[\"damaged\",\"late\",\"other\"]},\"limit\":{\"type\":\"integer\","
                            + "\"minimum\":1,\"maximum\":100}},\"required\":[\"id\"]}}}");
        }
        sb.append("],\"messages\":[{\"role\":\"system\",\"content\":\"You are a support agent for a shop in ")
                .append("M\u00fcnchen.\\n\\nRules:\\n1. Be brief.\\n2. Quote the \\\"order id\\\".\\n");
        words(sb, rnd, Math.min(2_000, size / 5), true);
        sb.append("\"}");
        int turn = 0;
        while (utf8Length(sb) < size - 700) {
            int left = size - 700 - utf8Length(sb);
            switch (turn++ % 4) {
                case 0, 2 -> {
                    sb.append(",{\"role\":\"user\",\"content\":\"");
                    words(sb, rnd, Math.min(900, left), true);
                    sb.append("\"}");
                }
                case 1 -> {
                    sb.append(",{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_")
                            .append(turn)
                            .append("\",\"type\":\"function\",\"function\":{\"name\":\"search_orders\",")
                            .append("\"arguments\":\"{\\\"id\\\":\\\"A-")
                            .append(1000 + turn)
                            .append("\\\"}\"}}]}")
                            .append(",{\"role\":\"tool\",\"tool_call_id\":\"call_")
                            .append(turn)
                            .append("\",\"content\":\"");
                    words(sb, rnd, Math.min(300, left), true);
                    sb.append("\"}");
                }
                default -> {
                    sb.append(",{\"role\":\"assistant\",\"content\":\"");
                    words(sb, rnd, Math.min(700, left), true);
                    sb.append("\"}");
                }
            }
        }
        sb.append(
                ",{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Danke \u2014 and the last one?\"}]}]}");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void words(StringBuilder sb, SplittableRandom rnd, int chars, boolean mixed) {
        int start = sb.length();
        while (sb.length() - start < chars) {
            if (mixed && rnd.nextInt(6) == 0) {
                sb.append(PIECES[rnd.nextInt(PIECES.length)]);
            } else {
                sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
            }
        }
    }

    private static int utf8Length(StringBuilder sb) {
        int n = 0;
        for (int i = 0; i < sb.length(); i++) {
            char c = sb.charAt(i);
            n += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3;
        }
        return n;
    }
}
