package dev.cart.jmh.core;

import dev.cart.core.internal.PrefixTree;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * A companion to {@link TreeBenchmark} for a shared, loaded machine: the single-thread operations timed by
 * the thread's CPU time ({@code ThreadMXBean.getCurrentThreadCpuTime}), so that time spent waiting for a
 * core does not count (the slowdown of sharing caches with other work still does). For each heap layout
 * of {@link TreeBenchmark} ({@code compacted}: after a full collection; {@code built}: as built among
 * other allocations, no collection after), a fresh tree of the workload, then 15 rounds of 2,000
 * operations after 20,000 of warm-up; prints the minimum and median per operation. No collection is
 * forced between rounds, so the {@code built} layout lasts until the first young collection, as in a
 * server. Run: {@code java -Xms2g -Xmx2g -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.core.TreeCpuTiming}.
 */
public final class TreeCpuTiming {

    private interface Op {
        void run(int k);
    }

    private static volatile Object sink;

    private TreeCpuTiming() {}

    public static void main(String[] args) {
        TreeWorkload w = new TreeWorkload(42);
        System.out.println("layout      matchRepeat (ns)    matchUnseen (ns)    insertRepeat (ns)   insertFresh (ns)");
        for (int pass = 0; pass < 2; pass++) { // the first pass warms the JIT up and is not printed
            for (String layout : new String[] {"compacted", "built"}) {
                PrefixTree[] tree = {fill(w, layout)};
                long[] salt = {pass * 1_000_000_000L};
                double[] mr = time(k -> sink = tree[0].match(w.keys[k]));
                double[] mu = time(k -> sink = tree[0].match(w.unseen[k]));
                double[] ir = time(k -> tree[0].insert(w.keys[k], w.owners[k]));
                tree[0] = fill(w, layout);
                double[] fr = time(k -> tree[0].insert(w.freshVariant(k, ++salt[0], 2), w.owners[k]));
                if (pass == 1) {
                    System.out.printf(
                            "%-9s  %7.0f / %7.0f   %7.0f / %7.0f   %7.0f / %7.0f   %7.0f / %7.0f%n",
                            layout, mr[0], mr[1], mu[0], mu[1], ir[0], ir[1], fr[0], fr[1]);
                }
            }
        }
    }

    private static PrefixTree fill(TreeWorkload w, String layout) {
        System.gc();
        PrefixTree t = PrefixTree.builder().maxSize(Long.MAX_VALUE).build();
        for (int k = 0; k < TreeWorkload.KEYS; k++) {
            t.insert(w.keys[k], w.owners[k]);
            if (layout.equals("built")) {
                sink = new byte[1024];
            }
        }
        if (layout.equals("compacted")) {
            System.gc();
        }
        return t;
    }

    /** Minimum and median CPU nanoseconds per operation over 15 rounds of 2,000, keys in a random walk. */
    private static double[] time(Op op) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(1);
        for (int i = 0; i < 20_000; i++) {
            op.run(rnd.nextInt(TreeWorkload.KEYS));
        }
        long[] t = new long[15];
        int[] ks = new int[2_000];
        for (int round = 0; round < t.length; round++) {
            for (int i = 0; i < ks.length; i++) {
                ks[i] = rnd.nextInt(TreeWorkload.KEYS);
            }
            long t0 = mx.getCurrentThreadCpuTime();
            for (int k : ks) {
                op.run(k);
            }
            t[round] = (mx.getCurrentThreadCpuTime() - t0) / ks.length;
        }
        Arrays.sort(t);
        return new double[] {t[0], t[t.length / 2]};
    }
}
