package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.flow.FlowControl;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Flow control in the proxy ({@code flow.enabled}), over real HTTP against replicas that hold each request
 * until the test lets it go: a burst the replicas cannot take waits instead of getting 503s, band 0 goes
 * before band 2, a request that cannot make its deadline gets 429 with {@code Retry-After} at once, a client
 * that leaves while queued is out of line at once, and with the section off the proxy answers 503 as before.
 * The harness checks on close that no in-flight count leaked.
 */
class FlowProxyTest {

    private static final String ON = "flow:\n  enabled: true\n";

    private static HttpRequest chatRequest(ProxyHarness h, String content, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                .POST(HttpRequest.BodyPublishers.ofString(ProxyHarness.chat(content, false)))
                .header("Content-Type", "application/json");
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return b.build();
    }

    private static CompletableFuture<HttpResponse<String>> send(ProxyHarness h, String content, String... headers) {
        return h.http.sendAsync(chatRequest(h, content, headers), HttpResponse.BodyHandlers.ofString());
    }

    private static FlowControl flow(ProxyHarness h) {
        return h.proxy.routing().flow.control();
    }

    private static Semaphore hold(ScriptedReplica r) {
        Semaphore s = new Semaphore(0);
        r.permits = s;
        return s;
    }

    @Test
    void offTheProxyAnswers503AtOnceAsBefore() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "", "max_load: 1")) {
            Semaphore permits = hold(h.replica(0));
            assertNull(h.proxy.routing().flow);
            CompletableFuture<HttpResponse<String>> first = send(h, "first request");
            await("the first request at the replica", () -> h.replica(0).count() == 1);
            HttpResponse<String> second =
                    h.http.send(chatRequest(h, "second request"), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, second.statusCode(), second.body());
            assertEquals("1", second.headers().firstValue("Retry-After").orElse(null));
            assertEquals(
                    "no_replica_available",
                    Responses.JSON
                            .readTree(second.body())
                            .get("error")
                            .get("code")
                            .asText());
            permits.release();
            assertEquals(200, first.get().statusCode());
        }
    }

    @Test
    void theQueueAbsorbsABurstThatWouldHaveGot503s() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, ON, "max_load: 2")) {
            Semaphore permits = hold(h.replica(0));
            List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                burst.add(send(h, "burst request number " + i, "Authorization", "Bearer sk-secret-" + (i % 2)));
            }
            await("two at the replica, four waiting", () -> h.replica(0).count() == 2 && flow(h).depth("fake") == 4);
            permits.release(6);
            for (CompletableFuture<HttpResponse<String>> f : burst) {
                HttpResponse<String> r = f.get();
                assertEquals(200, r.statusCode(), r.body());
            }
            assertEquals(6, h.replica(0).count());
            await("six decision lines", () -> log.lines().size() >= 6);
            Pattern flowFields = Pattern.compile(".* result=ok .* queued_ms=\\d+ band=1 tenant=t-[0-9a-f]{16}$");
            for (String line : log.lines()) {
                assertTrue(flowFields.matcher(line).matches(), line);
                assertFalse(line.contains("sk-secret"), line);
            }
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(4.0, m.sum("cart_flow_queued_total"), m.dump("cart_flow_queued_total"));
            assertEquals(6.0, m.sum("cart_flow_admitted_total"), m.dump("cart_flow_admitted_total"));
            assertEquals(4.0, m.sum("cart_flow_wait_seconds_count"), m.dump("cart_flow_wait_seconds_count"));
            assertEquals(0.0, m.sum("cart_flow_queue_depth"), m.dump("cart_flow_queue_depth"));
            assertEquals(0.0, m.sum("cart_flow_shed_total"), m.dump("cart_flow_shed_total"));
        }
    }

    @Test
    void bandZeroIsAdmittedBeforeBandTwo() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, ON, "max_load: 1")) {
            Semaphore permits = hold(h.replica(0));
            CompletableFuture<HttpResponse<String>> first = send(h, "holds the only slot");
            await("the first request at the replica", () -> h.replica(0).count() == 1);
            CompletableFuture<HttpResponse<String>> low = send(h, "band two waits", "x-cart-priority", "2");
            await("band 2 waiting", () -> flow(h).depth("fake", 2) == 1);
            CompletableFuture<HttpResponse<String>> high = send(h, "band zero waits", "x-cart-priority", "0");
            await("band 0 waiting", () -> flow(h).depth("fake", 0) == 1);
            permits.release(); // the first answers, its slot frees: band 0 takes it though band 2 came first
            await("a second request at the replica", () -> h.replica(0).count() == 2);
            assertTrue(h.replica(0).requests.get(1).bodyText().contains("band zero waits"));
            assertEquals(1, flow(h).depth("fake", 2));
            permits.release(2);
            assertEquals(200, first.get().statusCode());
            assertEquals(200, high.get().statusCode());
            assertEquals(200, low.get().statusCode());
            assertTrue(h.replica(0).requests.get(2).bodyText().contains("band two waits"));
        }
    }

    @Test
    void aRequestThatCannotMakeItsDeadlineGets429WithRetryAfterAtOnce() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, ON, "max_load: 1")) {
            Semaphore permits = hold(h.replica(0));
            // one lease of at least 300 ms teaches the queue how long a slot is held
            CompletableFuture<HttpResponse<String>> slow = send(h, "a slow first answer");
            await("the slow request at the replica", () -> h.replica(0).count() == 1);
            Thread.sleep(300);
            permits.release();
            assertEquals(200, slow.get().statusCode());
            CompletableFuture<HttpResponse<String>> holder = send(h, "holds the only slot");
            await("the holder at the replica", () -> h.replica(0).count() == 2);

            HttpResponse<String> shed = h.http.send(
                    chatRequest(h, "must start within 20 ms", "x-cart-deadline-ms", "20"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(429, shed.statusCode(), shed.body());
            long retryAfter =
                    Long.parseLong(shed.headers().firstValue("Retry-After").orElseThrow());
            assertTrue(retryAfter >= 1 && retryAfter <= 60, "Retry-After " + retryAfter);
            JsonNode err = Responses.JSON.readTree(shed.body()).get("error");
            assertEquals("rate_limit_error", err.get("type").asText());
            assertEquals("deadline", err.get("code").asText());

            HttpResponse<String> anthropic = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/messages"))
                            .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"fake\",\"max_tokens\":8,"
                                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"))
                            .header("x-cart-deadline-ms", "20")
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(429, anthropic.statusCode(), anthropic.body());
            assertTrue(anthropic.headers().firstValue("Retry-After").isPresent());
            JsonNode a = Responses.JSON.readTree(anthropic.body());
            assertEquals("error", a.get("type").asText());
            assertEquals("rate_limit_error", a.get("error").get("type").asText());

            HttpResponse<String> bad = h.http.send(
                    chatRequest(h, "an unusable deadline", "x-cart-deadline-ms", "soon"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(400, bad.statusCode(), bad.body());
            assertFalse(bad.body().contains("soon"), bad.body());

            assertEquals(2, h.replica(0).count()); // neither shed request reached the replica
            permits.release();
            assertEquals(200, holder.get().statusCode());
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(2.0, m.sum("cart_flow_shed_total", "reason", "deadline"), m.dump("cart_flow_shed_total"));
        }
    }

    @Test
    void aClientThatLeavesWhileQueuedIsOutOfLineAtOnce() throws Exception {
        // a minute's wait: only the client's leaving takes the request out of line within the test's wait
        try (ProxyHarness h = ProxyHarness.start(1, ON + "  max_wait_ms: 60000\n", "max_load: 1")) {
            Semaphore permits = hold(h.replica(0));
            CompletableFuture<HttpResponse<String>> first = send(h, "holds the only slot");
            await("the first request at the replica", () -> h.replica(0).count() == 1);
            byte[] body = ProxyHarness.chat("leaves while it waits", false).getBytes(StandardCharsets.UTF_8);
            try (Socket s = new Socket("127.0.0.1", h.proxy.port())) {
                OutputStream out = s.getOutputStream();
                out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                + "Content-Length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.write(body);
                out.flush();
                await("the second request waiting", () -> flow(h).depth("fake") == 1);
            } // the client goes away
            await("the queue empty while the slot is still held", () -> flow(h).depth("fake") == 0);
            assertEquals(1, h.member(0).inFlight());
            permits.release(2);
            assertEquals(200, first.get().statusCode());
            HttpResponse<String> next =
                    h.http.send(chatRequest(h, "comes after"), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, next.statusCode());
            assertEquals(2, h.replica(0).count()); // the one that left never reached the replica
            assertFalse(
                    h.replica(0).requests.stream().anyMatch(r -> r.bodyText().contains("leaves while")));
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(1.0, m.sum("cart_flow_cancelled_total"), m.dump("cart_flow_cancelled_total"));
        }
    }

    @Test
    void aRequestWaitingAcrossAReloadIsStillServed() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, ON, "max_load: 1", "max_load: 1")) {
            Semaphore first = hold(h.replica(0));
            Semaphore second = hold(h.replica(1));
            CompletableFuture<HttpResponse<String>> a = send(h, "fills the first replica");
            CompletableFuture<HttpResponse<String>> b = send(h, "fills the second replica");
            await(
                    "both replicas busy",
                    () -> h.replica(0).count() + h.replica(1).count() == 2);
            FlowControl before = flow(h);
            CompletableFuture<HttpResponse<String>> c = send(h, "waits across the reload");
            await("a request waiting", () -> before.depth("fake") == 1);
            ProxyServer.ReloadResult r =
                    h.proxy.reload(ConfigLoader.parse(h.yaml(ON, "max_load: 1", "max_load: 1\n    load_penalty: 5")));
            assertTrue(r.changed(), r.message());
            assertTrue(flow(h) != before, "a reload builds a new queue");
            first.release(2);
            second.release(2);
            assertEquals(200, a.get().statusCode());
            assertEquals(200, b.get().statusCode());
            HttpResponse<String> waited = c.get();
            assertEquals(200, waited.statusCode(), waited.body());
            await("the old queue empty", () -> before.depth("fake") == 0);
        }
    }
}
