package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** One boundary after the tools, after the system prompt and after every message, at the right offsets. */
class BoundariesTest {

    private static final String S = "\u0001";
    private static final String L = "\u0002";
    private static final String A = "\u001E";
    private static final String F = "\u001D";

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    /** Offsets where each of {@code pieces} ends, after the model marker. */
    private static int[] ends(String model, String... pieces) {
        int at = Extraction.modelMarker(model).length();
        int[] out = new int[pieces.length];
        for (int i = 0; i < pieces.length; i++) {
            at += pieces[i].length();
            out[i] = at;
        }
        return out;
    }

    private PromptKey key(Endpoint e, String json) throws ExtractionException {
        return extractor.extract(e, json.getBytes(StandardCharsets.UTF_8)).key();
    }

    @Test
    void chatOnePerMessage() throws Exception {
        PromptKey k = extractor
                .extract(Endpoint.CHAT_COMPLETIONS, Fixtures.bytes("chat-system-multiturn"))
                .key();
        assertArrayEquals(
                ends(
                        "gpt-4o",
                        S + "system" + L + "You are a helpful assistant.",
                        S + "user" + L + "Who won the world series in 2020?",
                        S + "assistant" + L + "The Los Angeles Dodgers won the World Series in 2020.",
                        S + "user" + L + "Where was it played?"),
                k.boundaries());
        assertEquals(k.length(), k.boundary(k.boundaryCount() - 1));
    }

    @Test
    void chatToolsThenMessages() throws Exception {
        String json = "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
                + "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
                + "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"}]}";
        assertArrayEquals(
                ends(
                        "m",
                        S + "tools" + L + "{\"function\":{\"name\":\"f\"},\"type\":\"function\"}",
                        S + "user" + L + "hi",
                        S + "assistant" + L + A + "tool_calls" + F
                                + "[{\"function\":{\"arguments\":\"{}\",\"name\":\"f\"},\"id\":\"c1\",\"type\":\"function\"}]",
                        S + "tool" + L + "ok" + A + "tool_call_id" + F + "c1"),
                key(Endpoint.CHAT_COMPLETIONS, json).boundaries());
    }

    @Test
    void anthropicToolsSystemMessages() throws Exception {
        String json = "{\"model\":\"c\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"q\"},"
                + "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}],"
                + "\"system\":[{\"type\":\"text\",\"text\":\"sys\"}],\"tools\":[{\"name\":\"t\",\"input_schema\":{}}]}";
        assertArrayEquals(
                ends(
                        "c",
                        S + "tools" + L + "{\"input_schema\":{},\"name\":\"t\"}",
                        S + "system" + L + "sys",
                        S + "user" + L + "q",
                        S + "assistant" + L + "a"),
                key(Endpoint.MESSAGES, json).boundaries());
    }

    @Test
    void completionsBetweenArrayElementsOnly() throws Exception {
        assertEquals(
                0,
                key(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"one string\"}")
                        .boundaryCount());
        assertEquals(
                0,
                key(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":[1,2,3]}")
                        .boundaryCount());
        assertArrayEquals(
                ends("m", "ab", "\u001Fcde", "\u001F\u001Btokens\u001D5,"),
                key(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":[\"ab\",\"cde\",[5]]}")
                        .boundaries());
    }

    @Test
    void boundariesMatchTheKeyTextForEveryFixture() throws Exception {
        for (String f : Fixtures.all()) {
            PromptKey k =
                    extractor.extract(Fixtures.endpoint(f), Fixtures.bytes(f)).key();
            String text = extractor.keyText(Fixtures.endpoint(f), Fixtures.bytes(f));
            List<Integer> marks = new ArrayList<>();
            int len = 0;
            for (char c : text.toCharArray()) {
                if (c == Extraction.BOUNDARY_MARK) {
                    marks.add(len);
                } else {
                    len++;
                }
            }
            assertEquals(len, k.length(), f);
            assertArrayEquals(marks.stream().mapToInt(Integer::intValue).toArray(), k.boundaries(), f);
        }
    }

    @Test
    void boundaryCountPerFixture() throws Exception {
        // messages + (tools ? 1 : 0) + (system ? 1 : 0)
        String[][] expected = {
            {"chat-system-multiturn", "4"}, {"chat-tools", "7"}, {"chat-legacy-functions", "4"},
            {"chat-file", "3"}, {"messages-basic", "4"}, {"messages-system-blocks", "2"},
            {"messages-tools", "6"}, {"messages-thinking", "3"}, {"completions-array", "2"},
        };
        for (String[] e : expected) {
            PromptKey k = extractor
                    .extract(Fixtures.endpoint(e[0]), Fixtures.bytes(e[0]))
                    .key();
            assertEquals(Integer.parseInt(e[1]), k.boundaryCount(), e[0]);
        }
    }
}
