package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.core.CircuitBreaker;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The proxy end to end: real HTTP on loopback between a client, the proxy and fake replicas. */
class ProxyIntegrationTest {

    private static JsonNode json(String s) throws Exception {
        return Responses.JSON.readTree(s);
    }

    private static void assertError(HttpResponse<String> r, int status, String code) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
        JsonNode err = json(r.body()).get("error");
        assertNotNull(err, r.body());
        assertTrue(err.get("message").isTextual());
        assertTrue(err.get("type").isTextual());
        assertEquals(code, err.get("code").asText());
        assertTrue(err.has("param"));
    }

    @Test
    void chatCompletionIsRoutedAndRelayedWithItsLength() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            String body = chat("What is a radix tree?", false);
            HttpResponse<String> r = h.post("/v1/chat/completions", body);
            assertEquals(200, r.statusCode());
            assertTrue(r.body().contains("Hello from r"), r.body());
            assertEquals(
                    String.valueOf(r.body().getBytes(StandardCharsets.UTF_8).length),
                    r.headers().firstValue("content-length").orElse(null));
            assertTrue(r.headers().firstValue("transfer-encoding").isEmpty());
            ScriptedReplica served = h.replica(0).count() == 1 ? h.replica(0) : h.replica(1);
            assertEquals(1, served.count());
            assertEquals("/v1/chat/completions", served.last().path());
            assertEquals(body, served.last().bodyText());
            assertEquals(1, h.replica(0).count() + h.replica(1).count());
        }
    }

    @Test
    void completionsAndMessagesAreRouted() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            HttpResponse<String> c = h.post("/v1/completions", "{\"model\":\"fake\",\"prompt\":\"Once upon\"}");
            assertEquals(200, c.statusCode());
            assertTrue(c.body().contains("text_completion"));
            HttpResponse<String> m = h.post(
                    "/v1/messages",
                    "{\"model\":\"fake\",\"max_tokens\":10,\"system\":\"Be brief\","
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
            assertEquals(200, m.statusCode());
            assertTrue(m.body().contains("\"type\":\"message\""));
            assertEquals(2, h.replica(0).count());
        }
    }

    @Test
    void sameConversationFollowsItsCache() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(3, "")) {
            String prompt = "You are a helpful assistant. ".repeat(20);
            for (int i = 0; i < 5; i++) {
                assertEquals(
                        200, h.post("/v1/chat/completions", chat(prompt, false)).statusCode());
            }
            int max = Math.max(
                    h.replica(0).count(),
                    Math.max(h.replica(1).count(), h.replica(2).count()));
            assertEquals(5, max, "the repeated prompt always went to the replica that holds it");
        }
    }

    @Test
    void streamChunksReachTheClientWhileTheReplicaIsStillSending() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            CountDownLatch gate = new CountDownLatch(1);
            h.replica(0).gate = gate;
            HttpResponse<InputStream> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("hi", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, r.statusCode());
            assertEquals(
                    "text/event-stream", r.headers().firstValue("content-type").orElse(null));
            assertTrue(r.headers().firstValue("content-length").isEmpty());
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                String first = reader.readLine();
                assertTrue(first.startsWith("data: ") && first.contains("Hello"), first);
                assertEquals(1, gate.getCount(), "the replica is still holding the rest of the stream");
                gate.countDown();
                StringBuilder rest = new StringBuilder();
                for (String line; (line = reader.readLine()) != null; ) {
                    rest.append(line).append('\n');
                }
                assertTrue(rest.toString().contains("from r0 2"), rest.toString());
                assertTrue(rest.toString().trim().endsWith("data: [DONE]"), rest.toString());
            }
        }
    }

    @Test
    void routedPeerHeaderOnlyWhenEnabled() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            assertTrue(h.post("/v1/chat/completions", chat("a", false))
                    .headers()
                    .firstValue("x-routed-peer")
                    .isEmpty());
        }
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  add_routed_peer_header: true\n")) {
            assertEquals(
                    h.replica(0).url(),
                    h.post("/v1/chat/completions", chat("a", false))
                            .headers()
                            .firstValue("x-routed-peer")
                            .orElse(null));
        }
    }

    @Test
    void hopByHopHeadersAreStrippedBothWays() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            ScriptedReplica r = h.replica(0);
            r.extraResponseHeaders.add("Keep-Alive", "timeout=5");
            r.extraResponseHeaders.add("Proxy-Authenticate", "Basic");
            r.extraResponseHeaders.add("Trailer", "X-Checksum");
            r.extraResponseHeaders.add("Upgrade", "h2c");
            r.extraResponseHeaders.add("X-End-To-End", "kept");
            String body = chat("hop", false);
            String response = h.rawExchange("POST /v1/chat/completions HTTP/1.1\r\n"
                    + "Host: 127.0.0.1\r\n"
                    + "Connection: close, X-Hop\r\n"
                    + "X-Hop: per-connection\r\n"
                    + "Keep-Alive: timeout=5\r\n"
                    + "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
                    + "TE: trailers\r\n"
                    + "Upgrade: websocket\r\n"
                    + "X-Client: kept\r\n"
                    + "Content-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body);
            assertTrue(response.startsWith("HTTP/1.1 200"), response);
            var seen = r.last().headers();
            assertNull(seen.getFirst("X-Hop"));
            assertNull(seen.getFirst("Keep-Alive"));
            assertNull(seen.getFirst("Proxy-Authorization"));
            assertNull(seen.getFirst("Te"));
            assertNull(seen.getFirst("Upgrade"));
            assertEquals("kept", seen.getFirst("X-Client"));
            String head = response.substring(0, response.indexOf("\r\n\r\n")).toLowerCase();
            assertFalse(head.contains("keep-alive: timeout"), head);
            assertFalse(head.contains("proxy-authenticate"), head);
            assertFalse(head.contains("trailer:"), head);
            assertFalse(head.contains("upgrade:"), head);
            assertTrue(head.contains("x-end-to-end: kept"), head);
            assertFalse(head.contains("transfer-encoding") && head.contains("content-length"), head);
        }
    }

    @Test
    void decisionLogHasOneLinePerRequestAndNeverThePromptOrCredentials() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, "")) {
            String secretPrompt = "my-very-private-prompt-text";
            HttpResponse<String> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .header("Authorization", "Bearer sk-top-secret-key")
                            .header("x-api-key", "anthropic-secret-key")
                            .POST(HttpRequest.BodyPublishers.ofString(chat(secretPrompt, false)))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertEquals(
                    "Bearer sk-top-secret-key", h.replica(0).last().headers().getFirst("Authorization"));
            assertEquals("anthropic-secret-key", h.replica(0).last().headers().getFirst("X-api-key"));
            await("decision line", () -> !log.lines().isEmpty());
            assertEquals(1, log.lines().size(), log.lines().toString());
            String line = log.lines().get(0);
            assertTrue(
                    line.startsWith("decision endpoint=/v1/chat/completions method=POST model=fake stream=false "
                            + "reason=miss replica=" + h.replica(0).url() + " matched=0 key_len="),
                    line);
            assertTrue(line.contains(" status=200 "), line);
            assertTrue(line.contains(" retries=0 result=ok "), line);
            assertTrue(line.matches(".* decision_us=\\d+ .* upstream_ms=\\d+ .*"), line);
            assertFalse(line.contains(secretPrompt));
            assertFalse(line.contains("secret"));
        }
    }

    @Test
    void decisionLogCanBeTurnedOff() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, "proxy:\n  decision_log: false\n")) {
            assertEquals(200, h.post("/v1/chat/completions", chat("x", false)).statusCode());
            assertTrue(log.lines().isEmpty(), log.lines().toString());
        }
    }

    @Test
    void wrongMethodOnRoutedEndpointsIs405() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            for (String path : new String[] {"/v1/chat/completions", "/v1/completions", "/v1/messages"}) {
                HttpResponse<String> r = h.get(path);
                assertError(r, 405, "method_not_allowed");
                assertEquals("POST", r.headers().firstValue("allow").orElse(null));
            }
            assertError(h.post("/workers", "{}"), 405, "method_not_allowed");
            assertEquals(0, h.replica(0).count());
        }
    }

    @Test
    void badBodiesGet400WithTheOpenAiErrorShape() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            assertError(h.post("/v1/chat/completions", "{not json"), 400, "invalid_json");
            assertError(h.post("/v1/chat/completions", ""), 400, "empty_body");
            assertEquals(400, h.post("/v1/chat/completions", "[1,2]").statusCode());
            assertEquals(
                    400,
                    h.post("/v1/chat/completions", "{\"model\":\"fake\",\"messages\":\"hi\"}")
                            .statusCode());
            assertEquals(
                    400,
                    h.post("/v1/chat/completions", "{\"model\":\"fake\",\"stream\":\"yes\"," + "\"messages\":[]}")
                            .statusCode());
            assertEquals(
                    400,
                    h.post("/v1/completions", "{\"model\":\"fake\",\"prompt\":{\"a\":1}}")
                            .statusCode());
            assertEquals(
                    400,
                    h.post("/v1/messages", "{\"model\":\"fake\",\"messages\":[\"x\"]}")
                            .statusCode());
            assertEquals(0, h.replica(0).count(), "bad bodies never reach a replica");
        }
    }

    @Test
    void bodyLargerThanTheLimitIs413() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  max_body_bytes: 1024\n")) {
            assertError(h.post("/v1/chat/completions", chat("x".repeat(2000), false)), 413, "request_too_large");
            // without a declared length (chunked upload)
            HttpResponse<String> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(
                                    chat("y".repeat(3000), false).getBytes(StandardCharsets.UTF_8))))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertError(r, 413, "request_too_large");
            assertEquals(
                    200, h.post("/v1/chat/completions", chat("small", false)).statusCode());
            assertEquals(1, h.replica(0).count());
        }
    }

    @Test
    void healthFlipsWithProbesAndNoReplicaGives503WithRetryAfter() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "health:\n  failure_threshold: 2\n  success_threshold: 1\n")) {
            h.probe(); // /health is 503 until the first probe
            HttpResponse<String> ok = h.get("/health");
            assertEquals(200, ok.statusCode());
            assertEquals(2, json(ok.body()).get("healthy").asInt());

            h.replica(0).healthy = false;
            h.replica(1).healthy = false;
            h.probe();
            assertEquals(200, h.get("/health").statusCode(), "one failed probe is below the threshold");
            h.probe();
            HttpResponse<String> down = h.get("/health");
            assertEquals(503, down.statusCode());
            assertEquals(0, json(down.body()).get("healthy").asInt());

            HttpResponse<String> r = h.post("/v1/chat/completions", chat("anyone?", false));
            assertError(r, 503, "no_replica_available");
            assertEquals("1", r.headers().firstValue("retry-after").orElse(null));
            assertEquals(0, h.replica(0).count() + h.replica(1).count());

            h.replica(1).healthy = true;
            h.probe();
            HttpResponse<String> back = h.get("/health");
            assertEquals(200, back.statusCode());
            assertEquals(1, json(back.body()).get("healthy").asInt());
            HttpResponse<String> served = h.post("/v1/chat/completions", chat("anyone?", false));
            assertEquals(200, served.statusCode());
            assertTrue(served.body().contains("Hello from r1"));
        }
    }

    @Test
    void workersEndpointShowsEachReplica() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "max_load: 7", "load_penalty: 3")) {
            h.probe(); // a replica is "unknown", not healthy, until its first probe
            HttpResponse<String> r = h.get("/workers");
            assertEquals(200, r.statusCode());
            JsonNode root = json(r.body());
            assertEquals("cache_aware", root.get("policy").asText());
            JsonNode w = root.get("workers");
            assertEquals(2, w.size());
            assertEquals(h.replica(0).url(), w.get(0).get("url").asText());
            assertTrue(w.get(0).get("healthy").asBoolean());
            assertEquals("closed", w.get(0).get("circuit").asText());
            assertEquals(0, w.get(0).get("in_flight").asInt());
            assertEquals(7, w.get(0).get("max_load").asInt());
            assertEquals(0, w.get(0).get("load_penalty").asInt());
            assertEquals(256, w.get(1).get("max_load").asInt());
            assertEquals(3, w.get(1).get("load_penalty").asInt());
        }
    }

    @Test
    void workersShowsInFlightDuringAStream() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            CountDownLatch gate = new CountDownLatch(1);
            h.replica(0).gate = gate;
            HttpResponse<InputStream> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("hi", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = r.body()) {
                assertEquals(
                        1,
                        json(h.get("/workers").body())
                                .get("workers")
                                .get(0)
                                .get("in_flight")
                                .asInt());
                gate.countDown();
                in.readAllBytes();
            }
        }
    }

    @Test
    void modelsAreProxiedThenCachedForTenMinutes() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            HttpResponse<String> first = h.get("/v1/models");
            assertEquals(200, first.statusCode());
            assertTrue(first.body().contains("\"id\":\"fake\""));
            assertEquals(first.body(), h.get("/v1/models").body());
            assertEquals(1, h.replica(0).modelsCalls.get());
            h.clock.advance(Duration.ofMinutes(9));
            h.get("/v1/models");
            assertEquals(1, h.replica(0).modelsCalls.get());
            h.replica(0).healthy = false; // the cache answers even when replicas are gone (documented)
            h.clock.advance(Duration.ofMinutes(1));
            assertEquals(200, h.get("/v1/models").statusCode());
            assertEquals(2, h.replica(0).modelsCalls.get());
        }
    }

    @Test
    void otherPathsPassThroughUnchanged() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "");
                LogCapture log = new LogCapture("cart.decision")) {
            HttpResponse<String> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/files/abc%20d?purpose=x&y=1"))
                            .method("PUT", HttpRequest.BodyPublishers.ofString("payload-bytes"))
                            .header("X-Custom", "v")
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertEquals("PUT", r.headers().firstValue("x-echo-method").orElse(null));
            ScriptedReplica.Recorded rec = h.replica(0).last();
            assertEquals("PUT", rec.method());
            assertEquals("/v1/files/abc%20d", rec.path());
            assertEquals("purpose=x&y=1", rec.query());
            assertEquals("payload-bytes", rec.bodyText());
            assertEquals("v", rec.headers().getFirst("X-Custom"));
            HttpResponse<String> d = h.http.send(
                    HttpRequest.newBuilder(h.uri("/tokenize")).DELETE().build(), HttpResponse.BodyHandlers.ofString());
            assertEquals("echo r0 DELETE /tokenize ", d.body());
            HttpResponse<String> head = h.http.send(
                    HttpRequest.newBuilder(h.uri("/version"))
                            .method("HEAD", HttpRequest.BodyPublishers.noBody())
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, head.statusCode());
            assertEquals("", head.body());
            // logged under their own reason word, not as a routed request without prompt text (empty_text)
            ProxyHarness.await("three decision lines", () -> log.lines().size() >= 3);
            for (String line : log.lines()) {
                assertTrue(
                        line.contains(
                                " reason=pass_through replica=" + h.replica(0).url() + " "),
                        line);
            }
        }
    }

    @Test
    void absoluteFormTargetsAndOddHostsNeverReachAnotherHost() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "");
                ScriptedReplica elsewhere = ScriptedReplica.start("elsewhere")) {
            String response = h.rawExchange("GET http://127.0.0.1:" + elsewhere.port() + "/secret?a=1 HTTP/1.1\r\n"
                    + "Host: 127.0.0.1:" + elsewhere.port() + "\r\nConnection: close\r\n\r\n");
            assertTrue(response.startsWith("HTTP/1.1 200"), response);
            assertTrue(response.endsWith("echo r0 GET /secret?a=1 "), response);
            String odd = h.rawExchange(
                    "GET /x HTTP/1.1\r\nHost: 127.0.0.1:" + elsewhere.port() + "\r\nConnection: close\r\n\r\n");
            assertTrue(odd.endsWith("echo r0 GET /x "), odd);
            String weird = h.rawExchange(
                    "GET //127.0.0.1:" + elsewhere.port() + "/y HTTP/1.1\r\nHost: x\r\n" + "Connection: close\r\n\r\n");
            assertTrue(weird.endsWith("echo r0 GET /y "), weird);
            assertEquals(0, elsewhere.count());
            assertEquals(3, h.replica(0).count());
        }
    }

    @Test
    void aRetryExcludesTheReplicaThatFailed() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(2, "", "load_penalty: 0", "load_penalty: 50")) {
            h.replica(0).forcedStatus = 503;
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("retry me", false));
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(r.body().contains("Hello from r1"));
            assertEquals(1, h.replica(0).count());
            assertEquals(1, h.replica(1).count());
            assertEquals(1, h.sleeps.size());
            Duration d = h.sleeps.get(0);
            assertTrue(d.toMillis() >= 80 && d.toMillis() <= 120, "initial backoff 100ms +-20%: " + d);
            await("decision line", () -> !log.lines().isEmpty());
            assertTrue(
                    log.lines().get(0).contains("replica=" + h.replica(1).url()),
                    log.lines().get(0));
            assertTrue(log.lines().get(0).contains(" retries=1 "), log.lines().get(0));
        }
    }

    @Test
    void retriesBackOffExponentiallyAndTheLastAnswerIsRelayed() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(3, "proxy:\n  max_retries: 3\n  jitter_factor: 0\n")) {
            for (int i = 0; i < 3; i++) {
                h.replica(i).forcedStatus = 503;
            }
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("nobody", false));
            assertEquals(
                    List.of(1, 1, 1),
                    List.of(
                            h.replica(0).count(),
                            h.replica(1).count(),
                            h.replica(2).count()),
                    "each replica is tried once");
            assertEquals(List.of(Duration.ofMillis(100), Duration.ofMillis(200)), h.sleeps);
            assertEquals(503, r.statusCode(), r.body());
            assertTrue(r.body().contains("forced failure on r"), "the last replica's own answer: " + r.body());
        }
    }

    @Test
    void aConnectionErrorWithNobodyLeftToTryIs502() throws Exception {
        int deadPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            deadPort = s.getLocalPort();
        }
        ProxyHarness h = new ProxyHarness();
        h.proxy = h.startProxy(
                ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n" + "  - url: http://127.0.0.1:"
                        + deadPort + "\n"),
                h.options());
        try (h) {
            assertError(h.post("/v1/chat/completions", chat("anyone?", false)), 502, "upstream_unreachable");
            assertTrue(h.sleeps.isEmpty(), "no backoff when no other replica can take it: " + h.sleeps);
        }
    }

    @Test
    void theLastAttemptsAnswerIsRelayed() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  max_retries: 0\n")) {
            h.replica(0).forcedStatus = 503;
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("x", false));
            assertEquals(503, r.statusCode());
            assertTrue(r.body().contains("forced failure on r0"));
            assertTrue(h.sleeps.isEmpty());
        }
    }

    @Test
    void aConnectionErrorIsRetriedOnAnotherReplica() throws Exception {
        int deadPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            deadPort = s.getLocalPort();
        }
        ScriptedReplica live = ScriptedReplica.start("live");
        String yaml = "server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n"
                + "  - url: http://127.0.0.1:" + deadPort + "\n"
                + "  - url: " + live.url() + "\n    load_penalty: 50\n";
        ProxyHarness h = new ProxyHarness();
        h.replicas.add(live);
        h.proxy = h.startProxy(ConfigLoader.parse(yaml), h.options());
        try (h) {
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("dead first", false));
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(r.body().contains("Hello from live"));
            assertEquals(1, h.sleeps.size());
        }
    }

    @Test
    void circuitOpensHalfOpensAndClosesThroughTheProxy() throws Exception {
        String yaml = "circuit_breaker:\n  failure_threshold: 2\n  success_threshold: 1\n  timeout_secs: 30\n";
        try (ProxyHarness h = ProxyHarness.start(2, yaml, "load_penalty: 0", "load_penalty: 50")) {
            h.replica(0).forcedStatus = 500; // not retryable: relayed, but counted as a failure
            assertEquals(500, h.post("/v1/chat/completions", chat("one", false)).statusCode());
            await("first request finished", () -> h.member(0).inFlight() == 0);
            assertEquals(CircuitBreaker.State.CLOSED, h.member(0).circuitState());
            assertEquals(500, h.post("/v1/chat/completions", chat("two", false)).statusCode());
            await("circuit open", () -> h.member(0).circuitState() == CircuitBreaker.State.OPEN);
            assertEquals(
                    "open",
                    json(h.get("/workers").body())
                            .get("workers")
                            .get(0)
                            .get("circuit")
                            .asText());

            HttpResponse<String> r = h.post("/v1/chat/completions", chat("three", false));
            assertEquals(200, r.statusCode());
            assertTrue(r.body().contains("Hello from r1"), "open circuit: traffic goes elsewhere");
            assertEquals(2, h.replica(0).count());

            h.clock.advance(Duration.ofSeconds(30));
            assertEquals(CircuitBreaker.State.HALF_OPEN, h.member(0).circuitState());
            assertEquals(
                    "half_open",
                    json(h.get("/workers").body())
                            .get("workers")
                            .get(0)
                            .get("circuit")
                            .asText());
            h.replica(0).forcedStatus = 0;
            HttpResponse<String> trial = h.post("/v1/chat/completions", chat("four", false));
            assertTrue(trial.body().contains("Hello from r0"), "half-open admits a trial request");
            await("circuit closed", () -> h.member(0).circuitState() == CircuitBreaker.State.CLOSED);
            assertEquals(
                    "closed",
                    json(h.get("/workers").body())
                            .get("workers")
                            .get(0)
                            .get("circuit")
                            .asText());
        }
    }

    @Test
    void aClientThatDisconnectsMidStreamCancelsUpstreamAndReleasesTheLease() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            ScriptedReplica r = h.replica(0);
            CountDownLatch gate = new CountDownLatch(1);
            r.gate = gate;
            r.streamChunks = 100_000;
            String body = chat("long story", true);
            Socket s = h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body);
            try (s) {
                BufferedReader reader =
                        new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
                for (String line; (line = reader.readLine()) != null; ) {
                    if (line.contains("Hello")) {
                        break;
                    }
                }
                assertEquals(1, h.member(0).inFlight());
            }
            gate.countDown();
            await("lease released", () -> h.member(0).inFlight() == 0);
            await("upstream cancelled", () -> r.writeFailed);
            assertEquals(CircuitBreaker.State.CLOSED, h.member(0).circuitState());
        }
    }

    @Test
    void requestTimeoutBoundsTheWholeStream() throws Exception {
        // 3 s: the deadline must fall after the first chunk, which a loaded machine may take a second to deliver
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, "proxy:\n  request_timeout_secs: 3\n")) {
            h.replica(0).hangAfterFirstChunk = true;
            HttpResponse<InputStream> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("hang", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, r.statusCode());
            try (InputStream in = r.body()) {
                boolean truncated;
                try {
                    String all = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                    truncated = !all.contains("[DONE]");
                } catch (java.io.IOException e) {
                    truncated = true; // the proxy dropped the connection: the client sees a broken stream
                }
                assertTrue(truncated);
            }
            await("lease released", () -> h.member(0).inFlight() == 0);
            await("decision line", () -> !log.lines().isEmpty());
            assertTrue(
                    log.lines().get(0).contains("result=timeout_mid_body"),
                    log.lines().get(0));
        }
    }

    @Test
    void aReplicaThatNeverAnswersGives504() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  request_timeout_secs: 1\n")) {
            h.replica(0).hangBeforeHeaders = true;
            assertError(h.post("/v1/chat/completions", chat("hang", false)), 504, "upstream_timeout");
            assertTrue(h.sleeps.isEmpty(), "a timeout is not retried");
        }
    }

    @Test
    void errorsFromTheProxyNeverLeakInFlight() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "proxy:\n  max_retries: 1\n")) {
            h.replica(0).forcedStatus = 503;
            h.replica(1).forcedStatus = 503;
            for (int i = 0; i < 10; i++) {
                h.post("/v1/chat/completions", chat("p" + i, i % 2 == 0));
                h.post("/v1/chat/completions", "{bad");
            }
            h.assertNoInFlight();
            assertEquals(0, h.member(0).inFlight());
            assertEquals(0, h.member(1).inFlight());
        }
    }

    @Test
    void remoteMediaIsRefusedWithTheConfiguredStatus() throws Exception {
        String body = "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                + "\"text\":\"what is this\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
                + "\"https://example.com/cat.png\"}}]}]}";
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  remote_media_url_policy: 403\n")) {
            HttpResponse<String> r = h.post("/v1/chat/completions", body);
            assertError(r, 403, "remote_media_rejected");
            assertTrue(json(r.body()).get("error").get("param").asText().contains("image_url"), r.body());
            assertEquals(0, h.replica(0).count());
        }
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            assertEquals(200, h.post("/v1/chat/completions", body).statusCode(), "allowed by default");
        }
    }

    @Test
    void backgroundHealthChecksPollTheConfiguredEndpoint() throws Exception {
        ScriptedReplica r = ScriptedReplica.start("polled");
        r.healthy = false;
        String yaml = "server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: " + r.url() + "\n"
                + "health:\n  interval_secs: 1\n  timeout_secs: 1\n  failure_threshold: 1\n  success_threshold: 1\n";
        ProxyHarness h = new ProxyHarness();
        h.replicas.add(r);
        h.proxy = h.startProxy(ConfigLoader.parse(yaml), h.options().healthChecks(true));
        try (h) {
            await("first probe marks it unhealthy", () -> !h.member(0).isHealthy());
            assertEquals(503, h.get("/health").statusCode());
            r.healthy = true;
            await("a later probe brings it back", () -> h.member(0).isHealthy());
            await("/health says so", () -> {
                try {
                    return h.get("/health").statusCode() == 200;
                } catch (Exception e) {
                    return false;
                }
            });
            assertTrue(r.healthProbes.get() >= 2);
        }
    }
}
