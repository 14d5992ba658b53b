package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.CircuitBreaker;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.SimulatedReplicaServer.Fault;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replica faults on loopback, each ending with nothing lost: every in-flight count back to 0 and the tree's
 * counters equal to a recount (checked by {@link ProxyHarness#close()}).
 */
class FaultTest {

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private SimulatedReplicaServer sim(String name, Fault fault, double speedup, int outputTokens) throws IOException {
        SimulatedReplicaServer s = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .name(name)
                .port(0)
                .model("fake") // the model ProxyHarness.chat names: the health checks learn it from /v1/models
                .speedup(speedup)
                .outputTokens(outputTokens)
                .fault(fault));
        open.add(s);
        return s;
    }

    /** A harness over arbitrary worker URLs (the first gets load_penalty 0, the others 50). */
    private ProxyHarness harness(String yaml, String... urls) throws Exception {
        StringBuilder b = new StringBuilder(yaml).append("\nserver:\n  host: 127.0.0.1\n  port: 0\nworkers:\n");
        for (int i = 0; i < urls.length; i++) {
            b.append("  - url: ")
                    .append(urls[i])
                    .append("\n    load_penalty: ")
                    .append(i == 0 ? 0 : 50)
                    .append('\n');
        }
        ProxyHarness h = new ProxyHarness();
        h.proxy = h.startProxy(ConfigLoader.parse(b.toString()), h.options());
        h.seenSets.add(h.proxy.routing().replicas);
        return h;
    }

    private static dev.cart.core.ManagedReplicaSet.Member first(ProxyHarness h) {
        return h.proxy.routing().replicas.replicas().get(0);
    }

    private static double upstreamFailures(ProxyHarness h) {
        try {
            return PromText.parse(h.get("/metrics").body()).sum("cart_upstream_requests_total", "outcome", "failure");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String streamBody(ProxyHarness h, String body) throws Exception {
        HttpResponse<InputStream> r = h.http.send(
                HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = r.body()) {
            return r.statusCode() + " " + new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return r.statusCode() + " <broken: " + e.getClass().getSimpleName() + ">";
        }
    }

    @Test
    void aReplicaKilledMidStreamEndsTheClientStreamReleasesTheLeaseAndCountsAFailure() throws Exception {
        SimulatedReplicaServer resetting = sim("resetting", Fault.RESET, 200, 16);
        try (ProxyHarness h = harness("", resetting.baseUri().toString())) {
            String got = streamBody(h, chat("tell me a story", true));
            assertFalse(got.contains("[DONE]"), "the client never sees a complete stream: " + got);
            h.assertNoInFlight();
            // a request's events are counted when its exchange ends, which follows the lease's release: wait for it
            await("the broken stream counted as a failure", () -> upstreamFailures(h) >= 1);
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(
                    1,
                    m.sum("cart_upstream_requests_total", "outcome", "failure"),
                    m.dump("cart_upstream_requests_total"));
        }
        ScriptedReplica killed = ScriptedReplica.start("killed");
        killed.hangAfterFirstChunk = true;
        try (ProxyHarness h = harness("", killed.url())) {
            HttpResponse<InputStream> r = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("x", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, r.statusCode());
            killed.firstChunkSent.await(20, TimeUnit.SECONDS);
            killed.kill(); // the replica process dies with the stream open
            boolean complete;
            try (InputStream in = r.body()) {
                complete = new String(in.readAllBytes(), StandardCharsets.UTF_8).contains("[DONE]");
            } catch (IOException e) {
                complete = false;
            }
            assertFalse(complete);
            h.assertNoInFlight();
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(1, m.sum("cart_upstream_requests_total", "outcome", "failure"));
        }
    }

    @Test
    void aBlackholedReplicaFailsWithinTheConnectTimeoutAndTheRetryGoesElsewhere() throws Exception {
        // a listening socket that never accepts, its backlog full: connects to it hang until they time out
        ServerSocket blackhole = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        open.add(blackhole);
        List<Socket> fillers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), blackhole.getLocalPort()), 500);
                fillers.add(s);
                open.add(s);
            } catch (IOException full) {
                s.close();
                break;
            }
        }
        assertTrue(fillers.size() < 4, "the backlog filled up");
        SimulatedReplicaServer good = sim("good", Fault.NONE, 200, 8);
        String dead = "http://127.0.0.1:" + blackhole.getLocalPort();
        try (ProxyHarness h = harness(
                "proxy:\n  connect_timeout_secs: 1\n", dead, good.baseUri().toString())) {
            String got = streamBody(h, chat("hello", true));
            assertTrue(got.startsWith("200 ") && got.contains("[DONE]"), got);
            assertEquals(1, good.requestCount());
            assertEquals(1, h.sleeps.size(), "one retry");
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(1, m.value("cart_retries_total", "replica", dead, "cause", "connect_error"));
        }
    }

    @Test
    void aReplicaFlapping5xxOpensItsCircuitMovesTrafficAndClosesAfterRecovery() throws Exception {
        SimulatedReplicaServer flaky = sim("flaky", Fault.ERROR_500, 200, 8);
        SimulatedReplicaServer steady = sim("steady", Fault.NONE, 200, 8);
        String yaml = "circuit_breaker:\n  failure_threshold: 2\n  success_threshold: 1\n  timeout_secs: 30\n";
        try (ProxyHarness h =
                harness(yaml, flaky.baseUri().toString(), steady.baseUri().toString())) {
            assertEquals(500, h.post("/v1/chat/completions", chat("one", false)).statusCode());
            assertEquals(500, h.post("/v1/chat/completions", chat("two", false)).statusCode());
            await("circuit open", () -> first(h).circuitState() == CircuitBreaker.State.OPEN);
            for (int i = 0; i < 3; i++) {
                assertEquals(
                        200,
                        h.post("/v1/chat/completions", chat("moved " + i, false))
                                .statusCode());
            }
            assertEquals(2, flaky.requestCount(), "no traffic while open");
            h.clock.advance(Duration.ofSeconds(30)); // half-open: a trial that fails reopens
            assertEquals(
                    500, h.post("/v1/chat/completions", chat("trial", false)).statusCode());
            await("reopened", () -> first(h).circuitState() == CircuitBreaker.State.OPEN);
            flaky.setFault(Fault.NONE); // recovers
            h.clock.advance(Duration.ofSeconds(30));
            assertEquals(
                    200,
                    h.post("/v1/chat/completions", chat("trial two", false)).statusCode());
            await("closed", () -> first(h).circuitState() == CircuitBreaker.State.CLOSED);
            assertEquals(4, flaky.requestCount());
            PromText m = PromText.parse(h.get("/metrics").body());
            String f = flaky.baseUri().toString();
            assertEquals(
                    2,
                    m.value("cart_circuit_transitions_total", "replica", f, "from", "half_open", "to", "open")
                            + m.value("cart_circuit_transitions_total", "replica", f, "from", "closed", "to", "open"));
            assertEquals(
                    1, m.value("cart_circuit_transitions_total", "replica", f, "from", "half_open", "to", "closed"));
        }
    }

    @Test
    void aSlowReplicaEndsAtTheRequestTimeout() throws Exception {
        SimulatedReplicaServer slow = sim("slow", Fault.SLOW, 1, 400);
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = harness(
                        "proxy:\n  request_timeout_secs: 1\n", slow.baseUri().toString())) {
            String got = streamBody(h, chat("take your time", true));
            assertFalse(got.contains("[DONE]"), got);
            await("decision line", () -> !log.lines().isEmpty());
            String line = log.lines().get(0);
            assertTrue(line.contains("result=timeout"), line);
            h.assertNoInFlight();
            assertEquals(CircuitBreaker.State.CLOSED, first(h).circuitState(), "one failure is below the threshold");
        }
    }

    @Test
    void everyReplicaDownGives503AndHealth503ThenRecovers() throws Exception {
        SimulatedReplicaServer a = sim("a", Fault.ERROR_503, 200, 8);
        SimulatedReplicaServer b = sim("b", Fault.ERROR_503, 200, 8);
        String yaml = "health:\n  failure_threshold: 1\n  success_threshold: 1\n";
        try (ProxyHarness h = harness(yaml, a.baseUri().toString(), b.baseUri().toString())) {
            h.probe();
            assertEquals(503, h.get("/health").statusCode());
            HttpResponse<String> r = h.post("/v1/chat/completions", chat("anyone", false));
            assertEquals(503, r.statusCode());
            assertEquals("1", r.headers().firstValue("retry-after").orElse(null));
            assertTrue(r.body().contains("no_replica_available"), r.body());
            a.setFault(Fault.NONE);
            b.setFault(Fault.NONE);
            h.probe();
            assertEquals(200, h.get("/health").statusCode());
            assertEquals(
                    200, h.post("/v1/chat/completions", chat("anyone", false)).statusCode());
        }
    }

    @Test
    void aReloadUnderTrafficFailsNoRequest() throws Exception {
        ScriptedReplica a = ScriptedReplica.start("a");
        ScriptedReplica b = ScriptedReplica.start("b");
        ScriptedReplica c = ScriptedReplica.start("c");
        Path base = dir.resolve("base.yaml");
        Files.writeString(base, "server:\n  host: 127.0.0.1\n  port: 0\n");
        Path workers = dir.resolve("workers.yaml");
        String ab = "workers:\n  - url: " + a.url() + "\n  - url: " + b.url() + "\n";
        String bc = "workers:\n  - url: " + b.url() + "\n  - url: " + c.url() + "\n";
        Files.writeString(workers, ab);
        List<Path> files = List.of(base, workers);
        ProxyHarness h = new ProxyHarness();
        h.replicas.addAll(List.of(a, b, c));
        h.proxy = h.startProxy(ConfigLoader.load(files), h.options().configSource(() -> ConfigLoader.load(files)));
        h.seenSets.add(h.proxy.routing().replicas);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (h) {
            List<Future<List<Integer>>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int id = t;
                results.add(clients.submit(() -> {
                    List<Integer> statuses = new ArrayList<>();
                    for (int i = 0; i < 40; i++) {
                        statuses.add(h.post("/v1/chat/completions", chat("client " + id + " turn " + i, i % 2 == 0))
                                .statusCode());
                    }
                    return statuses;
                }));
            }
            for (int i = 0; i < 10; i++) {
                Files.writeString(workers, i % 2 == 0 ? bc : ab);
                ProxyServer.ReloadResult r = h.proxy.reload();
                assertTrue(r.accepted() && r.changed(), r.message());
                h.seenSets.add(h.proxy.routing().replicas);
            }
            for (Future<List<Integer>> f : results) {
                for (int s : f.get(60, TimeUnit.SECONDS)) {
                    assertEquals(200, s);
                }
            }
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(10, m.value("cart_reloads_total", "result", "applied"));
        } finally {
            clients.shutdownNow();
        }
    }
}
