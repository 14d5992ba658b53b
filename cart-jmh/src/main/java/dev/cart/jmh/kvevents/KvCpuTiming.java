package dev.cart.jmh.kvevents;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;

/**
 * The ingest and lookup benchmarks' operations timed by the thread's CPU time instead of the wall clock, for a
 * machine shared with other work (where a wall-clock score counts the time the thread waited for a core). The
 * same set-ups as {@link IngestBenchmark} and {@link LookupBenchmark}. Ingest: CPU nanoseconds per block over
 * batches of 20,000 invocations (each one batch of 16 blocks stored and one of 16 removed). Lookup: each
 * lookup of the 500-block prompt (held whole, then diverging after 32 blocks) timed on its own (the CPU clock's own cost, about a microsecond, included);
 * p50 and p99 per run. Several runs in one JVM after a warm-up; a line per run.
 *
 * <p>Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.kvevents.KvCpuTiming [runs]}.
 */
public final class KvCpuTiming {

    private KvCpuTiming() {}

    public static void main(String[] args) {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();

        IngestBenchmark ingest = new IngestBenchmark();
        ingest.blocks = 16;
        ingest.setUp();
        for (int i = 0; i < 300_000; i++) {
            ingest.storeAndEvict();
        }
        for (int r = 0; r < runs; r++) {
            int n = 20_000;
            long c0 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < n; i++) {
                ingest.storeAndEvict();
            }
            long cpu = mx.getCurrentThreadCpuTime() - c0;
            double perBlock = (double) cpu / (n * 32L);
            System.out.printf(
                    Locale.ROOT,
                    "ingest run %d: %.0f CPU ns per block, %.0f blocks per CPU second%n",
                    r + 1,
                    perBlock,
                    1e9 / perBlock);
        }

        long sink = 0;
        for (String shape : new String[] {"held", "diverging"}) {
            LookupBenchmark lookup = new LookupBenchmark();
            lookup.promptBlocks = 500;
            lookup.shape = shape;
            lookup.setUp();
            for (int i = 0; i < 50_000; i++) {
                lookup.lookup();
            }
            for (int r = 0; r < runs; r++) {
                int n = 20_000;
                long[] t = new long[n];
                for (int i = 0; i < n; i++) {
                    long c0 = mx.getCurrentThreadCpuTime();
                    sink += lookup.lookup().promptTokens();
                    t[i] = mx.getCurrentThreadCpuTime() - c0;
                }
                Arrays.sort(t);
                System.out.printf(
                        Locale.ROOT,
                        "lookup run %d (500 blocks, %s): p50 %.1f µs, p99 %.1f µs CPU%n",
                        r + 1,
                        shape,
                        t[n / 2] / 1e3,
                        t[(int) Math.ceil(n * 0.99) - 1] / 1e3);
            }
        }
        long c0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < 1000; i++) {
            sink += mx.getCurrentThreadCpuTime() & 1;
        }
        System.out.printf(
                Locale.ROOT,
                "the CPU clock's own cost: %.2f µs per read (%d)%n",
                (mx.getCurrentThreadCpuTime() - c0) / 1e6,
                sink & 1);
    }
}
