package dev.cart.redis;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.RouteSync;
import dev.cart.core.Router;
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
 * What sync costs a routing decision: {@code Router.choose} plus closing the lease, in thread CPU time,
 * on a router without sync, one that only publishes its routes (a {@link RedisRouteSync} whose tailer
 * applies nothing), and one with a {@link RedisRouteSync} on a real {@code redis-server} whose tailer is
 * applying another instance's route events at the same time (that instance routes fresh
 * conversations at a steady rate, so every one of its decisions is a learned route to apply here). The
 * routers start from the same warm tree (the same keys routed once) and are measured in turns, pair by
 * pair, so both see the same machine load; the figure is per decision, over a batch.
 *
 * <p>Run: {@code mvn -B -ntp -q -pl cart-redis -am test-compile} and then
 * {@code java -cp "cart-redis/target/test-classes:cart-redis/target/classes:<class path>"
 * dev.cart.redis.DecisionTimeFigures [rounds] [decisions per batch] [remote events per second]}. Not a
 * test: speed is measured here, never asserted.
 */
final class DecisionTimeFigures {

    private static final String SYSTEM = "You are the support assistant of a bicycle shop. Be brief. ".repeat(10);

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

    private static PromptKey key(int conversation, int turn) {
        StringBuilder b = new StringBuilder(SYSTEM);
        for (int t = 0; t <= turn; t++) {
            b.append(("user " + conversation + " turn " + t + " asks about gears and brakes. ").repeat(3));
        }
        return PromptKey.ofText(b.toString(), 64);
    }

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
            RedisRouteSync syncOn = RedisRouteSync.builder().uri(redis.uri()).stream("cart:timing")
                    .instanceId("measured")
                    .build();
            RedisRouteSync syncRemote = RedisRouteSync.builder().uri(redis.uri()).stream("cart:timing")
                    .instanceId("remote")
                    .build();
            RedisRouteSync syncPublishing = RedisRouteSync.builder().uri(redis.uri()).stream("cart:timing")
                    .instanceId("publishing")
                    .build();
            Router off = router(pool(), RouteSync.NONE);
            Router on = router(pool(), syncOn);
            Router publishing = router(pool(), syncPublishing); // publishes its routes, applies nothing
            Router remote = router(pool(), syncRemote);
            syncOn.start(on::applyRemote);
            syncRemote.start(e -> {}); // publishes only
            syncPublishing.start(e -> {});
            Await.until(
                    () -> syncOn.stats().connected() && syncRemote.stats().connected(), () -> "both syncs connected");
            for (PromptKey k : keys) { // the same warm tree on both measured routers
                route(off, k);
                route(on, k);
                route(publishing, k);
            }
            Thread driver = new Thread(
                    () -> {
                        long period = TimeUnit.SECONDS.toNanos(1) / remoteRate;
                        long next = System.nanoTime();
                        for (int i = 0; !Thread.currentThread().isInterrupted(); i++) {
                            route(remote, key(1_000_000 + i, 0)); // a fresh conversation: a learned route
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
                    () -> on.remoteApplyStats().applied() > remoteRate / 10,
                    () -> "remote events applied: " + on.remoteApplyStats() + "; " + syncOn.stats() + "; remote "
                            + syncRemote.stats());
            run(off, keys, batch); // warm-up of both
            run(on, keys, batch);
            run(publishing, keys, batch);
            double[] pubNs = new double[rounds];
            double[] offNs = new double[rounds];
            double[] onNs = new double[rounds];
            long[] applied = new long[rounds];
            for (int r = 0; r < rounds; r++) {
                offNs[r] = run(off, keys, batch) / (double) batch;
                pubNs[r] = run(publishing, keys, batch) / (double) batch;
                long before = on.remoteApplyStats().applied();
                long t0 = System.nanoTime();
                onNs[r] = run(on, keys, batch) / (double) batch;
                double secs = (System.nanoTime() - t0) / 1e9;
                applied[r] = Math.round((on.remoteApplyStats().applied() - before) / secs);
                System.out.printf(
                        Locale.ROOT,
                        "round %d: off %.0f ns, publishing only %.0f ns, on %.0f ns CPU per decision (%.2fx); %d"
                                + " remote events/s applied meanwhile%n",
                        r + 1,
                        offNs[r],
                        pubNs[r],
                        onNs[r],
                        onNs[r] / offNs[r],
                        applied[r]);
            }
            driver.interrupt();
            driver.join(5_000);
            System.out.println("measured router's remote events: " + on.remoteApplyStats() + "; its sync: "
                    + syncOn.stats() + "; the remote instance's sync: " + syncRemote.stats());
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratio[r] = onNs[r] / offNs[r];
            }
            System.out.printf(
                    Locale.ROOT,
                    "%d rounds of %,d decisions; tree on %s, off %s; CPU per decision: off %s ns, publishing only"
                            + " %s ns, on %s ns, on/off %s; remote events applied %s /s; load average %.1f%n",
                    rounds,
                    batch,
                    on.treeStats(),
                    off.treeStats(),
                    range(offNs, "%.0f"),
                    range(pubNs, "%.0f"),
                    range(onNs, "%.0f"),
                    range(ratio, "%.2f"),
                    range(Arrays.stream(applied).asDoubleStream().toArray(), "%.0f"),
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
            for (AutoCloseable c :
                    new AutoCloseable[] {syncOn, syncRemote, syncPublishing, off, on, publishing, remote}) {
                c.close();
            }
        }
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
