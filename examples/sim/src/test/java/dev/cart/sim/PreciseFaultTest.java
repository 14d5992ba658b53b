package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.kvevents.EngineTokenizer;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import dev.cart.kvevents.KvSubscriber;
import dev.cart.kvevents.PromptTokens;
import dev.cart.kvevents.ReplicaMode;
import dev.cart.kvevents.StreamStatus;
import dev.cart.kvevents.TokenizeRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Precise mode against the simulated replica over real sockets: the replica publishes its engine's KV events
 * over ZMQ in vLLM's format (both encodings, both hash forms, both replay shapes) and answers
 * {@code /tokenize}; CART's subscriber and index follow it. Each fault the issue names: a gap and its replay, a
 * restart, a late subscriber, a silent stream, a flood, CPU-tier events, LoRA and salt. Every test waits for
 * the state it asserts (never a fixed sleep).
 */
class PreciseFaultTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        // a bound, not a timing: a loaded machine can take long
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(5);
        }
    }

    private static SimulatedReplicaServer replica(KvEventOptions kv) throws Exception {
        return SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .name("r1")
                .speedup(200)
                .outputTokens(4)
                .kvEvents(kv));
    }

    private static KvStream stream(SimulatedReplicaServer r) {
        return KvStream.of(r.baseUri().toString(), r.kvEndpoint(), r.kvReplayEndpoint(), "sim");
    }

    private static String chat(String model, String system, String question, String salt) throws Exception {
        var root = JSON.createObjectNode().put("model", model).put("max_tokens", 4);
        if (salt != null) {
            root.put("cache_salt", salt);
        }
        var msgs = root.putArray("messages");
        msgs.addObject().put("role", "system").put("content", system);
        msgs.addObject().put("role", "user").put("content", question);
        return JSON.writeValueAsString(root);
    }

    private static String system(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 120; i++) {
            sb.append("rule ").append(n).append('-').append(i).append(" keep answers short and exact. ");
        }
        return sb.toString();
    }

    /** Sends a chat request; its {@code cached_tokens}. */
    private static int send(SimulatedReplicaServer r, String body) throws Exception {
        HttpResponse<String> resp = HTTP.send(
                HttpRequest.newBuilder(r.baseUri().resolve("/v1/chat/completions"))
                        .header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, resp.statusCode(), resp.body());
        JsonNode u = JSON.readTree(resp.body()).get("usage");
        return u.get("prompt_tokens_details").get("cached_tokens").asInt();
    }

    private static final java.util.Map<KvIndex, EngineTokenizer> TOKENIZERS =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    /** The tokens the index confirms {@code r} holds of {@code body}'s prompt (tokens from the replica's /tokenize). */
    private static int confirmed(KvIndex index, SimulatedReplicaServer r, String body) {
        TokenizeRequest t = TokenizeRequest.of(TokenizeRequest.Api.CHAT, body.getBytes(StandardCharsets.UTF_8));
        EngineTokenizer tok = TOKENIZERS.computeIfAbsent(
                index,
                i -> EngineTokenizer.builder(i)
                        .timeout(Duration.ofSeconds(10))
                        .connectTimeout(Duration.ofSeconds(5))
                        .build());
        PromptTokens tokens = tok.tokenize(t, List.of(r.baseUri().toString()));
        assertTrue(tokens.ok(), tokens.failure());
        return index.lookup(tokens.tokens(), t.model(), t.salt())
                .confirmedTokens(r.baseUri().toString());
    }

    private static StreamStatus status(KvIndex index, SimulatedReplicaServer r) {
        return index.status(r.baseUri().toString()).streams().get(0);
    }

    private static KvSubscriber follow(KvIndex index, SimulatedReplicaServer r) {
        return KvSubscriber.builder(index).stream(stream(r))
                .pollInterval(Duration.ofMillis(10))
                .start();
    }

    /**
     * {@link #follow}, returning once the replica's live batches arrive. A ZMQ subscription takes effect some
     * time after its connect; the subscriber catches up on what was published before its handshake completed,
     * but not on the moment after it, before the subscription reaches the engine (docs/precise-mode.md,
     * "Connecting"). So once the history is replayed, probes (each a new prompt, so each stores blocks) are
     * sent until one is indexed, which takes a live batch: its own, or a later probe's that asked for the
     * replay of it.
     */
    private static KvSubscriber followLive(KvIndex index, SimulatedReplicaServer r) throws Exception {
        KvSubscriber sub = follow(index, r);
        try {
            await("history replayed", () -> index.mode(r.baseUri().toString()) == ReplicaMode.PRECISE);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            for (int i = 0; ; i++) {
                String probe = chat("sim", system(1000 + i), "probe?", null);
                send(r, probe);
                long until = System.nanoTime() + Duration.ofSeconds(1).toNanos();
                while (System.nanoTime() < until) {
                    if (confirmed(index, r, probe) > 0) {
                        return sub;
                    }
                    Thread.sleep(5);
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no live batch from " + r.baseUri() + " after " + (i + 1) + " probes");
                }
            }
        } catch (Exception | AssertionError e) {
            sub.close();
            throw e;
        }
    }

    @ParameterizedTest(name = "maps={0} byteHashes={1} topicInReplay={2}")
    @CsvSource({"false,false,false", "true,false,true", "false,true,true", "true,true,false"})
    void theIndexConfirmsExactlyWhatTheReplicaThenDelivers(boolean maps, boolean bytes, boolean topicInReplay)
            throws Exception {
        KvEventOptions kv =
                KvEventOptions.defaults().mapEncoding(maps).byteHashes(bytes).topicInReplay(topicInReplay);
        try (SimulatedReplicaServer r = replica(kv)) {
            String first = chat("sim", system(1), "what is one?", null);
            send(r, first); // before the subscriber: its blocks arrive by replay
            KvIndex index =
                    KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
            try (KvSubscriber sub = followLive(index, r)) {
                await(
                        "history replayed",
                        () -> index.mode(r.baseUri().toString()) == ReplicaMode.PRECISE
                                && confirmed(index, r, first) > 0);
                String second = chat("sim", system(1), "what is two? ".repeat(40), null);
                int predicted = confirmed(index, r, second); // the shared system prompt, from the events
                assertEquals(predicted, send(r, second));
                await("the second request's blocks", () -> confirmed(index, r, second) > predicted);
                assertEquals(confirmed(index, r, second), send(r, second));
            }
        }
    }

    @Test
    void aGapOnTheWireIsReplayed() throws Exception {
        try (SimulatedReplicaServer r = replica(KvEventOptions.defaults())) {
            KvIndex index =
                    KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
            try (KvSubscriber sub = followLive(index, r)) {
                await("connected", () -> index.mode(r.baseUri().toString()) == ReplicaMode.PRECISE);
                r.kvDropNext(2);
                String a = chat("sim", system(2), "a?", null);
                String b = chat("sim", system(3), "b?", null);
                send(r, a);
                send(r, b);
                String c = chat("sim", system(4), "c?", null);
                send(r, c);
                await(
                        "gap seen and filled",
                        () -> status(index, r).gaps() >= 1
                                && confirmed(index, r, a) > 0
                                && confirmed(index, r, b) > 0
                                && confirmed(index, r, c) > 0);
                assertEquals(0, status(index, r).resets());
                assertEquals(ReplicaMode.PRECISE, index.mode(r.baseUri().toString()));
            }
        }
    }

    @Test
    void aRestartDropsTheReplicasBlocks() throws Exception {
        try (SimulatedReplicaServer r = replica(KvEventOptions.defaults())) {
            KvIndex index =
                    KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
            try (KvSubscriber sub = followLive(index, r)) {
                String a = chat("sim", system(5), "a?", null);
                send(r, a);
                await("a indexed", () -> confirmed(index, r, a) > 0);
                r.restartEngine();
                String b = chat("sim", system(6), "b?", null);
                send(r, b);
                await("restart seen, b indexed", () -> status(index, r).resets() >= 1 && confirmed(index, r, b) > 0);
                assertEquals(0, confirmed(index, r, a)); // the engine lost it; the index knows
                assertEquals(0, send(r, a)); // and the replica confirms it
            }
        }
    }

    /** The index's match for {@code body}'s prompt (tokens from the replica's /tokenize). */
    private static dev.cart.kvevents.PreciseMatch match(KvIndex index, SimulatedReplicaServer r, String body) {
        TokenizeRequest t = TokenizeRequest.of(TokenizeRequest.Api.CHAT, body.getBytes(StandardCharsets.UTF_8));
        PromptTokens tokens = EngineTokenizer.builder(index)
                .timeout(Duration.ofSeconds(10))
                .httpClient(HTTP)
                .build()
                .tokenize(t, List.of(r.baseUri().toString()));
        assertTrue(tokens.ok(), tokens.failure());
        return index.lookup(tokens.tokens(), t.model(), t.salt());
    }

    @Test
    void aRestartDropsTheOverlayOfTheRequestsRoutedThereAndTellsTheHost() throws Exception {
        try (SimulatedReplicaServer r = replica(KvEventOptions.defaults())) {
            String id = r.baseUri().toString();
            List<String> resets = new java.util.concurrent.CopyOnWriteArrayList<>();
            KvIndex index = KvIndex.builder()
                    .replayTimeout(Duration.ofSeconds(20))
                    .onEngineReset(resets::add)
                    .build();
            dev.cart.core.ManagedReplicaSet set =
                    dev.cart.core.ManagedReplicaSet.builder().add(id).build();
            try (KvSubscriber sub = followLive(index, r);
                    dev.cart.core.Router router = dev.cart.core.Router.builder()
                            .replicas(set)
                            .policy(new RoundRobinForTest())
                            .listener(index.leaseListener())
                            .evictionInterval(Duration.ZERO)
                            .build()) {
                await("connected", () -> index.mode(id) == ReplicaMode.PRECISE);
                // the engine publishes something first: a restart shows as its sequence going back
                String earlier = chat("sim", system(39), "e?", null);
                send(r, earlier);
                await("earlier indexed", () -> confirmed(index, r, earlier) > 0);
                String a = chat("sim", system(40), "a?", null);
                // routed there and not yet computed: its lease stays open, so the overlay keeps it
                dev.cart.core.RouteDecision d = router.choose(dev.cart.core.RouteRequest.empty());
                index.routed(d, match(index, r, a));
                dev.cart.kvevents.PreciseMatch before = match(index, r, a);
                assertEquals(0, before.confirmedTokens(id));
                assertTrue(before.heldTokens(id) > 0, "held through the overlay");
                r.restartEngine();
                send(r, chat("sim", system(41), "b?", null)); // the new engine's first batch: sequence 0
                await("restart seen", () -> status(index, r).resets() >= 1 && !resets.isEmpty());
                assertEquals(List.of(id), resets);
                assertEquals(0, match(index, r, a).heldTokens(id)); // the engine lost it, the overlay too
                d.lease().close();
            }
        }
    }

    @Test
    void aLateSubscriberIsPreciseWithAnIncompleteHistory() throws Exception {
        try (SimulatedReplicaServer r = replica(KvEventOptions.defaults().bufferBatches(3))) {
            String[] bodies = new String[6];
            for (int i = 0; i < bodies.length; i++) {
                bodies[i] = chat("sim", system(10 + i), "q" + i, null);
                send(r, bodies[i]);
            }
            KvIndex index =
                    KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
            try (KvSubscriber sub = follow(index, r)) {
                await(
                        "replayed what the buffer held",
                        () -> status(index, r).incomplete()
                                && index.mode(r.baseUri().toString()) == ReplicaMode.PRECISE
                                && confirmed(index, r, bodies[5]) > 0);
                assertEquals(0, confirmed(index, r, bodies[0])); // before the buffer's window: unknown
            }
        }
    }

    @Test
    void aSilentPublisherWhileRequestsAreRoutedMakesTheReplicaApproximate() throws Exception {
        try (SimulatedReplicaServer r = replica(KvEventOptions.defaults())) {
            KvIndex index = KvIndex.builder()
                    .replayTimeout(Duration.ofSeconds(20))
                    .silence(Duration.ofMillis(300))
                    .build();
            dev.cart.core.ManagedReplicaSet set = dev.cart.core.ManagedReplicaSet.builder()
                    .add(r.baseUri().toString())
                    .build();
            try (KvSubscriber sub = followLive(index, r);
                    dev.cart.core.Router router = dev.cart.core.Router.builder()
                            .replicas(set)
                            .policy(new RoundRobinForTest())
                            .evictionInterval(Duration.ZERO)
                            .build()) {
                String id = r.baseUri().toString();
                await("connected", () -> index.mode(id) == ReplicaMode.PRECISE);
                r.kvSilent(true);
                for (int i = 0; i < 3; i++) {
                    String body = chat("sim", system(20 + i), "s?", null);
                    dev.cart.core.RouteDecision d = router.choose(dev.cart.core.RouteRequest.empty());
                    index.routed(d, null);
                    send(r, body);
                    d.lease().close();
                }
                await("silence noticed", () -> index.mode(id) == ReplicaMode.APPROXIMATE);
                assertEquals("silent", index.status(id).reason());
                r.kvSilent(false);
                await("speaking again", () -> index.mode(id) == ReplicaMode.PRECISE);
            }
        }
    }

    @Test
    void cpuTierEventsAreCountedAndLoraAndSaltKeepBlocksApart() throws Exception {
        try (SimulatedReplicaServer r = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .speedup(200)
                .outputTokens(4)
                .cacheTokens(16 * 200)
                .adapters(List.of("sql"))
                .kvEvents(KvEventOptions.defaults().mapEncoding(true)))) {
            KvIndex index =
                    KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
            try (KvSubscriber sub = followLive(index, r)) {
                String salted = chat("sql", system(30), "x?", "tenant-a");
                send(r, salted);
                await("adapter blocks indexed", () -> confirmed(index, r, salted) > 0);
                assertEquals(0, confirmed(index, r, chat("sim", system(30), "x?", "tenant-a")));
                assertEquals(0, confirmed(index, r, chat("sql", system(30), "x?", "tenant-b")));
                assertEquals(0, confirmed(index, r, chat("sql", system(30), "x?", null)));
                r.kvOffload(true);
                for (int i = 0; i < 4; i++) {
                    send(r, chat("sim", system(31 + i), "y?", null)); // pushes the small cache to evict
                }
                await("offloaded blocks counted", () -> status(index, r).offloadBlocks() > 0);
            }
        }
    }

    @Test
    void aFloodIsBoundedByTheHighWaterMarkAndTheMemoryCap() throws Exception {
        KvIndex index = KvIndex.builder()
                .replayTimeout(Duration.ofSeconds(20))
                .maxBlocksPerStream(1_000)
                .gapHold(Duration.ZERO)
                .build();
        try (KvEventPublisher pub = new KvEventPublisher("127.0.0.1", 0, 0, "", false, 50_000)) {
            KvStream s = KvStream.of("flood", pub.endpoint(), pub.replayEndpoint(), "sim");
            try (KvSubscriber sub = KvSubscriber.builder(index).stream(s)
                    .receiveHighWaterMark(100)
                    .pollInterval(Duration.ofMillis(10))
                    .start()) {
                await("connected", () -> index.mode("flood") == ReplicaMode.PRECISE);
                KvEventEncoder enc = new KvEventEncoder(KvEventEncoder.Format.POSITIONAL_INT, 0);
                int batches = 20_000;
                for (int i = 0; i < batches; i++) {
                    int[] tokens = new int[16];
                    java.util.Arrays.fill(tokens, i);
                    enc.stored(new long[] {i + 1L}, null, tokens, 16, "GPU", null, null);
                    pub.publish(enc.finish(1.0));
                }
                await("caught up", () -> index.status("flood").streams().get(0).nextSeq() == batches);
                StreamStatus st = index.status("flood").streams().get(0);
                assertTrue(st.blocks() <= 1_000, "blocks " + st.blocks());
                assertTrue(st.capEvicted() > 0);
                assertEquals(ReplicaMode.PRECISE, index.mode("flood"));
            }
        }
    }

    /** Round robin over the candidates, enough for a router in a test. */
    private static final class RoundRobinForTest implements dev.cart.core.spi.RoutingPolicy {
        @Override
        public dev.cart.core.spi.Choice choose(dev.cart.core.spi.RoutingContext ctx) {
            return dev.cart.core.spi.Choice.of(ctx.candidates().get(0), dev.cart.core.Reason.POLICY);
        }

        @Override
        public String name() {
            return "first";
        }
    }

    @Test
    void tokenizeServesTheEnginesTokens() throws Exception {
        try (SimulatedReplicaServer r = replica(KvEventOptions.defaults())) {
            HttpResponse<String> resp = HTTP.send(
                    HttpRequest.newBuilder(URI.create(r.baseUri() + "/tokenize"))
                            .POST(HttpRequest.BodyPublishers.ofString(
                                    "{\"model\":\"sim\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, resp.statusCode());
            JsonNode t = JSON.readTree(resp.body());
            assertEquals(ModelTokenizer.BEGIN_OF_TEXT, t.get("tokens").get(0).asInt());
            assertEquals(t.get("count").asInt(), t.get("tokens").size());
            HttpResponse<String> bad = HTTP.send(
                    HttpRequest.newBuilder(URI.create(r.baseUri() + "/tokenize"))
                            .POST(HttpRequest.BodyPublishers.ofString("{\"messages\": 3}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(400, bad.statusCode());
        }
    }
}
