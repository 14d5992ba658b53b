package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.CircuitBreaker;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** One test per finding of the proxy review; each failed before its fix. */
class ReviewFindingsTest {

    private static final String MEDIA_BODY =
            "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                    + "\"text\",\"text\":\"what is this\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
                    + "\"https://example.com/cat.png\"}}]}]}";

    private static String post(String target, String body) {
        return "POST " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    /** 1: an encoded spelling of a routed endpoint is vetted and routed like the plain one. */
    @Test
    void encodedSpellingsOfRoutedEndpointsAreVettedAndRouted() throws Exception {
        List<String> spellings = List.of(
                "/v1/chat/completion%73",
                "/v1/chat%2Fcompletions",
                "/%761/chat/completions",
                "/v1/./chat/completions",
                "/v1/x/../chat/completions",
                "/v1/chat/completions/");
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  remote_media_url_policy: 403\n")) {
            for (String target : spellings) {
                String refused = h.rawExchange(post(target, MEDIA_BODY));
                assertEquals(403, HttpBadInputTest.status(refused), target + " -> " + refused);
                assertEquals(0, h.replica(0).count(), target + " reached the replica unvetted");
            }
            for (String target : spellings) {
                String ok = h.rawExchange(post(target, chat("hello", false)));
                assertEquals(200, HttpBadInputTest.status(ok), target + " -> " + ok);
                assertEquals("/v1/chat/completions", h.replica(0).last().path(), target);
            }
            String badJson = h.rawExchange(post("/v1/chat/completion%73", "{not json"));
            assertEquals(400, HttpBadInputTest.status(badJson), badJson);
            assertEquals(spellings.size(), h.replica(0).count());
        }
    }

