package dev.cart.jmh.redis;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import dev.cart.core.sync.RouteEvent;
import dev.cart.core.sync.RouteSync;
import dev.cart.redis.RedisRouteSync;
import dev.cart.redis.RedisServerProcess;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * What sync costs a routing decision, split by cause: {@code Router.choose} plus closing the lease, in
 * thread CPU time of the measuring thread, on six routers warm with the same keys, measured in turns
 * (the order rotating from round to round) so that all see the same machine load:
 *
 * <ul>
 *   <li><b>none</b>: no sync, and a tree that holds only the warm keys;</li>
 *   <li><b>none, fed</b>: no sync, but fed, on another thread and at the same rate, the very routes the
 *       other instance learns ({@code Router.record}: local inserts through the same writer path): the
 *       fair baseline for a tree that grows with another instance's routes;</li>
 *   <li><b>publish</b>: publishes its routes to a real {@code redis-server} ({@link RedisRouteSync}),
 *       applies nothing; compared with <em>none</em>;</li>
 *   <li><b>apply</b>: publishes nothing, while a {@link RedisRouteSync} tailer applies the other
 *       instance's route events ({@code Router.applyRemote}); compared with <em>none, fed</em>;</li>
 *   <li><b>both</b>: sync as a proxy runs it, publishing and applying; compared with <em>none, fed</em>
 *       (and with <em>none</em>, which also counts the larger tree);</li>
 *   <li><b>apply here</b>: as <em>apply</em>, but the other instance's routes are handed to
 *       {@code Router.applyRemote} on the thread that feeds <em>none, fed</em>, right after its local insert
 *       of the same route: remote inserts without the tailer. <em>apply here</em> over <em>none, fed</em> is
 *       what remote inserts (and the sync-on router's own publishing checks) cost; <em>apply</em> over
 *       <em>apply here</em> is what it costs that a tailer thread applies them, in batches, as they arrive
 *       from Redis;</li>
 *   <li><b>apply here, 10 at once</b>: as <em>apply here</em>, the routes held back and applied ten at a
 *       time (about what a tailer reads in one batch at this rate): whether bursts of writes cost the
 *       matcher more than the same writes spread out.</li>
 * </ul>
 * The other instance routes fresh conversations at a steady rate, so every one of its decisions is a
 * learned route to apply (the worst case for the applying side: each one takes the tree's writer path).
 * Every applying router learns that instance's routes and no others, so its tree holds what the fed
 * baseline's holds: the publishing-only router writes to a stream of its own, and the applying-only router
 * drops the sync-on router's events. (Applying those too, as an earlier version of this class did, the
 * applying routers learned the measured routers' warm routes on whichever replica each had chosen, held the
 * warm keys on more replicas than the fed baseline, and every match returned more holders: 1.07-1.22× the
 * fed baseline at load 29-32, against 1.01× once they learn only the other instance's routes. That is what
 * knowing more holders costs a match, not what applying costs it.)
 *
 * <p>Run (needs {@code redis-server} on the path): {@code mvn -B -ntp -Pbench -pl cart-jmh -am package
 * -DskipTests}, then {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.redis.DecisionTimeFigures
 * [rounds] [decisions per batch] [remote events per second]}. Not a test: speed is measured here, never asserted.
 */
final class DecisionTimeFigures {

    private static final String STREAM = "cart:timing";
    private static final String SYSTEM = "You are the support assistant of a bicycle shop. Be brief. ".repeat(10);
    private static final String[] NAMES = {
        "none", "none, fed", "publish", "apply", "both", "apply here", "apply here, 10 at once"
    };

    private DecisionTimeFigures() {}

    private static ManagedReplicaSet pool() {
        return ManagedReplicaSet.builder()
                .add("http://vllm-0:8000")
                .add("http://vllm-1:8000")
                .add("http://vllm-2:8000")
                .add("http://vllm-3:8000")
                .build();
    }

    private static Router router(ManagedReplicaSet pool, RouteSync sync) {
        return Router.builder()
                .replicas(pool)
                .policy("cache_aware")
                .sync(sync)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    /**
     * A sync that publishes nothing: the applying-only router's (its events would be its own), which still
     * builds the events a router with a {@link RedisRouteSync} builds.
     */
    private static RouteSync silent(String origin) {
        return new RouteSync() {
            @Override
            public String originId() {
                return origin;
            }

            @Override
            public void publish(RouteEvent event) {}

            @Override
            public Duration repeatInterval() {
                return Duration.ofSeconds(1); // as a RedisRouteSync's: the router builds the same events
            }
        };
    }

    private static PromptKey key(int conversation, int turn) {
        StringBuilder b = new StringBuilder(SYSTEM);
        for (int t = 0; t <= turn; t++) {
            b.append(("user " + conversation + " turn " + t + " asks about gears and brakes. ").repeat(3));
        }
        return PromptKey.ofText(b.toString(), 64);
    }

    // the redis-server launcher's close() waits for the process (InterruptedException): fine for a program
    @SuppressWarnings("try")
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        int batch = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        int remoteRate = args.length > 2 ? Integer.parseInt(args[2]) : 2_000;
        List<PromptKey> keys = new ArrayList<>();
        for (int c = 0; c < 500; c++) {
            for (int t = 0; t < 4; t++) {
                keys.add(key(c, t));
            }
        }
        if (!ManagementFactory.getThreadMXBean().isCurrentThreadCpuTimeSupported()) {
            throw new IllegalStateException("thread CPU time is not supported on this JVM");
        }
        try (RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort())) {
            RedisRouteSync syncBoth = sync(redis, "both", STREAM);
            RedisRouteSync syncApply = sync(redis, "apply-tail", STREAM);
            // the publishing-only router's warm routes go where no measured router applies them
            RedisRouteSync syncPublish = sync(redis, "publish", STREAM + "-publish-only");
            RedisRouteSync syncRemote = sync(redis, "remote", STREAM);
            Router[] routers = {
                router(pool(), RouteSync.NONE),
                router(pool(), RouteSync.NONE),
                router(pool(), syncPublish),
                router(pool(), silent("apply")),
                router(pool(), syncBoth),
                router(pool(), silent("apply-here")),
                router(pool(), silent("apply-here-batched"))
            };
            Router fed = routers[1];
            Router apply = routers[3];
            Router both = routers[4];
            Router applyHere = routers[5];
            Router applyBatched = routers[6];
            Router remote = router(pool(), syncRemote);
            syncBoth.start(both::applyRemote);
            String remoteOrigin = syncRemote.originId();
            syncApply.start(
                    e -> { // the other instance's routes only, not the sync-on router's warm ones
                        if (e.origin().equals(remoteOrigin)) {
                            apply.applyRemote(e);
                        }
                    });
            syncPublish.start(e -> {}); // publishes only
            syncRemote.start(e -> {});
            Await.until(
                    () -> syncBoth.stats().connected()
                            && syncApply.stats().connected()
                            && syncPublish.stats().connected()
                            && syncRemote.stats().connected(),
                    () -> "every sync connected");
            for (PromptKey k : keys) { // the same warm tree on every measured router
                for (Router r : routers) {
                    route(r, k);
                }
            }
            List<RouteEvent> held = new ArrayList<>();
            Thread driver = new Thread(
                    () -> {
                        long period = TimeUnit.SECONDS.toNanos(1) / remoteRate;
                        long next = System.nanoTime();
                        for (int i = 0; !Thread.currentThread().isInterrupted(); i++) {
                            PromptKey k = key(1_000_000 + i, 0); // a fresh conversation: a learned route
                            RouteDecision d = remote.choose(RouteRequest.of(k));
                            if (d.lease() != null) {
                                fed.record(k, same(fed, d.replica())); // the same route, learned locally
                                RouteEvent.Learned learned = new RouteEvent.Learned(
                                        "remote",
                                        System.currentTimeMillis(),
                                        d.replica().id(),
                                        k.unit(),
                                        k.blockSize(),
                                        blocks(k));
                                applyHere.applyRemote(learned); // and applied, on this thread
                                held.add(learned); // and, in tens, by the batching router
                                if (held.size() == 10) { // as a tailer applies a batch read at once
                                    held.forEach(applyBatched::applyRemote);
                                    held.clear();
                                }
                                d.lease().close();
                            }
                            next += period;
                            long wait = next - System.nanoTime();
                            if (wait > 0) {
                                LockSupport.parkNanos(wait);
                            }
                        }
                    },
                    "remote-instance");
            driver.setDaemon(true);
            driver.start();
            Await.until(
                    () -> both.remoteApplyStats().applied() > remoteRate / 10
                            && apply.remoteApplyStats().applied() > remoteRate / 10,
                    () -> "remote events applied: " + both.remoteApplyStats() + "; " + syncBoth.stats() + "; remote "
                            + syncRemote.stats());
            for (Router r : routers) {
                run(r, keys, batch); // warm-up
            }
            double[][] ns = new double[NAMES.length][rounds];
            long[] applied = new long[rounds];
            for (int r = 0; r < rounds; r++) {
                long before = both.remoteApplyStats().applied();
                long t0 = System.nanoTime();
                for (int j = 0; j < NAMES.length; j++) {
                    int v = (j + r) % NAMES.length; // rotate the order: no variant always runs first
                    ns[v][r] = run(routers[v], keys, batch) / (double) batch;
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                applied[r] = Math.round((both.remoteApplyStats().applied() - before) / secs);
                StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "round %d:", r + 1));
                for (int v = 0; v < NAMES.length; v++) {
                    line.append(String.format(Locale.ROOT, " %s %.0f ns,", NAMES[v], ns[v][r]));
                }
                line.append(String.format(Locale.ROOT, " %d remote events/s applied meanwhile", applied[r]));
                System.out.println(line);
            }
            driver.interrupt();
            driver.join(5_000);
            System.out.println("both: " + both.remoteApplyStats() + "; its sync: " + syncBoth.stats()
                    + "; apply: " + apply.remoteApplyStats() + "; the remote instance's sync: "
                    + syncRemote.stats());
            System.out.printf(
                    Locale.ROOT,
                    "%d rounds of %,d decisions; trees: none %s, none fed %s, both %s; remote events applied %s /s;"
                            + " load average %.1f%n",
                    rounds,
                    batch,
                    routers[0].treeStats(),
                    fed.treeStats(),
                    both.treeStats(),
                    range(Arrays.stream(applied).asDoubleStream().toArray(), "%.0f"),
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
            System.out.println("CPU per decision, median [min-max] over the rounds:");
            for (int v = 0; v < NAMES.length; v++) {
                System.out.printf(Locale.ROOT, "  %-10s %s ns%n", NAMES[v], range(ns[v], "%.0f"));
            }
            System.out.println("ratios taken round by round, median [min-max]:");
            ratio("publish / none", ns[2], ns[0]);
            ratio("none, fed / none (a larger tree, written beside)", ns[1], ns[0]);
            ratio("apply / none, fed", ns[3], ns[1]);
            ratio("both / none, fed", ns[4], ns[1]);
            ratio("both / none", ns[4], ns[0]);
            ratio("apply here / none, fed (remote inserts, same thread)", ns[5], ns[1]);
            ratio("apply / apply here (the tailer applying)", ns[3], ns[5]);
            ratio("apply here, 10 at once / apply here (bursts)", ns[6], ns[5]);
            ratio("apply / apply here, 10 at once (the tailer's thread)", ns[3], ns[6]);
            for (AutoCloseable c : new AutoCloseable[] {syncBoth, syncApply, syncPublish, syncRemote, remote}) {
                c.close();
            }
            for (Router r : routers) {
                r.close();
            }
        }
    }

    private static RedisRouteSync sync(RedisServerProcess redis, String id, String stream) {
        return RedisRouteSync.builder().uri(redis.uri()).stream(stream)
                .instanceId(id)
                .build();
    }

    private static long[] blocks(PromptKey k) {
        long[] b = new long[k.blockCount()];
        for (int i = 0; i < b.length; i++) {
            b[i] = k.blockHash(i);
        }
        return b;
    }

    /** {@code r}'s namesake in {@code router}'s pool. */
    private static Replica same(Router router, Replica r) {
        for (Replica x : router.replicas().replicas()) {
            if (x.id().equals(r.id())) {
                return x;
            }
        }
        throw new IllegalStateException("no replica " + r.id());
    }

    private static void ratio(String what, double[] a, double[] b) {
        double[] q = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            q[i] = a[i] / b[i];
        }
        System.out.printf(Locale.ROOT, "  %-50s %s%n", what, range(q, "%.2f"));
    }

    private static void route(Router r, PromptKey k) {
        RouteDecision d = r.choose(RouteRequest.of(k));
        if (d.lease() != null) {
            d.lease().close();
        }
    }

    /** Thread CPU nanoseconds for {@code n} decisions over {@code keys} in order. */
    private static long run(Router r, List<PromptKey> keys, int n) {
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        long t0 = cpu.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            route(r, keys.get(i % keys.size()));
        }
        return cpu.getCurrentThreadCpuTime() - t0;
    }

    /** Median [min-max]. */
    private static String range(double[] v, String format) {
        double[] s = v.clone();
        Arrays.sort(s);
        return String.format(
                Locale.ROOT, format + " [" + format + "–" + format + "]", s[s.length / 2], s[0], s[s.length - 1]);
    }
}
