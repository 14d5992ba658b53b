package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.http.Responses;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The replicas' reported cache usage reaches the router as responses pass: the statistic of predicted
 * against delivered tokens, the decision log, and the correction of a stale route.
 */
class CacheFeedbackTest {

    /** A prompt long enough to fill several 64-character blocks. */
    static final String PROMPT = "You are a careful assistant who answers in full sentences. ".repeat(12);

    /** The key=value pairs of a decision line. */
    static Map<String, String> fields(String line) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String part : line.split(" ")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                m.put(part.substring(0, eq), part.substring(eq + 1));
            }
        }
        return m;
    }

    static String chat(String content, boolean stream, boolean includeUsage) {
        return "{\"model\":\"fake\",\"stream\":" + stream
                + (includeUsage ? ",\"stream_options\":{\"include_usage\":true}" : "")
                + ",\"messages\":[{\"role\":\"user\",\"content\":" + quote(content) + "}]}";
    }

    static String quote(String s) {
        try {
            return Responses.JSON.writeValueAsString(s);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aStreamWithAUsageChunkIsRelayedUnchangedAndFeedsTheStatistic() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, "")) {
            ScriptedReplica r = h.replica(0);
            r.reply = "A reply with \"quotes\", a newline\nand unicode \u00e9\u4e2d, long enough to stream in pieces.";
            r.usagePrompt = 1000;
            for (int i = 0; i < 2; i++) {
                r.usageCached = i == 0 ? 600 : 999; // the second time nearly all of it, as predicted
                HttpResponse<InputStream> resp = h.http.send(
                        HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                .POST(HttpRequest.BodyPublishers.ofString(chat(PROMPT, true, true)))
                                .build(),
                        HttpResponse.BodyHandlers.ofInputStream());
                byte[] got;
                try (InputStream in = resp.body()) {
                    got = in.readAllBytes();
                }
                assertArrayEquals(r.lastStream, got, "the stream reaches the client byte for byte");
                assertTrue(new String(got, java.nio.charset.StandardCharsets.UTF_8).contains("\"usage\":{"));
                int lines = i + 1; // a decision line is written as its exchange ends: wait, so lines keep request order
                await("decision line " + lines, () -> log.lines().size() >= lines);
            }
            Map<String, String> first = fields(log.lines().get(0));
            Map<String, String> second = fields(log.lines().get(1));
            assertEquals("1000", first.get("prompt_tokens"), log.lines().get(0));
            assertEquals("600", first.get("cached"), log.lines().get(0));
            assertEquals("cache_hit", second.get("reason"), log.lines().get(1));

            PromText m = PromText.parse(h.get("/metrics").body());
            String id = r.url();
            assertEquals(2000, m.value("cart_cache_prompt_tokens_total", "replica", id));
            assertEquals(1599, m.value("cart_cache_delivered_tokens_total", "replica", id));
            assertEquals(2, m.value("cart_cache_feedback_total", "replica", id, "verdict", "ok"));
            // first a miss (nothing predicted), then a hit: the prediction is the matched share of the prompt
            double predicted = m.value("cart_cache_predicted_tokens_total", "replica", id);
            long matched = Long.parseLong(second.get("matched"));
            long keyLen = Long.parseLong(second.get("key_len"));
            assertEquals(
                    Math.round(matched * 1000.0 / keyLen), predicted, 1.0, m.dump("cart_cache_predicted_tokens_total"));
            assertTrue(predicted > 500, "a hit predicts most of the prompt: " + predicted);
        }
    }

    @Test
    void aReplicaThatEvictedBehindTheRoutersBackIsNoLongerPredictedAfterOneResponse() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(2, "cache:\n  learn_answer: false\n")) {
            for (ScriptedReplica r : h.replicas) {
                r.usagePrompt = 1000;
                r.usageCached = 0; // whatever the router believes, nothing was in the cache
            }
            String a = PROMPT + "First conversation: where is my parcel? ".repeat(4);
            String b = PROMPT + "Second conversation: can I change my address? ".repeat(4);
            // a decision line is written as its exchange ends: wait for each, so the lines keep request order
            assertEquals(
                    200, h.post("/v1/chat/completions", chat(a, false, false)).statusCode()); // miss
            await("a's decision line", () -> log.lines().size() >= 1);
            assertEquals(
                    200, h.post("/v1/chat/completions", chat(b, false, false)).statusCode()); // hit on the prompt
            await("b's decision line", () -> log.lines().size() >= 2);
            // the usage is read as the answer's last bytes pass; wait until the router has heard it
            await("b's stale verdict", () -> staleVerdicts(h) >= 1);
            assertEquals(
                    200, h.post("/v1/chat/completions", chat(a, false, false)).statusCode());
            await("three decision lines", () -> log.lines().size() >= 3);
            List<Map<String, String>> d =
                    log.lines().stream().map(CacheFeedbackTest::fields).toList();
            assertEquals(
                    List.of("miss", "cache_hit", "cache_hit"),
                    d.stream().map(x -> x.get("reason")).toList(),
                    String.join("\n", log.lines()));
            int shared = Integer.parseInt(d.get(1).get("matched"));
            // b was predicted to find the shared prompt cached and found nothing: the replica had lost that
            // block, and with it a's conversation beyond it. b's own prompt was just computed again, so it is
            // kept; a is now predicted only up to what b recomputed, not its whole conversation.
            int aAgain = Integer.parseInt(d.get(2).get("matched"));
            assertTrue(aAgain <= shared, "a's own branch was dropped: matched " + aAgain + " > shared " + shared);
            assertTrue(aAgain < Integer.parseInt(d.get(2).get("key_len")) - 64, "a no longer fully predicted");
            PromText m = PromText.parse(h.get("/metrics").body());
            // b and a's second request were both predicted hits the replica did not deliver
            assertEquals(
                    2, m.sum("cart_cache_feedback_total", "verdict", "stale"), m.dump("cart_cache_feedback_total"));
            assertEquals(0, m.sum("cart_cache_delivered_tokens_total"));
        }
    }

    private static double learned(ProxyHarness h, String result) {
        try {
            return PromText.parse(h.get("/metrics").body()).sum("cart_learned_answers_total", "result", result);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static double staleVerdicts(ProxyHarness h) {
        try {
            return PromText.parse(h.get("/metrics").body()).sum("cart_cache_feedback_total", "verdict", "stale");
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aStaleRoutesAnswerIsNotLearned() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            for (ScriptedReplica r : h.replicas) {
                r.usagePrompt = 1000;
                r.usageCached = 0;
            }
            for (int i = 0; i < 2; i++) {
                assertEquals(
                        200,
                        h.post("/v1/chat/completions", chat(PROMPT, false, false))
                                .statusCode());
            }
            // counted once the answer has passed, a moment after the client has it
            await("the second answer's verdict", () -> learned(h, "stale_route") + learned(h, "learned") >= 2);
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(
                    1,
                    m.value("cart_learned_answers_total", "result", "stale_route"),
                    "a stale route's answer is not learned: " + m.dump("cart_learned_answers_total"));
        }
    }

    @Test
    void withFeedbackOffTheStaleRouteIsKeptButStillCounted() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(2, "cache:\n  feedback: false\n")) {
            for (ScriptedReplica r : h.replicas) {
                r.usagePrompt = 1000;
                r.usageCached = 0;
            }
            for (int i = 0; i < 3; i++) {
                assertEquals(
                        200,
                        h.post("/v1/chat/completions", chat(PROMPT, false, false))
                                .statusCode());
                int lines = i + 1; // a decision line is written as its exchange ends: wait, so lines keep request order
                await("decision line " + lines, () -> log.lines().size() >= lines);
            }
            await("three decision lines", () -> log.lines().size() >= 3);
            List<String> reasons =
                    log.lines().stream().map(l -> fields(l).get("reason")).toList();
            assertEquals(List.of("miss", "cache_hit", "cache_hit"), reasons);
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(3, m.sum("cart_cache_feedback_total", "verdict", "ok"), "nothing is called stale");
            assertEquals(0, m.sum("cart_cache_delivered_tokens_total"));
            assertTrue(m.sum("cart_cache_predicted_tokens_total") > 1000, "the gap stays visible");
        }
    }

    @Test
    void anthropicUsageCountsCacheReadsAndCreationsAsPrompt() throws Exception {
        String body = "{\"model\":\"fake\",\"max_tokens\":10,\"system\":" + quote(PROMPT) + ",\"stream\":%s,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, "")) {
            h.replica(0).usagePrompt = 1000;
            h.replica(0).usageCached = 900;
            assertEquals(
                    200, h.post("/v1/messages", String.format(body, "false")).statusCode());
            assertEquals(
                    200, h.post("/v1/messages", String.format(body, "true")).statusCode());
            await("two decision lines", () -> log.lines().size() >= 2);
            for (String line : log.lines()) {
                assertEquals("1000", fields(line).get("prompt_tokens"), line);
                assertEquals("900", fields(line).get("cached"), line);
            }
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(1800, m.sum("cart_cache_delivered_tokens_total"));
        }
    }

    @Test
    void aMissingCachedFieldIsUnknownNotZero() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(2, "")) {
            for (ScriptedReplica r : h.replicas) {
                r.usagePrompt = 1000;
                r.usageCached = -1; // the replica does not report cache hits
            }
            for (int i = 0; i < 3; i++) {
                assertEquals(
                        200,
                        h.post("/v1/chat/completions", chat(PROMPT, false, false))
                                .statusCode());
                int lines = i + 1; // a decision line is written as its exchange ends: wait, so lines keep request order
                await("decision line " + lines, () -> log.lines().size() >= lines);
            }
            await("three decision lines", () -> log.lines().size() >= 3);
            List<String> reasons =
                    log.lines().stream().map(l -> fields(l).get("reason")).toList();
            assertEquals(List.of("miss", "cache_hit", "cache_hit"), reasons, "no correction from an unknown");
            for (String line : log.lines()) {
                assertEquals("1000", fields(line).get("prompt_tokens"), line);
                assertEquals("-", fields(line).get("cached"), line);
            }
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(0, m.sum("cart_cache_feedback_total"));
        }
    }
}
