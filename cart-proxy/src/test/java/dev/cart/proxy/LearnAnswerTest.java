package dev.cart.proxy;

import static dev.cart.proxy.CacheFeedbackTest.fields;
import static dev.cart.proxy.CacheFeedbackTest.quote;
import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.extract.answer.AnswerReader;
import dev.cart.proxy.http.Responses;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Learning the answer: after a chat answer, the router knows the replica holds the conversation with the
 * reply, so the next turn matches its whole history, not just the part up to the last user message.
 */
class LearnAnswerTest {

    static final String SYSTEM = "You are a meticulous assistant. Cite your reasoning step by step. ".repeat(6);
    static final String REPLY = "Here is a long and careful answer that the replica generated for the user. ".repeat(8);

    /** The text of the assistant's reply in a response (non-streamed JSON or an SSE stream). */
    private static String replyOf(String body, boolean anthropic) throws Exception {
        if (!body.startsWith("{")) { // a stream: concatenate the text deltas
            StringBuilder b = new StringBuilder();
            for (String line : body.split("\n")) {
                if (!line.startsWith("data: {")) {
                    continue;
                }
                JsonNode n = Responses.JSON.readTree(line.substring(6));
                JsonNode t = anthropic
                        ? n.path("delta").path("text")
                        : n.path("choices").path(0).path("delta").path("content");
                if (t.isTextual()) {
                    b.append(t.asText());
                }
            }
            return b.toString();
        }
        JsonNode n = Responses.JSON.readTree(body);
        return anthropic
                ? n.path("content").path(0).path("text").asText()
                : n.path("choices").path(0).path("message").path("content").asText();
    }

    private static String openAi(boolean stream, String... turns) {
        StringBuilder b = new StringBuilder("{\"model\":\"fake\",\"stream\":" + stream + ",\"messages\":[{\"role\":"
                + "\"system\",\"content\":" + quote(SYSTEM) + "}");
        for (int i = 0; i < turns.length; i++) {
            b.append(",{\"role\":\"")
                    .append(i % 2 == 0 ? "user" : "assistant")
                    .append("\",\"content\":")
                    .append(quote(turns[i]))
                    .append('}');
        }
        return b.append("]}").toString();
    }

    private static String anthropic(boolean stream, String... turns) {
        StringBuilder b = new StringBuilder("{\"model\":\"fake\",\"max_tokens\":100,\"stream\":" + stream
                + ",\"system\":" + quote(SYSTEM) + ",\"messages\":[");
        for (int i = 0; i < turns.length; i++) {
            b.append(i == 0 ? "" : ",")
                    .append("{\"role\":\"")
                    .append(i % 2 == 0 ? "user" : "assistant")
                    .append("\",\"content\":[{\"type\":\"text\",\"text\":")
                    .append(quote(turns[i]))
                    .append("}]}");
        }
        return b.append("]}").toString();
    }

    /**
     * Runs turn 1 and turn 2 of a conversation and returns the decision fields of both: turn 2 carries
     * turn 1's reply as the client received it.
     */
    private static Map<String, String>[] twoTurns(String yaml, String path, boolean anthropic, boolean stream)
            throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(3, yaml)) {
            for (ScriptedReplica r : h.replicas) {
                r.reply = REPLY;
            }
            String q1 = "What is a radix tree and why would a router use one?";
            HttpResponse<String> first = h.post(path, anthropic ? anthropic(stream, q1) : openAi(stream, q1));
            assertEquals(200, first.statusCode(), first.body());
            String reply = replyOf(first.body(), anthropic);
            assertEquals(REPLY, reply);
            // The answer is learned once its last byte has reached the client, a moment after the client
            // has it: a real client's next turn comes seconds later; this one waits for the learning.
            if (!yaml.contains("learn_answer: false")) {
                await("the answer learned", () -> {
                    try {
                        return PromText.parse(h.get("/metrics").body())
                                        .sum("cart_learned_answers_total", "result", "learned")
                                >= 1;
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                });
            }
            String q2 = "And how does it compare with a hash table?";
            HttpResponse<String> second =
                    h.post(path, anthropic ? anthropic(stream, q1, reply, q2) : openAi(stream, q1, reply, q2));
            assertEquals(200, second.statusCode());
            await("two decision lines", () -> log.lines().size() >= 2);
            @SuppressWarnings({"unchecked", "rawtypes"})
            Map<String, String>[] out =
                    new Map[] {fields(log.lines().get(0)), fields(log.lines().get(1))};
            return out;
        }
    }

    private static void assertMatchesTheWholeHistory(Map<String, String>[] turns) {
        int firstKey = Integer.parseInt(turns[0].get("key_len"));
        int matched = Integer.parseInt(turns[1].get("matched"));
        int secondKey = Integer.parseInt(turns[1].get("key_len"));
        assertEquals("cache_hit", turns[1].get("reason"));
        assertEquals(turns[0].get("replica"), turns[1].get("replica"));
        // the history is turn 1's key plus the reply (about REPLY.length() more); only the new question and
        // the last partial block may be unmatched
        assertTrue(
                matched > firstKey + REPLY.length() - 2 * 64,
                "matched " + matched + " of " + secondKey + "; turn 1's key was " + firstKey);
        assertTrue(secondKey - matched < 64 + 60, "only the new question is unmatched: " + matched + "/" + secondKey);
    }

    @Test
    void aFollowUpTurnMatchesTheWholePreviousConversation() throws Exception {
        assertMatchesTheWholeHistory(twoTurns("", "/v1/chat/completions", false, false));
    }

    @Test
    void aStreamedAnswerIsLearnedFromItsDeltas() throws Exception {
        assertMatchesTheWholeHistory(twoTurns("", "/v1/chat/completions", false, true));
    }

    @Test
    void anthropicAnswersAreLearnedStreamedOrNot() throws Exception {
        assertMatchesTheWholeHistory(twoTurns("", "/v1/messages", true, false));
        assertMatchesTheWholeHistory(twoTurns("", "/v1/messages", true, true));
    }

    @Test
    void withLearnAnswerOffTheFollowUpMatchesOnlyUpToTheLastQuestion() throws Exception {
        Map<String, String>[] turns = twoTurns("cache:\n  learn_answer: false\n", "/v1/chat/completions", false, false);
        int firstKey = Integer.parseInt(turns[0].get("key_len"));
        assertTrue(Integer.parseInt(turns[1].get("matched")) <= firstKey, turns[1].toString());
    }

    @Test
    void toolCallsAndOverlongAnswersAreNotLearned() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            ScriptedReplica r = h.replica(0);
            r.toolCalls =
                    "[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]";
            assertEquals(
                    200,
                    h.post("/v1/chat/completions", openAi(false, "call a tool")).statusCode());
            r.toolCalls = null;
            r.reply = "x".repeat(AnswerReader.MAX_TEXT_CHARS + 1);
            assertEquals(
                    200,
                    h.post("/v1/chat/completions", openAi(true, "write a lot")).statusCode());
            r.reply = "short and plain";
            assertEquals(
                    200,
                    h.post("/v1/chat/completions", openAi(false, "say something"))
                            .statusCode());
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(
                    1,
                    m.value("cart_learned_answers_total", "result", "not_text"),
                    m.dump("cart_learned_answers_total"));
            assertEquals(1, m.value("cart_learned_answers_total", "result", "too_long"));
            assertEquals(1, m.value("cart_learned_answers_total", "result", "learned"));
        }
    }
}
