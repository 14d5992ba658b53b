package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.kvevents.ReplicaMode;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.sim.KvEventOptions;
import dev.cart.sim.SimulatedReplicaServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Precise mode's dealings with the engines beyond the index: an engine restart makes the router forget its
 * routes to that replica; a slow {@code /tokenize} holds no event loop; {@code /tokenize} carries none of the
 * client's credentials; a reload builds no HTTP client of its own. Real ZMQ sockets and HTTP on loopback; every
 * test waits for the state it asserts, never for a duration.
 */
class PreciseEngineTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private final List<AutoCloseable> open = new ArrayList<>();
    private ProxyServer proxy;

    @AfterEach
    void close() throws Exception {
        try {
            if (proxy != null) {
                proxy.close();
            }
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
        }
    }

    private SimulatedReplicaServer sim(String name) throws Exception {
        SimulatedReplicaServer s = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .name(name)
                .speedup(200)
                .outputTokens(4)
                .kvEvents(KvEventOptions.defaults()));
        open.add(s);
        return s;
    }

    /** A worker at {@code url} following {@code events}' engine events. */
    private static String worker(String url, SimulatedReplicaServer events) {
        return "  - url: \"" + url + "\"\n    kv_events: \"" + events.kvEndpoint() + "\"\n    kv_events_replay: \""
                + events.kvReplayEndpoint() + "\"\n";
    }

    private static String config(String kvEvents, String workers) {
        return "server:\n  host: 127.0.0.1\n  port: 0\nkv_events:\n  model: sim\n" + kvEvents + "workers:\n" + workers;
    }

    private void start(String yaml) throws Exception {
        proxy = ProxyServer.start(ConfigLoader.parse(yaml), new ProxyServer.Options().healthChecks(false));
    }

    private ReplicaMode mode(String id) {
        return proxy.routing().precise.index().mode(id);
    }

    private static String chat(String system, String question) throws Exception {
        var root = JSON.createObjectNode().put("model", "sim").put("max_tokens", 4);
        var msgs = root.putArray("messages");
        msgs.addObject().put("role", "system").put("content", system);
        msgs.addObject().put("role", "user").put("content", question);
        return JSON.writeValueAsString(root);
    }

    private static String system(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 60; i++) {
            sb.append("rule ").append(n).append('-').append(i).append(" keep answers short and exact. ");
        }
        return sb.toString();
    }

    private HttpRequest post(URI base, String body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("/v1/chat/completions"))
                .header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return b.build();
    }

    @Test
    void anEngineRestartMakesTheRouterForgetItsRoutesToThatReplica() throws Exception {
        SimulatedReplicaServer a = sim("a");
        SimulatedReplicaServer b = sim("b");
        start(config("", worker(a.baseUri().toString(), a) + worker(b.baseUri().toString(), b)));
        String ida = a.baseUri().toString();
        String idb = b.baseUri().toString();
        await("both precise", () -> mode(ida) == ReplicaMode.PRECISE && mode(idb) == ReplicaMode.PRECISE);
        assertEquals(
                200,
                http.send(post(proxy.baseUri(), chat(system(1), "q")), HttpResponse.BodyHandlers.ofString())
                        .statusCode());
        for (ManagedReplicaSet.Member m : proxy.routing().replicas.replicas()) {
            await("no request in flight on " + m.id(), () -> m.inFlight() == 0);
        }
        assertTrue(proxy.routing().router.treeStats().entries() > 0, "the route learned");
        SimulatedReplicaServer holder = a.requestCount() > 0 ? a : b;
        holder.restartEngine();
        // the restarted engine's first batch (sequence 0 again) shows the restart
        assertEquals(
                200,
                http.send(post(holder.baseUri(), chat(system(2), "q")), HttpResponse.BodyHandlers.ofString())
                        .statusCode());
        await(
                "the restart seen and the holder's routes forgotten",
                () -> proxy.routing()
                                        .precise
                                        .index()
                                        .status(holder.baseUri().toString())
                                        .streams()
                                        .get(0)
                                        .resets()
                                >= 1
                        && proxy.routing().router.treeStats().entries() == 0);
    }

    /** An engine whose {@code /tokenize} answers only once released; records the headers it was sent. */
    private static final class SlowEngine implements AutoCloseable {
        final CountDownLatch asked = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicReference<Headers> tokenizeHeaders = new AtomicReference<>();
        final ExecutorService pool = Executors.newCachedThreadPool();
        final HttpServer server;

        SlowEngine() throws IOException {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.setExecutor(pool);
            server.createContext("/tokenize", ex -> {
                tokenizeHeaders.set(ex.getRequestHeaders());
                ex.getRequestBody().readAllBytes();
                asked.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                answer(ex, "{\"count\":3,\"max_model_len\":4096,\"tokens\":[1,2,3]}");
            });
            server.createContext("/v1/chat/completions", ex -> {
                ex.getRequestBody().readAllBytes();
                answer(
                        ex,
                        "{\"id\":\"x\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"sim\",\"choices\":"
                                + "[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},"
                                + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,"
                                + "\"completion_tokens\":1,\"total_tokens\":4}}");
            });
            server.start();
        }

        static void answer(HttpExchange ex, String body) throws IOException {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("content-type", "application/json");
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        @Override
        public void close() {
            release.countDown();
            server.stop(0);
            pool.shutdownNow();
        }
    }

    @Test
    void aSlowTokenizeHoldsNoEventLoopAndCarriesNoClientCredential() throws Exception {
        SimulatedReplicaServer events = sim("events");
        SlowEngine engine = new SlowEngine();
        open.add(engine);
        start(config("  tokenize_timeout_ms: 60000\n", worker(engine.url(), events)));
        await("precise", () -> mode(engine.url()) == ReplicaMode.PRECISE);
        CompletableFuture<HttpResponse<String>> pending = http.sendAsync(
                post(
                        proxy.baseUri(),
                        chat(system(3), "q"),
                        "authorization",
                        "Bearer client-secret",
                        "x-api-key",
                        "client-secret"),
                HttpResponse.BodyHandlers.ofString());
        assertTrue(engine.asked.await(60, TimeUnit.SECONDS), "the tokenize call made");
        // every event loop answers while the tokenize call is pending: one fresh connection per loop and more
        int connections = 2 * Runtime.getRuntime().availableProcessors() + 2;
        for (int i = 0; i < connections; i++) {
            HttpClient fresh = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(5))
                    .build();
            HttpResponse<String> workers = fresh.send(
                    HttpRequest.newBuilder(proxy.baseUri().resolve("/workers"))
                            .timeout(Duration.ofSeconds(60))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, workers.statusCode(), workers.body());
        }
        assertFalse(pending.isDone(), "the request waits for its tokens");
        engine.release.countDown();
        HttpResponse<String> done = pending.get(60, TimeUnit.SECONDS);
        assertEquals(200, done.statusCode(), done.body());
        Headers sent = engine.tokenizeHeaders.get();
        assertNull(sent.getFirst("authorization"), sent.toString());
        assertNull(sent.getFirst("x-api-key"), sent.toString());
        for (List<String> values : sent.values()) {
            assertFalse(values.toString().contains("client-secret"), sent.toString());
        }
    }

    /** The JDK HTTP clients alive: each has one selector thread. */
    private static Set<String> httpClientThreads() {
        Set<String> out = new TreeSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive()
                    && t.getName().startsWith("HttpClient-")
                    && t.getName().endsWith("-SelectorManager")) {
                out.add(t.getName());
            }
        }
        return out;
    }

    @Test
    void aReloadStartsNoHttpClientOfItsOwn() throws Exception {
        SimulatedReplicaServer a = sim("a");
        SimulatedReplicaServer b = sim("b");
        String ida = a.baseUri().toString();
        String idb = b.baseUri().toString();
        start(config("", worker(ida, a)));
        await("a precise", () -> mode(ida) == ReplicaMode.PRECISE);
        Set<String> before = httpClientThreads();
        var first = proxy.routing().precise;
        assertTrue(proxy.reload(ConfigLoader.parse(config("", worker(ida, a) + worker(idb, b))))
                .accepted());
        assertTrue(proxy.routing().precise != first, "a new precise mode");
        await("both precise", () -> mode(ida) == ReplicaMode.PRECISE && mode(idb) == ReplicaMode.PRECISE);
        assertEquals(
                200,
                http.send(post(proxy.baseUri(), chat(system(4), "q")), HttpResponse.BodyHandlers.ofString())
                        .statusCode());
        Set<String> after = httpClientThreads();
        after.removeAll(before);
        assertEquals(Set.of(), after, "HTTP clients started by the reload");
    }
}
