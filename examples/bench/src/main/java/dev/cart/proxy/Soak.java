package dev.cart.proxy;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.RoutingPolicyProvider;
import dev.cart.proxy.config.ConfigLoader;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The soak run (not part of the test suite; see docs/hardening.md for the command):
 *
 * <ol>
 *   <li>in process: {@code routerRequests} routed requests with prompt churn (a few shared system prompts,
 *       each request with its own conversation tail) through a {@link Router} whose tree is capped at
 *       {@code maxBlocks}; an eviction pass every 10,000 requests; every 100,000 requests it prints the
 *       heap used after a full GC and the tree size;</li>
 *   <li>over HTTP: the proxy in front of fake replicas for {@code httpSeconds}, {@code clients} client
 *       threads sending churned chat requests (a third streamed), eviction every second, printing every
 *       {@code httpSeconds / 10} seconds the requests done, errors, heap after GC and tree size.</li>
 * </ol>
 *
 * Arguments: {@code [routerRequests] [httpSeconds] [clients] [maxBlocks] [httpMaxBlocks]}, defaults
 * 1000000 180 8 200000 5000 (the HTTP run routes far fewer requests, so its tree gets a smaller cap to
 * reach within minutes).
 */
public final class Soak {

    private Soak() {}

    private static final String[] SYSTEMS = {
        "You are a helpful assistant for a bank. Answer politely and never give financial advice. ",
        "You are a code reviewer. Point out bugs, then style issues, in that order, briefly. ",
        "You translate English to French. Keep the register of the original. ",
        "You are a travel agent. Suggest three options with prices. ",
    };

    static String prompt(SplittableRandom r, long n) {
        String system = SYSTEMS[r.nextInt(SYSTEMS.length)].repeat(4);
        return system + " conversation " + n + " turn " + r.nextInt(8) + ": " + Long.toHexString(r.nextLong())
                + " please help with item " + r.nextInt(1_000_000) + " ".repeat(64);
    }

    static long heapAfterGc() {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        System.gc();
        System.gc();
        return mem.getHeapMemoryUsage().getUsed();
    }

    public static void main(String[] args) throws Exception {
        long routerRequests = args.length > 0 ? Long.parseLong(args[0]) : 1_000_000;
        int httpSeconds = args.length > 1 ? Integer.parseInt(args[1]) : 180;
        int clients = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        long maxBlocks = args.length > 3 ? Long.parseLong(args[3]) : 200_000;
        long httpMaxBlocks = args.length > 4 ? Long.parseLong(args[4]) : 5_000;
        System.out.printf(
                "soak: java %s, max heap %d MiB, %d router requests, %d s of HTTP with %d clients, "
                        + "tree cap %d blocks (HTTP run: %d)%n",
                Runtime.version(),
                Runtime.getRuntime().maxMemory() >> 20,
                routerRequests,
                httpSeconds,
                clients,
                maxBlocks,
                httpMaxBlocks);
        if (routerRequests > 0) {
            inProcess(routerRequests, maxBlocks);
        }
        if (httpSeconds > 0) {
            overHttp(httpSeconds, clients, httpMaxBlocks);
        }
    }