    /** 2: a client that stops reading does not keep the replica's slot past the deadline. */
    @Test
    void aClientThatStopsReadingLosesTheReplicaSlotAtTheDeadline() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  request_timeout_secs: 3\n")) {
            ScriptedReplica r = h.replica(0);
            r.streamChunks = 2_000_000; // far more than the socket buffers between the proxy and the client hold
            String body = chat("a long story", true);
            try (Socket s = h.raw(post("/v1/chat/completions", body).replace("Connection: close\r\n", ""))) {
                InputStream in = s.getInputStream();
                byte[] head = new byte[64];
                assertTrue(in.read(head) > 0, "the response started");
                // the client reads nothing more and keeps the connection open. The lease is closed by the
                // deadline as cancelled (its body was flowing): waited for as that end state, not raced
                // against the 3 s deadline as an in-flight count of 1 in between
                await(
                        "the lease is closed as cancelled at the deadline",
                        () -> PromText.parse(scrape(h)).sum("cart_upstream_requests_total", "outcome", "cancelled")
                                == 1);
                assertEquals(0, h.member(0).inFlight(), "the replica's slot is free while the client holds on");
                await("the upstream request is cancelled", () -> r.writeFailed);
                assertTrue(s.isConnected() && !s.isClosed());
            }
            assertEquals(CircuitBreaker.State.CLOSED, h.member(0).circuitState());
        }
    }

    /** 3: a declared Content-Length reserves no heap before the bytes arrive. */
    @Test
    void idleConnectionsDeclaringHugeBodiesReserveNoHeap() throws Exception {
        int limit = 32 * 1024 * 1024;
        int connections = 8;
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  max_body_bytes: " + limit + "\n")) {
            MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
            System.gc();
            long before = mem.getHeapMemoryUsage().getUsed();
            List<Socket> open = new ArrayList<>();
            try {
                for (int i = 0; i < connections; i++) {
                    open.add(h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            + "Content-Length: " + (limit - 1) + "\r\n\r\n{\"model\":"));
                }
                // the first bytes of every body have been read (a request takes no slot before its body is whole)
                await("every request is being read", () -> h.proxy.bodyBudget().held() == connections * 9L);
                System.gc();
                long grown = mem.getHeapMemoryUsage().getUsed() - before;
                assertTrue(
                        grown < 64L * 1024 * 1024,
                        "heap grew by " + grown / (1024 * 1024) + " MiB for " + connections + " idle uploads");
            } finally {
                for (Socket s : open) {
                    s.close();
                }
            }
            assertEquals(0, h.replica(0).count());
        }
    }

    private static String scrape(ProxyHarness h) {
        try {
            return h.get("/metrics").body();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** 4a: with no other replica to try, the replica's own retryable answer is relayed, headers and all. */
    @Test
    void aRetryableAnswerFromTheLastCandidateIsRelayed() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            h.replica(0).forcedStatus = 503;
            h.replica(0).extraResponseHeaders.add("Retry-After", "7");
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("busy?", false));
            assertEquals(503, r.statusCode(), r.body());
            assertTrue(r.body().contains("forced failure on r0"), r.body());
            assertEquals("7", r.headers().firstValue("retry-after").orElse(null));
            assertTrue(h.sleeps.isEmpty(), "no backoff when nobody else can take it: " + h.sleeps);
            assertEquals(1, h.replica(0).count());
        }
    }

    /** 4b: a backoff that would pass the deadline is not taken; the answer in hand is relayed. */
    @Test
    void aBackoffNeverRunsPastTheDeadline() throws Exception {
        String yaml = "proxy:\n  request_timeout_secs: 1\n  initial_backoff_ms: 5000\n  jitter_factor: 0\n";
        try (ProxyHarness h = ProxyHarness.start(2, yaml)) {
            h.replica(0).forcedStatus = 503;
            h.replica(1).forcedStatus = 503;
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("later", false));
            assertEquals(503, r.statusCode(), r.body());
            assertTrue(r.body().contains("forced failure"), r.body());
            assertTrue(h.sleeps.isEmpty(), "slept past the deadline: " + h.sleeps);
            assertEquals(1, h.replica(0).count() + h.replica(1).count());
        }
    }

    /** 5: the deadline ending a stream that was flowing says nothing against the replica. */
    @Test
    void theDeadlineDuringAFlowingStreamDoesNotCountAgainstTheReplica() throws Exception {
        // the deadline must fall after the first chunk has reached the client: 3 s, not 1, so that a loaded
        // machine has time to deliver it (with 1 s, a build on a loaded machine got a 504 before the stream started)
        String yaml = "proxy:\n  request_timeout_secs: 3\ncircuit_breaker:\n  failure_threshold: 1\n";
        try (ProxyHarness h = ProxyHarness.start(1, yaml)) {
            h.replica(0).hangAfterFirstChunk = true;
            HttpResponse<InputStream> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("slow and steady", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, r.statusCode());
            try (InputStream in = r.body()) {
                in.readAllBytes();
            } catch (java.io.IOException expected) {
                // the proxy drops the connection at the deadline
            }
            await("lease released", () -> h.member(0).inFlight() == 0);
            assertEquals(CircuitBreaker.State.CLOSED, h.member(0).circuitState());
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(
                    1,
                    m.sum("cart_upstream_requests_total", "outcome", "cancelled"),
                    m.dump("cart_upstream_requests_total"));
            assertEquals(0, m.sum("cart_upstream_requests_total", "outcome", "failure"));
        }
    }

    /**
     * 6: an authenticated /v1/models answer is never served to another caller. The pool's union is merged
     * from uncompressed answers (the replicas are asked with {@code Accept-Encoding: identity}) and sent
     * as JSON; each caller's credential reaches the replicas.
     */
    @Test
    void modelsCacheIsKeyedByCredential() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            ScriptedReplica r = h.replica(0);
            HttpRequest.Builder withKey = HttpRequest.newBuilder(h.uri("/v1/models"))
                    .header("Authorization", "Bearer key-a")
                    .header("Accept-Encoding", "br")
                    .GET();
            HttpResponse<String> a = h.http.send(withKey.build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, a.statusCode());
            assertEquals(1, r.modelsCalls.get());
            assertEquals("Bearer key-a", r.last().headers().getFirst("Authorization"));
            assertEquals("identity", r.last().headers().getFirst("Accept-Encoding"));
            HttpResponse<String> anonymous = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/models"))
                            .header("Accept-Encoding", "br")
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, anonymous.statusCode());
            assertEquals(2, r.modelsCalls.get(), "an answer fetched with a credential went to a caller without one");
            assertEquals(null, r.last().headers().getFirst("Authorization"));
            HttpResponse<String> again = h.http.send(withKey.build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(2, r.modelsCalls.get(), "the same credential is answered from the cache");
            assertEquals(a.body(), again.body());
            assertEquals(null, again.headers().firstValue("content-encoding").orElse(null));
            h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/models"))
                            .header("Authorization", "Bearer key-b")
                            .header("Accept-Encoding", "br")
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(3, r.modelsCalls.get(), "another credential is another entry");
        }
    }

    /** 6b: a replica that encodes its /v1/models answer anyway is relayed as it is, with its encoding. */
    @Test
    void anEncodedModelsAnswerIsRelayedWithItsEncodingAndNotCached() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            ScriptedReplica r = h.replica(0);
            r.extraResponseHeaders.add("Content-Encoding", "br");
            HttpResponse<String> a = h.get("/v1/models");
            assertEquals(200, a.statusCode());
            assertEquals("br", a.headers().firstValue("content-encoding").orElse(null));
            h.get("/v1/models");
            assertEquals(2, r.modelsCalls.get(), "a relayed answer is not cached");
        }
    }

    /** 7: the proxy's own endpoints answer while every request thread is busy with a stream. */
    @Test
    void ownEndpointsAnswerWhileEveryRequestThreadHoldsAStream() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "server:\n  max_threads: 2\n")) {
            h.probe(); // /health is 503 until the first probe
            CountDownLatch gate = new CountDownLatch(1);
            h.replica(0).gate = gate;
            List<HttpResponse<InputStream>> streams = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    streams.add(h.http.send(
                            HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                    .POST(HttpRequest.BodyPublishers.ofString(chat("hold " + i, true)))
                                    .build(),
                            HttpResponse.BodyHandlers.ofInputStream()));
                }
                for (String path : List.of("/health", "/workers", "/metrics")) {
                    HttpResponse<String> r = h.http.send(
                            HttpRequest.newBuilder(h.uri(path))
                                    .timeout(Duration.ofSeconds(15))
                                    .GET()
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, r.statusCode(), path);
                }
            } finally {
                gate.countDown();
                for (HttpResponse<InputStream> s : streams) {
                    try (InputStream in = s.body()) {
                        in.readAllBytes();
                    }
                }
            }
        }
    }
}
