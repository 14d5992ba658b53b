package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The concurrent companion of the sequential soak run ({@code dev.cart.proxy.Soak} in examples/bench): many client threads through the proxy while
 * leases are held across requests (streams kept open on every replica while the others run), and replicas
 * failing mid-run (one answering 503, one killed with streams in flight). Every non-streamed request must
 * end 200 (retried away from the failing replicas); a stream may break only if its replica was killed
 * under it. At the end nothing is lost: every replica set's in-flight count is 0 and the tree's counters
 * equal a recount (the harness checks both on close). Sizes are fixed; nothing depends on timing: the
 * phases are driven by counts and by waiting for the state they need.
 */
class ConcurrentSoakTest {

    private static final int HELD_STREAMS = 6;
    private static final int THREADS = 8;
    private static final int REQUESTS_PER_THREAD = 40;
    private static final String[] SYSTEM = {
        "You are a meticulous assistant for a logistics company; answer with numbered steps. ".repeat(2),
        "You translate English product descriptions into French, keeping units and brand names. ".repeat(2),
        "You review Java code for concurrency bugs and explain each finding with a short example. ".repeat(2),
        "You summarise support tickets into one sentence and a priority from P1 to P4, nothing else. ".repeat(2),
    };

    @Test
    void manyClientsHeldStreamsAndFailingReplicasLoseNothing() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(3, "cache:\n  max_tree_size: 400\n  eviction_interval_secs: 1\n")) {
            ManagedReplicaSet set = h.proxy.routing().replicas;
            CountDownLatch gate = new CountDownLatch(1);
            for (ScriptedReplica r : h.replicas) {
                r.gate = gate;
            }
            // phase 1: streams that hold their leases (first chunk sent, the rest waits for the gate)
            List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
            for (int i = 0; i < HELD_STREAMS; i++) {
                held.add(h.http.sendAsync(
                        HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                .POST(HttpRequest.BodyPublishers.ofString(
                                        chat(SYSTEM[i % SYSTEM.length] + "held " + i, true)))
                                .build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            await("the held streams are in flight", () -> set.totalInFlight() == HELD_STREAMS);

            // phase 2: clients run while those leases are held; at a quarter of the requests the held streams
            // are released, at half one replica starts failing and another is killed
            int total = THREADS * REQUESTS_PER_THREAD;
            AtomicInteger done = new AtomicInteger();
            AtomicInteger brokenStreams = new AtomicInteger();
            Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
            CountDownLatch failuresInjected = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            List<Future<?>> clients = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                clients.add(pool.submit(() -> {
                    SplittableRandom rnd = new SplittableRandom(1000 + thread);
                    for (int i = 0; i < REQUESTS_PER_THREAD; i++) {
                        boolean stream = gate.getCount() == 0 && rnd.nextInt(3) == 0;
                        String body =
                                chat(SYSTEM[rnd.nextInt(SYSTEM.length)] + "client " + thread + " turn " + i, stream);
                        try {
                            HttpResponse<String> r = h.post("/v1/chat/completions", body);
                            statuses.merge(r.statusCode(), 1, Integer::sum);
                            if (stream && r.statusCode() == 200 && !r.body().contains("[DONE]")) {
                                brokenStreams.incrementAndGet();
                            }
                        } catch (IOException e) {
                            if (!stream || failuresInjected.getCount() != 0) {
                                throw e; // only a stream on the killed replica may break
                            }
                            brokenStreams.incrementAndGet();
                        }
                        int n = done.incrementAndGet();
                        if (n == total / 4) {
                            gate.countDown();
                        }
                        if (n == total / 2) {
                            h.replica(1).forcedStatus = 503; // retryable: retried elsewhere
                            h.replica(2).close();
                            failuresInjected.countDown();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> c : clients) {
                c.get(4, TimeUnit.MINUTES);
            }
            pool.shutdown();
            for (CompletableFuture<HttpResponse<String>> f : held) {
                HttpResponse<String> r = f.get(1, TimeUnit.MINUTES);
                assertEquals(200, r.statusCode());
                assertTrue(r.body().contains("[DONE]"), "a held stream completes once released: " + r.body());
            }
            int ok = statuses.getOrDefault(200, 0);
            System.out.println("concurrent soak: " + total + " requests on " + THREADS + " threads with " + HELD_STREAMS
                    + " held streams; statuses " + statuses + ", broken streams " + brokenStreams);
            assertEquals(
                    total,
                    ok + brokenStreams.get(),
                    "every request answered 200 (or a stream broken by the " + "killed replica): " + statuses);
            assertTrue(h.replica(0).requests.size() > 0 && h.replica(1).requests.size() > 0);
        } // close(): in-flight 0 on every replica set, tree stats equal to a recount
    }
}
