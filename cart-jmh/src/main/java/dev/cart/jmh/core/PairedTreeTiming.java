package dev.cart.jmh.core;

import dev.cart.core.internal.KeyAccess;
import dev.cart.core.internal.PrefixTree;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.ToLongBiFunction;

/**
 * {@link TreeCpuTiming}'s operations for two builds in one JVM, for a shared, loaded machine where two
 * separate runs are not comparable: each build's {@code benchmarks.jar} is loaded by a class loader of
 * its own (with this jar behind it, so an older build without {@link Ops} uses this one, inside its own
 * package, where it reaches the package-private {@code PrefixTree}), and their rounds alternate (A B,
 * B A, ...), each timed by the thread's CPU time. Every three rounds both builds get a fresh tree of
 * {@link TreeWorkload} (built in turn first) in the same heap layout ({@code compacted}: a full collection after the fill;
 * {@code built}: 1 KB of other allocation between inserts, no collection after).
 *
 * <p>Besides {@link TreeBenchmark}'s single-thread operations, the two-thread mix: {@code mixedMatch} is
 * the CPU time per {@code matchUnseen} of a thread matching while a second thread inserts fresh keys
 * without pause; {@code mixedInsert} the CPU time per {@code insertFresh} of a thread inserting while a
 * second one matches. The mix's speed-up by {@link TreeBenchmark}'s formula is then {@code matchUnseen /
 * mixedMatch + insertFresh / mixedInsert} (2.0: no interference), in CPU time, so that waiting for a core
 * does not count; what the two threads do to each other's caches and the matcher's walks again do
 * count. (A parked writer would not count either, but there is one writer.) On a loaded machine the two
 * threads overlap less than on an idle one, so the interference it shows is a lower bound.
 *
 * <p>Prints per operation and layout the minimum and median CPU nanoseconds per operation of each build
 * and the median and range of the per-round ratio B/A. Run: {@code java -Xms2g -Xmx2g -cp
 * cart-jmh/target/benchmarks.jar dev.cart.jmh.core.PairedTreeTiming A.jar B.jar [rounds [perRound]]}.
 * {@code perRound} (2,000 by default) is the number of operations a round times: with 2,000, most fresh
 * inserts are the first split of their key since the last fill; with 100,000, each key has had some 30
 * fresh leaves between two fills, as in {@link TreeBenchmark}'s one-second iterations (400,000 fresh
 * inserts), where most of them add a child to a node that already has a table.
 */
public final class PairedTreeTiming {

    /**
     * With {@code -Dcart.tree.apart=true}, also {@code mixedApart}: {@code mixedMatch} with the second thread
     * inserting into a tree of its own (filled alike), so that it shares no line of the matched tree: what
     * is left of the matcher's slowdown is the machine's (shared cores and caches), not the tree's. And
     * {@code mixedRead}: {@code mixedMatch} with the second thread matching the fresh keys it would insert, in
     * the same tree: the inserter's walks (and its key copies) without any of its writes. And
     * {@code mixedInsertApart}: {@code mixedInsert} with the second thread matching in a tree of its own. And
     * {@code matchGrown}: {@code matchUnseen} on one thread, after as many fresh inserts (untimed, on the same
     * thread) as half the round's matches, about what {@code mixedMatch}'s inserter makes meanwhile: the
     * matches of the mix on a tree grown alike, with no second thread.
     */
    private static final boolean APART = Boolean.getBoolean("cart.tree.apart");
    /**
     * With {@code -Dcart.tree.longFresh=true}, fresh keys (every operation that makes them) are variants
     * only of keys that run at least two blocks past their shared prefix ({@link TreeWorkload#PREFIX_CHARS},
     * under 32 blocks) besides the two fresh ones, so that no fresh leaf lands on a shared prefix's chain of
     * nodes.
     */
    private static final boolean LONG_FRESH = Boolean.getBoolean("cart.tree.longFresh");

    /** The operations timed: {@code -Dcart.tree.ops=a,b} picks some (in that order), else all. */
    private static final String[] OPS = System.getProperty("cart.tree.ops") != null
            ? System.getProperty("cart.tree.ops").split(",")
            : APART
                    ? new String[] {
                        "matchRepeat",
                        "matchUnseen",
                        "insertRepeat",
                        "insertFresh",
                        "mixedMatch",
                        "mixedInsert",
                        "mixedApart",
                        "mixedRead",
                        "matchGrown",
                        "mixedInsertApart"
                    }
                    : new String[] {
                        "matchRepeat", "matchUnseen", "insertRepeat", "insertFresh", "mixedMatch", "mixedInsert"
                    };

