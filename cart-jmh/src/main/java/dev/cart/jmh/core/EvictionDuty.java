package dev.cart.jmh.core;

import dev.cart.core.EvictionReport;
import dev.cart.core.internal.PrefixTree;

/**
 * How much of the time the evictor thread of {@code EvictionBenchmark.underEviction} spends inside passes
 * (the rest is its inserts), so that the matcher's percentiles there can be read: with passes running a
 * fraction {@code f} of the time, about {@code f} of the sampled matches ran concurrently with a pass.
 * Runs the evictor's loop alone for 10 s after 5 s of warm-up and prints the passes' count, mean and
 * maximum duration and their share of the time.
 * Run: {@code java -Xms2g -Xmx2g -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.core.EvictionDuty}.
 */
public final class EvictionDuty {

    private EvictionDuty() {}

    public static void main(String[] args) {
        TreeWorkload w = new TreeWorkload(42);
        PrefixTree tree = PrefixTree.builder().maxSize(300_000).build();
        for (int k = 0; k < TreeWorkload.KEYS; k++) {
            tree.insert(w.keys[k], w.owners[k]);
        }
        tree.evict();
        long salt = 0;
        int next = 0;
        for (int phase = 0; phase < 2; phase++) {
            long end = System.nanoTime() + (phase == 0 ? 5 : 10) * 1_000_000_000L;
            long start = System.nanoTime();
            long inPasses = 0;
            long max = 0;
            long passes = 0;
            long evicted = 0;
            while (System.nanoTime() < end) {
                int k = next;
                next = k + 1 == TreeWorkload.KEYS ? 0 : k + 1;
                tree.insert(w.freshVariant(k, ++salt, 4), w.owners[k]);
                if (salt % 2_000 == 0) {
                    EvictionReport r = tree.evict();
                    inPasses += r.durationNanos();
                    max = Math.max(max, r.durationNanos());
                    passes++;
                    evicted += r.removed();
                }
            }
            long wall = System.nanoTime() - start;
            if (phase == 1) {
                System.out.printf(
                        "passes=%d mean=%.2f ms max=%.2f ms entries evicted per pass=%.0f share of time in "
                                + "passes=%.1f%% tree size=%d blocks%n",
                        passes,
                        inPasses / 1e6 / passes,
                        max / 1e6,
                        (double) evicted / passes,
                        100.0 * inPasses / wall,
                        tree.stats().size());
            }
        }
    }
}
