package dev.cart.jmh.redis;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.spi.Replica;
import dev.cart.redis.RedisLoadView;
import dev.cart.redis.RedisServerProcess;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How old the shared load view is when a policy reads it: the time from a change of one instance's
 * in-flight count (a slot taken, then given back) to the moment another instance's {@link RedisLoadView}
 * shows it, alternately with the change told to the view ({@link RedisLoadView#localLoadChanged}, as the
 * router does) and left to the view's next look, on a real {@code redis-server} on loopback. Changes are made at random moments (0 to 10 ms
 * apart, so they fall anywhere in the publisher's 2 ms gap); the reader
 * polls the view every 20 us (its own oversleep counts in the figure: an upper bound). This is the age the simulation's "the others' load as it was N ms
 * before" stands for ({@code ScaleOutReport}).
 *
 * <p>Run (needs {@code redis-server} on the path): {@code mvn -B -ntp -Pbench -pl cart-jmh -am package
 * -DskipTests}, then {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.redis.LoadViewAgeFigures
 * [changes]}. Not a test: timing is measured here, never asserted.
 */
final class LoadViewAgeFigures {

    private LoadViewAgeFigures() {}

    // the redis-server launcher's close() waits for the process (InterruptedException): fine for a program
    @SuppressWarnings("try")
    public static void main(String[] args) throws Exception {
        int changes = args.length > 0 ? Integer.parseInt(args[0]) : 1_000;
        try (RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort())) {
            ManagedReplicaSet poolA =
                    ManagedReplicaSet.builder().add("http://vllm-0:8000").build();
            ManagedReplicaSet poolB =
                    ManagedReplicaSet.builder().add("http://vllm-0:8000").build();
            RedisLoadView a = view(redis.uri(), "a", poolA);
            RedisLoadView b = view(redis.uri(), "b", poolB);
            Await.until(() -> a.peers() == 1 && b.peers() == 1, () -> "both views hear each other");
            Replica r = poolA.replicas().get(0);
            SplittableRandom random = new SplittableRandom(1);
            long[][] ages = new long[2][2 * changes]; // [told, looked] per change
            int[] n = new int[2];
            for (int i = 0; i < 2 * changes; i++) {
                int told = i % 2; // alternately told (as the router tells it) and left to its next look
                LockSupport.parkNanos(random.nextLong(TimeUnit.MILLISECONDS.toNanos(10)));
                Replica.Admission slot = r.tryAcquire();
                long t0 = System.nanoTime();
                if (told == 0) {
                    a.localLoadChanged();
                }
                ages[told][n[told]++] = until(b, 1) - t0;
                LockSupport.parkNanos(random.nextLong(TimeUnit.MILLISECONDS.toNanos(10)));
                slot.release(dev.cart.core.Outcome.SUCCESS);
                long t1 = System.nanoTime();
                if (told == 0) {
                    a.localLoadChanged();
                }
                ages[told][n[told]++] = until(b, 0) - t1;
            }
            for (int k = 0; k < 2; k++) {
                long[] v = ages[k];
                Arrays.sort(v, 0, n[k]);
                System.out.printf(
                        Locale.ROOT,
                        "%s: %d changes, age of the other instance's view p50 %.2f ms, p90 %.2f, p99 %.2f, max %.2f%n",
                        k == 0 ? "told (localLoadChanged)" : "left to the next look",
                        n[k],
                        v[n[k] / 2] / 1e6,
                        v[(int) (n[k] * 0.9)] / 1e6,
                        v[(int) (n[k] * 0.99)] / 1e6,
                        v[n[k] - 1] / 1e6);
            }
            System.out.printf(
                    Locale.ROOT,
                    "load average %.1f%n",
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
            a.close();
            b.close();
        }
    }

    /** Polls until {@code view} shows {@code inFlight} on the replica; returns when (nanoTime). */
    private static long until(RedisLoadView view, long inFlight) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (view.remoteInFlight("http://vllm-0:8000") != inFlight) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the view never showed " + inFlight);
            }
            LockSupport.parkNanos(20_000); // polls every 20 us without taking a core from the view's threads
        }
        return System.nanoTime();
    }

    private static RedisLoadView view(String uri, String id, ManagedReplicaSet pool) {
        return RedisLoadView.builder()
                .uri(uri)
                .pool("cart:age")
                .instanceId(id)
                .replicas(pool)
                .interval(Duration.ofMillis(100))
                .ttl(Duration.ofSeconds(1))
                .build()
                .start();
    }
}