    static void inProcess(long n, long maxBlocks) {
        ManagedReplicaSet set = ManagedReplicaSet.builder()
                .add(new ReplicaSpec("http://r1", 256, 0))
                .add(new ReplicaSpec("http://r2", 256, 0))
                .add(new ReplicaSpec("http://r3", 256, 0))
                .add(new ReplicaSpec("http://r4", 256, 0))
                .build();
        SplittableRandom r = new SplittableRandom(7);
        System.out.println("in-process: requests, heap_after_gc_MiB, tree_blocks, tree_nodes, hits");
        long hits = 0;
        long t0 = System.nanoTime();
        try (Router router = Router.builder()
                .replicas(set)
                .policy(RoutingPolicyProvider.named("cache_aware").create(Map.of()))
                .maxTreeSize(maxBlocks)
                .evictionInterval(Duration.ZERO)
                .build()) {
            for (long i = 1; i <= n; i++) {
                RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText(prompt(r, i), 64)));
                if (d.reason() == dev.cart.core.Reason.CACHE_HIT) {
                    hits++;
                }
                try (var lease = d.lease()) {
                    lease.succeeded();
                }
                if (i % 10_000 == 0) {
                    router.evictNow();
                }
                if (i % 100_000 == 0) {
                    System.out.printf(
                            "in-process: %d, %.1f, %d, %d, %d%n",
                            i,
                            heapAfterGc() / 1048576.0,
                            router.treeStats().size(),
                            router.treeStats().nodes(),
                            hits);
                }
            }
            if (!dev.cart.core.TreeProbe.countsMatchRecount(router) || set.totalInFlight() != 0) {
                throw new IllegalStateException("lost accounting: " + router.treeStats());
            }
        }
        System.out.printf(
                "in-process: done in %d s; tree stats equal a recount; in-flight 0%n",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0));
    }

    static void overHttp(int seconds, int clients, long maxBlocks) throws Exception {
        ProxyHarness h = new ProxyHarness();
        for (int i = 0; i < 4; i++) {
            h.replicas.add(ScriptedReplica.start("r" + i));
        }
        String yaml = h.yaml("cache:\n  max_tree_size: " + maxBlocks + "\n  eviction_interval_secs: 1\n"
                + "proxy:\n  decision_log: false\n");
        h.proxy = h.startProxy(ConfigLoader.parse(yaml), new ProxyServer.Options().healthChecks(false));
        for (ScriptedReplica f : h.replicas) {
            f.requests.clear();
        }
        AtomicLong done = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        HttpClient http =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        for (int c = 0; c < clients; c++) {
            int id = c;
            var unused = pool.submit(() -> {
                SplittableRandom r = new SplittableRandom(100 + id);
                long n = 0;
                while (System.nanoTime() < end) {
                    try {
                        HttpResponse<Void> resp = http.send(
                                HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                        .POST(HttpRequest.BodyPublishers.ofString(
                                                ProxyHarness.chat(prompt(r, id * 1_000_000_000L + n++), n % 3 == 0)))
                                        .build(),
                                HttpResponse.BodyHandlers.discarding());
                        if (resp.statusCode() != 200) {
                            errors.incrementAndGet();
                        }
                    } catch (Exception e) {
                        errors.incrementAndGet();
                    }
                    done.incrementAndGet();
                    for (ScriptedReplica f : h.replicas) {
                        if (f.requests.size() > 1000) {
                            f.requests.clear(); // the fakes record requests; keep their memory flat too
                        }
                    }
                }
                return null;
            });
        }
        System.out.println("http: seconds, requests, errors, heap_after_gc_MiB, tree_blocks, tree_nodes");
        long t0 = System.nanoTime();
        int step = Math.max(1, seconds / 10);
        while (System.nanoTime() < end) {
            long wait = Math.min(TimeUnit.SECONDS.toNanos(step), end - System.nanoTime());
            TimeUnit.NANOSECONDS.sleep(Math.max(0, wait)); // a command-line run, not a test: it paces itself
            dev.cart.core.TreeStats tree = h.proxy.routing().router.treeStats();
            System.out.printf(
                    "http: %d, %d, %d, %.1f, %d, %d%n",
                    TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0),
                    done.get(),
                    errors.get(),
                    heapAfterGc() / 1048576.0,
                    tree.size(),
                    tree.nodes());
        }
        pool.shutdown();
        pool.awaitTermination(60, TimeUnit.SECONDS);
        ManagedReplicaSet set = h.proxy.routing().replicas;
        System.out.printf(
                "http: done: %d requests, %d errors, in-flight %d, tree stats equal a recount: %b%n",
                done.get(),
                errors.get(),
                set.totalInFlight(),
                dev.cart.core.TreeProbe.countsMatchRecount(h.proxy.routing().router));
        for (ScriptedReplica f : h.replicas) {
            f.close();
        }
        h.proxy.close();
    }
}