    private static final int PER_ROUND = 2_000; // unless given
    /**
     * Rounds between two fills: where a tree lies in the heap moves its operations by tens of percent and
     * differs from one fill to the next, so each build gets several fills, in turn first.
     */
    private static final int REFILL = 3;

    private PairedTreeTiming() {}

    @SuppressWarnings({"unchecked", "rawtypes"}) // an array of a generic interface
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: PairedTreeTiming A.jar B.jar [rounds [perRound]]");
            System.exit(2);
        }
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 21;
        int perRound = args.length > 3 ? Integer.parseInt(args[3]) : PER_ROUND;
        URL own = PairedTreeTiming.class.getProtectionDomain().getCodeSource().getLocation();
        ToLongBiFunction<String, Integer>[] ops = new ToLongBiFunction[2];
        for (int j = 0; j < 2; j++) {
            URLClassLoader loader = new URLClassLoader(
                    new URL[] {Path.of(args[j]).toUri().toURL(), own}, ClassLoader.getPlatformClassLoader());
            ops[j] = (ToLongBiFunction<String, Integer>)
                    loader.loadClass(Ops.class.getName()).getConstructor().newInstance();
        }
        System.out.println(
                "op            layout     A min / median ns   B min / median ns   B/A median (range)   load");
        for (int pass = 0; pass < 2; pass++) { // the first pass warms the JIT up and is not printed
            for (String layout : new String[] {"compacted", "built"}) {
                for (String op : OPS) {
                    int n = pass == 0 ? 2 : rounds;
                    double[][] t = new double[2][n];
                    double[] ratio = new double[n];
                    for (int r = 0; r < n; r++) {
                        if (r % REFILL == 0) { // both builds' trees anew, built in turn first
                            for (int k = 0; k < 2; k++) {
                                int j = (r / REFILL & 1) == 0 ? k : 1 - k;
                                long unused = ops[j].applyAsLong("fill:" + layout, 0);
                            }
                        }
                        for (int k = 0; k < 2; k++) {
                            int j = (r & 1) == 0 ? k : 1 - k;
                            t[j][r] = (double) ops[j].applyAsLong(op, perRound) / perRound;
                        }
                        ratio[r] = t[1][r] / t[0][r];
                    }
                    if (pass == 1) {
                        for (double[] x : t) {
                            Arrays.sort(x);
                        }
                        Arrays.sort(ratio);
                        System.out.printf(
                                "%-13s %-9s  %7.0f / %7.0f     %7.0f / %7.0f     %.3f (%.2f-%.2f)    %s%n",
                                op,
                                layout,
                                t[0][0],
                                t[0][n / 2],
                                t[1][0],
                                t[1][n / 2],
                                ratio[n / 2],
                                ratio[0],
                                ratio[n - 1],
                                Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
                    }
                }
            }
        }
    }

    /**
     * One build's tree and operations, made inside that build's class loader. {@code applyAsLong(op, n)}
     * runs {@code n} operations of kind {@code op} and returns the calling thread's CPU nanoseconds for
     * them; {@code fill:<layout>} builds a fresh tree and returns 0.
     */
    public static final class Ops implements ToLongBiFunction<String, Integer> {
        private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
        private static volatile Object sink;

        private final TreeWorkload w = new TreeWorkload(42);
        private final SplittableRandom rnd = new SplittableRandom(1);
        private volatile PrefixTree tree;
        /** The second thread's own tree for {@code mixedApart}; null unless {@code cart.tree.apart}. */
        private volatile PrefixTree apart;

        private long salt;

        public Ops() {}

        @Override
        public long applyAsLong(String op, Integer count) {
            int n = count;
            if (op.startsWith("fill:")) {
                tree = null;
                fill(op.substring(5).equals("built"));
                return 0;
            }
            int[] ks = new int[n];
            for (int i = 0; i < n; i++) {
                ks[i] = rnd.nextInt(TreeWorkload.KEYS);
            }
            switch (op) {
                case "mixedMatch":
                    return alongside(Helper.INSERTS, tree, () -> run("matchUnseen", ks));
                case "mixedApart":
                    return alongside(Helper.INSERTS, apart, () -> run("matchUnseen", ks));
                case "mixedRead":
                    return alongside(Helper.READS_FRESH, tree, () -> run("matchUnseen", ks));
                case "mixedInsert":
                    return alongside(Helper.MATCHES, tree, () -> run("insertFresh", ks));
                case "mixedInsertApart":
                    return alongside(Helper.MATCHES, apart, () -> run("insertFresh", ks));
                case "matchGrown": {
                    PrefixTree t = tree;
                    for (int i = 0; i < n / 2; i++) {
                        int k = freshKey(rnd);
                        t.insert(w.freshVariant(k, ++salt, 2), w.owners[k]);
                    }
                    return run("matchUnseen", ks);
                }
                default:
                    return run(op, ks);
            }
        }

        private long run(String op, int[] ks) {
            PrefixTree t = tree;
            long t0 = MX.getCurrentThreadCpuTime();
            switch (op) {
                case "matchRepeat":
                    for (int k : ks) {
                        sink = t.match(w.keys[k]);
                    }
                    break;
                case "matchUnseen":
                    for (int k : ks) {
                        sink = t.match(w.unseen[k]);
                    }
                    break;
                case "insertRepeat":
                    for (int k : ks) {
                        t.insert(w.keys[k], w.owners[k]);
                    }
                    break;
                case "insertFresh":
                    for (int i = 0; i < ks.length; i++) {
                        int k = LONG_FRESH ? freshKey(rnd) : ks[i];
                        t.insert(w.freshVariant(k, ++salt, 2), w.owners[k]);
                    }
                    break;
                default:
                    throw new IllegalArgumentException(op);
            }
            long ns = MX.getCurrentThreadCpuTime() - t0;
            return sink == this ? -ns : ns; // reads the sink, so the results count as used
        }

        /** A key to make a fresh variant of: any, or with {@code cart.tree.longFresh} one past its shared prefix. */
        private int freshKey(SplittableRandom r) {
            for (; ; ) {
                int k = r.nextInt(TreeWorkload.KEYS);
                if (!LONG_FRESH
                        || KeyAccess.blocks(w.keys[k]).length >= TreeWorkload.PREFIX_CHARS / TreeWorkload.BLOCK + 4) {
                    return k;
                }
            }
        }

        private interface Timed {
            long run();
        }

        /** What the second thread does: insert fresh keys, match unseen queries, or match the fresh keys. */
        private enum Helper {
            INSERTS,
            MATCHES,
            READS_FRESH
        }

        /**
         * Runs {@code measured} on this thread while a second thread, started first, works on {@code t}
         * as {@code helper} says, without pause until it is done.
         */
        private long alongside(Helper helper, PrefixTree t, Timed measured) {
            boolean[] stop = {false};
            long[] used = {0}; // the second thread's results, summed so that they count as used
            Object lock = new Object();
            java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
            Thread second = new Thread(() -> {
                SplittableRandom r = new SplittableRandom(7);
                long s = (1L << 40) + salt;
                long sum = 0;
                started.countDown();
                for (int i = 0; ; i++) {
                    if ((i & 63) == 0) {
                        synchronized (lock) {
                            if (stop[0]) {
                                used[0] = sum;
                                return;
                            }
                        }
                    }
                    int k = helper == Helper.MATCHES ? r.nextInt(TreeWorkload.KEYS) : freshKey(r);
                    switch (helper) {
                        case MATCHES: // summed, not stored in the sink: the measured thread stores there
                            sum += t.match(w.unseen[k]).matchedLength();
                            break;
                        case READS_FRESH:
                            sum += t.match(w.freshVariant(k, ++s, 2)).matchedLength();
                            break;
                        default:
                            t.insert(w.freshVariant(k, ++s, 2), w.owners[k]);
                    }
                }
            });
            second.start();
            try {
                started.await();
                long ns = measured.run();
                synchronized (lock) {
                    stop[0] = true;
                }
                second.join();
                synchronized (lock) {
                    return used[0] == Long.MIN_VALUE ? ns + 1 : ns;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        private void fill(boolean built) {
            apart = null;
            System.gc();
            PrefixTree t = filled(built);
            if (APART) {
                apart = filled(built);
            }
            if (!built) {
                System.gc();
            }
            tree = t;
        }

        private PrefixTree filled(boolean built) {
            PrefixTree t = PrefixTree.builder().maxSize(Long.MAX_VALUE).build();
            for (int k = 0; k < TreeWorkload.KEYS; k++) {
                t.insert(w.keys[k], w.owners[k]);
                if (built) {
                    sink = new byte[1024];
                }
            }
            return t;
        }
    }
}
