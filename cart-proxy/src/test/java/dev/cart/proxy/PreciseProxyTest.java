package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.kvevents.ReplicaMode;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.sim.KvEventOptions;
import dev.cart.sim.SimulatedReplicaServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The proxy in precise mode in front of simulated replicas that publish their engines' KV-cache events over real
 * ZMQ sockets and answer {@code POST /tokenize} over real HTTP: routing follows what the engines report holding
 * (also what another client put there), a silent stream or a restarted engine shows in the decision line,
 * {@code /workers} and {@code /metrics} show each worker's mode, and a reload follows the new workers with a new
 * subscriber and leaves no thread behind. Every test waits for the state it asserts, never for a duration.
 */
class PreciseProxyTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern LINE_FIELDS = Pattern.compile(
            " replica=(\\S+) .* mode=(\\S+) confirmed_tokens=(\\S+) held_tokens=(\\S+) tokenize_ms=(\\S+)"
                    + " precise=(\\S+) precise_reason=(\\S+)$");

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
                for (ManagedReplicaSet.Member m : proxy.routing().replicas.replicas()) {
                    await("no request in flight on " + m.id(), () -> m.inFlight() == 0);
                }
                proxy.close();
            }
        } finally {
            for (AutoCloseable c : open) {
                c.close();
            }
        }
        await("no precise-mode thread left", () -> kvThreads().isEmpty());
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

    /** A worker entry publishing {@code s}'s events; {@code extra} lines go under it. */
    private static String worker(SimulatedReplicaServer s, String... extra) {
        StringBuilder b = new StringBuilder("  - url: \"")
                .append(s.baseUri())
                .append("\"\n    kv_events: \"")
                .append(s.kvEndpoint())
                .append("\"\n    kv_events_replay: \"")
                .append(s.kvReplayEndpoint())
                .append("\"\n");
        for (String e : extra) {
            b.append("    ").append(e).append('\n');
        }
        return b.toString();
    }

    private static String config(String kvEvents, String workers) {
        return "server:\n  host: 127.0.0.1\n  port: 0\nkv_events:\n  model: sim\n" + kvEvents + "workers:\n" + workers;
    }

    private ProxyServer start(String yaml) throws Exception {
        ProxyConfig config = ConfigLoader.parse(yaml);
        proxy = ProxyServer.start(
                config, new ProxyServer.Options().healthChecks(false).configSource(() -> ConfigLoader.parse(yaml)));
        return proxy;
    }

    private static String system(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 60; i++) {
            sb.append("rule ").append(n).append('-').append(i).append(" keep answers short and exact. ");
        }
        return sb.toString();
    }

    private static String chat(String system, String question) throws Exception {
        var root = JSON.createObjectNode().put("model", "sim").put("max_tokens", 4);
        var msgs = root.putArray("messages");
        msgs.addObject().put("role", "system").put("content", system);
        msgs.addObject().put("role", "user").put("content", question);
        return JSON.writeValueAsString(root);
    }

    private HttpResponse<String> post(URI base, String body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(base.resolve("/v1/chat/completions"))
                        .header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Sends {@code body} through the proxy; its decision line's precise fields (and replica). */
    private Matcher routed(LogCapture log, String body) throws Exception {
        int before = log.lines().size();
        HttpResponse<String> r = post(proxy.baseUri(), body);
        assertEquals(200, r.statusCode(), r.body());
        await("the decision line", () -> log.lines().size() > before);
        String line = log.lines().get(before);
        Matcher m = LINE_FIELDS.matcher(line);
        assertTrue(m.find(), line);
        return m;
    }

    private ReplicaMode mode(SimulatedReplicaServer s) {
        return proxy.routing().precise.index().mode(s.baseUri().toString());
    }

    private long indexedBlocks(SimulatedReplicaServer s) {
        return proxy.routing()
                .precise
                .index()
                .status(s.baseUri().toString())
                .streams()
                .get(0)
                .blocks();
    }

    /** The tokens of {@code body}'s prompt the proxy's index counts {@code s} as holding, overlay included. */
    private int held(SimulatedReplicaServer s, String body) {
        var index = proxy.routing().precise.index();
        var request = dev.cart.kvevents.TokenizeRequest.of(
                dev.cart.kvevents.TokenizeRequest.Api.CHAT, body.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        var tokens = dev.cart.kvevents.EngineTokenizer.builder(index)
                .timeout(Duration.ofSeconds(10))
                .connectTimeout(Duration.ofSeconds(5))
                .build()
                .tokenize(request, List.of(s.baseUri().toString()));
        assertTrue(tokens.ok(), tokens.failure());
        return index.lookup(tokens.tokens(), "sim", null).heldTokens(s.baseUri().toString());
    }

    private JsonNode workers() throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(proxy.baseUri().resolve("/workers")).build(),
                HttpResponse.BodyHandlers.ofString());
        return JSON.readTree(r.body());
    }

    private String metrics() {
        try {
            return http.send(
                            HttpRequest.newBuilder(proxy.baseUri().resolve("/metrics"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The threads precise mode starts: the subscriber's (one per stream) and the tokenize pool's. */
    private static List<String> kvThreads() {
        List<String> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("cart-kv-")) {
                out.add(t.getName());
            }
        }
        return out;
    }

    @Test
    void aPrefixTheEngineHoldsOnAnotherReplicaIsRoutedThere() throws Exception {
        SimulatedReplicaServer a = sim("a");
        SimulatedReplicaServer b = sim("b");
        // b carries a small penalty: without precise mode a request the tree knows nothing of goes to a
        start(config("", worker(a) + worker(b, "load_penalty: 1")));
        await("both replicas precise", () -> mode(a) == ReplicaMode.PRECISE && mode(b) == ReplicaMode.PRECISE);
        // another client puts a long system prompt in b's cache: this proxy never routed it
        String system = system(1);
        assertEquals(200, post(b.baseUri(), chat(system, "first question")).statusCode());
        await("b's blocks indexed", () -> indexedBlocks(b) > 0);
        long bBefore = b.requestCount();
        long aBefore = a.requestCount();
        try (LogCapture log = new LogCapture("cart.decision")) {
            Matcher m = routed(log, chat(system, "second question"));
            assertEquals(b.baseUri().toString(), m.group(1), m.group());
            assertEquals("precise", m.group(2), m.group());
            assertTrue(Integer.parseInt(m.group(3)) > 0, m.group());
            assertEquals("on", m.group(6), m.group());
            assertEquals("-", m.group(7), m.group());
            assertTrue(
                    log.lines().get(0).contains(" reason=cache_hit "),
                    log.lines().get(0));
        }
        assertEquals(bBefore + 1, b.requestCount());
        assertEquals(aBefore, a.requestCount());
        JsonNode w = workers().get("workers");
        for (JsonNode x : w) {
            assertEquals("precise", x.get("mode").asText(), x.toString());
            assertEquals(0, x.get("kv_streams").get(0).get("rank").asInt(), x.toString());
        }
        String text = metrics();
        assertTrue(text.contains("cart_kv_replica_mode{mode=\"precise\",replica=\"" + b.baseUri() + "\"} 1.0"), text);
        assertTrue(text.contains("cart_kv_requests_total{precise=\"on\",reason=\"none\"} 1.0"), text);
        assertTrue(text.contains("cart_kv_tokenize_total{outcome=\"ok\"} 1.0"), text);
    }

    @Test
    void aSilentStreamDropsTheReplicaToApproximateAndTheDecisionLineSaysSo() throws Exception {
        SimulatedReplicaServer a = sim("a");
        start(config("  silence_secs: 1\n", worker(a)));
        await("precise", () -> mode(a) == ReplicaMode.PRECISE);
        a.kvSilent(true);
        try (LogCapture log = new LogCapture("cart.decision")) {
            for (int i = 0; i < 3; i++) {
                Matcher m = routed(log, chat(system(10 + i), "q" + i));
                assertEquals("precise", m.group(2), m.group());
            }
            await("the silence noticed", () -> mode(a) == ReplicaMode.APPROXIMATE);
            Matcher m = routed(log, chat(system(20), "while silent"));
            assertEquals("approximate", m.group(2), m.group());
            assertEquals(
                    "approximate", workers().get("workers").get(0).get("mode").asText());
            a.kvSilent(false);
            await("speaking again", () -> mode(a) == ReplicaMode.PRECISE);
            m = routed(log, chat(system(21), "speaking again"));
            assertEquals("precise", m.group(2), m.group());
            assertEquals("on", m.group(6), m.group());
        }
    }

    @Test
    void aRestartedEngineNoLongerCountsAsHoldingWhatTheProxyRoutedThere() throws Exception {
        SimulatedReplicaServer a = sim("a");
        SimulatedReplicaServer b = sim("b");
        start(config("", worker(a) + worker(b)));
        await("both replicas precise", () -> mode(a) == ReplicaMode.PRECISE && mode(b) == ReplicaMode.PRECISE);
        String system = system(30);
        String holder;
        try (LogCapture log = new LogCapture("cart.decision")) {
            holder = routed(log, chat(system, "first")).group(1);
            SimulatedReplicaServer h = holder.equals(a.baseUri().toString()) ? a : b;
            await("the holder's blocks indexed", () -> indexedBlocks(h) > 0);
            Matcher again = routed(log, chat(system, "second"));
            assertEquals(holder, again.group(1), again.group());
            assertTrue(Integer.parseInt(again.group(3)) > 0, again.group());
            h.restartEngine();
            // the engine says nothing of its restart: its next batch starts at 0 again
            assertEquals(
                    200,
                    post(h.baseUri(), chat(system(31), "after the restart")).statusCode());
            await(
                    "the restart seen",
                    () -> metrics()
                                    .contains("cart_kv_resets_total{cause=\"restart\",replica=\"" + h.baseUri()
                                            + "\"} 1.0")
                            && mode(h) == ReplicaMode.PRECISE);
            // the overlay of the requests routed there before went with the restart
            String third = chat(system, "third");
            await("the earlier requests' overlay dropped", () -> held(h, third) == 0);
            Matcher after = routed(log, third);
            assertEquals("0", after.group(4), after.group());
            // the engine's events say the prefix is gone (and the tree forgot the route at the restart)
            assertEquals("0", after.group(3), after.group());
            String line = log.lines().get(log.lines().size() - 1);
            assertFalse(line.contains(" reason=cache_hit "), line);
        }
    }

    @Test
    void tokenizeNoneRoutesApproximatelyAndSaysWhy() throws Exception {
        SimulatedReplicaServer a = sim("a");
        start(config("  tokenize: none\n", worker(a)));
        await("precise", () -> mode(a) == ReplicaMode.PRECISE);
        try (LogCapture log = new LogCapture("cart.decision")) {
            Matcher m = routed(log, chat(system(40), "q"));
            assertEquals("off", m.group(6), m.group());
            assertEquals("tokenize_off", m.group(7), m.group());
            assertEquals("-", m.group(3), m.group());
        }
        assertTrue(metrics().contains("cart_kv_requests_total{precise=\"off\",reason=\"tokenize_off\"} 1.0"));
    }

    @Test
    void aReloadFollowsTheNewWorkersWithANewSubscriberAndLeavesNoThread() throws Exception {
        SimulatedReplicaServer a = sim("a");
        SimulatedReplicaServer b = sim("b");
        String one = config("", worker(a));
        ProxyConfig first = ConfigLoader.parse(one);
        proxy = ProxyServer.start(first, new ProxyServer.Options().healthChecks(false));
        await("a precise", () -> mode(a) == ReplicaMode.PRECISE);
        assertEquals(List.of("cart-kv-" + a.baseUri() + "-0"), streamThreads());
        var before = proxy.routing().precise;

        assertTrue(proxy.reload(ConfigLoader.parse(config("", worker(a) + worker(b))))
                .accepted());
        assertTrue(proxy.routing().precise != before);
        List<String> expected = java.util.stream.Stream.of(
                        "cart-kv-" + a.baseUri() + "-0", "cart-kv-" + b.baseUri() + "-0")
                .sorted()
                .toList();
        await(
                "the old subscriber's thread gone, one per new stream",
                () -> streamThreads().equals(expected));
        await("both precise", () -> mode(a) == ReplicaMode.PRECISE && mode(b) == ReplicaMode.PRECISE);
        try (LogCapture log = new LogCapture("cart.decision")) {
            assertEquals("on", routed(log, chat(system(50), "q")).group(6));
        }

        String plain = "server:\n  host: 127.0.0.1\n  port: 0\nkv_events:\n  model: sim\nworkers:\n  - url: \""
                + a.baseUri() + "\"\n";
        assertTrue(proxy.reload(ConfigLoader.parse(plain)).accepted());
        assertNull(proxy.routing().precise);
        await("no precise-mode thread without kv_events", () -> kvThreads().isEmpty());
        try (LogCapture log = new LogCapture("cart.decision")) {
            assertEquals(200, post(proxy.baseUri(), chat(system(51), "q")).statusCode());
            await("the decision line", () -> !log.lines().isEmpty());
            assertFalse(log.lines().get(0).contains(" mode="), log.lines().get(0));
        }
    }

    @Test
    void noThreadAndTodaysLineWithoutKvEvents() throws Exception {
        SimulatedReplicaServer a = sim("a");
        start("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: \"" + a.baseUri() + "\"\n");
        assertNull(proxy.routing().precise);
        assertEquals(List.of(), kvThreads());
        try (LogCapture log = new LogCapture("cart.decision")) {
            assertEquals(200, post(proxy.baseUri(), chat(system(60), "q")).statusCode());
            await("the decision line", () -> !log.lines().isEmpty());
            String line = log.lines().get(0);
            assertTrue(line.endsWith(" tenant=-"), line);
        }
        assertFalse(metrics().contains("cart_kv_"));
        assertNotNull(workers().get("workers").get(0));
        assertFalse(workers().get("workers").get(0).has("mode"));
    }

    @Test
    void theDemoRunsInPreciseMode() throws Exception {
        Demo demo = Demo.start(2, true);
        open.add(demo);
        ProxyConfig config = ConfigLoader.load(List.of(), false).withWorkers(demo.workers());
        proxy = ProxyServer.start(
                config.withServer(config.server().withHost("127.0.0.1").withPort(0)),
                new ProxyServer.Options().healthChecks(false));
        assertEquals(2, proxy.routing().precise.followed().size());
        await(
                "every demo replica precise",
                () -> proxy.routing().precise.followed().stream()
                        .allMatch(id -> proxy.routing().precise.index().mode(id) == ReplicaMode.PRECISE));
        try (LogCapture log = new LogCapture("cart.decision")) {
            Matcher first = routed(log, Demo.quickStartBody(Demo.QUICK_START_QUESTIONS.get(0)));
            assertEquals("precise", first.group(2), first.group());
            assertEquals("on", first.group(6), first.group());
        }
    }

    private static List<String> streamThreads() {
        return kvThreads().stream()
                .filter(n -> !n.startsWith("cart-kv-tokenize-"))
                .sorted()
                .toList();
    }
}
