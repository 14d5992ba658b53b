package dev.cart.jmh.core;

import dev.cart.core.PromptKey;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Tree {@code match} and {@code insert} on the fixed workload ({@link TreeWorkload}), the concurrent tree
 * against the same tree behind one lock ({@link LockedTree}) in the same run (as Caffeine's
 * GetPutBenchmark compares caches): the baseline differs only in how it is shared between threads.
 *
 * <ul>
 *   <li>{@code matchRepeat}: a query that repeats an inserted key.</li>
 *   <li>{@code matchUnseen}: a query sharing a prefix with inserted keys but ending in unseen text.</li>
 *   <li>{@code insertRepeat}: re-recording a key its replica already holds (refreshes times).</li>
 *   <li>{@code insertFresh}: recording a key whose last two blocks were never seen (a new leaf, often a
 *       split); includes one array copy to make the fresh key.</li>
 *   <li>{@code mixed}: two threads, one matching unseen queries ({@code mixedMatch}), one inserting fresh
 *       keys ({@code mixedInsert}). Its speed-up over one thread is the time one thread would take for
 *       the same work (the same number of matches and of inserts, at the single-thread costs
 *       {@code matchUnseen} and {@code insertFresh}) divided by the time the two threads took:
 *       {@code matchUnseen / mixedMatch + insertFresh / mixedInsert} in ns/op (2.0 is perfect scaling).</li>
 *   <li>{@code matchGrown}: {@code matchUnseen} on a tree that has also taken {@code grown} fresh keys
 *       ({@link GrownTrees}). The mix's inserter grows the tree all through an iteration (by some 450,000
 *       fresh leaves a second), and the fresh variants of keys no longer than their shared prefix add
 *       nodes and tables to the chains every match walks, so a match in the mix walks a larger tree than
 *       {@code matchUnseen} does; {@code matchGrown} is the single-thread cost of the mix's matches, and
 *       {@code matchGrown / mixedMatch + insertFresh / mixedInsert} the speed-up with like compared with
 *       like ({@code insertFresh} grows its tree as the mix does).</li>
 * </ul>
 *
 * <p>The tree is rebuilt before every iteration ({@link Trees#fill()}), outside the measurement, in one
 * of two heap layouts ({@code layout}): {@code built}, as it lies after being built while the process
 * allocates other things (here 1 KB of short-lived garbage between two inserts, as a server handling
 * requests does), with no collection after the fill; {@code compacted}, after a full collection has
 * copied the tree together. Where the nodes lie moves {@code match} several-fold: every level is a few
 * dependent loads, each a cache miss on a tree larger than the cache. (The first young collection
 * during an iteration also copies a {@code built} tree together; {@code -prof gc} shows how many ran.)
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
public class TreeBenchmark {

    @State(Scope.Benchmark)
    public static class Trees {
        @Param({"concurrent", "locked"})
        public String impl;

        @Param({"compacted", "built"})
        public String layout;

        TreeWorkload w;
        PrefixTree tree;
        LockedTree locked;
        /** Where the garbage allocated between inserts goes (read once, so it is not optimised away). */
        static volatile Object sink;

        @Setup(Level.Trial)
        public void workload() {
            w = new TreeWorkload(42);
        }

        /**
         * A fresh tree holding the workload before every iteration, so that fresh-key inserts (a new leaf
         * each) grow it by at most one iteration's worth and every iteration measures the same tree: the
         * workload's keys, then {@link #grown()} fresh keys (in the layout's way), then the layout's collection.
         */
        @Setup(Level.Iteration)
        public void fill() {
            int grown = grown();
            tree = null;
            locked = null;
            System.gc(); // the previous iteration's tree goes before this one is built
            PrefixTree t = PrefixTree.builder().maxSize(Long.MAX_VALUE).build();
            boolean compacted = layout.equals("compacted");
            for (int k = 0; k < TreeWorkload.KEYS; k++) {
                t.insert(w.keys[k], w.owners[k]);
                if (!compacted) {
                    sink = new byte[1024];
                }
            }
            java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
            for (int i = 0; i < grown; i++) {
                int k = rnd.nextInt(TreeWorkload.KEYS);
                t.insert(w.freshVariant(k, -1 - i, 2), w.owners[k]);
                if (!compacted) {
                    sink = new byte[1024];
                }
            }
            if (compacted) {
                System.gc();
            }
            if (impl.equals("concurrent")) {
                tree = t;
            } else {
                locked = new LockedTree(t);
            }
        }

        /** Fresh keys the tree takes after the fill: none here ({@link GrownTrees} says how many). */
        int grown() {
            return 0;
        }

        Match match(PromptKey key) {
            return tree != null ? tree.match(key) : locked.match(key);
        }

        void insert(PromptKey key, Replica r) {
            if (tree != null) {
                tree.insert(key, r);
            } else {
                locked.insert(key, r);
            }
        }
    }

    /** {@link Trees} that has also taken {@code grown} fresh keys before each iteration (for {@code matchGrown}). */
    @State(Scope.Benchmark)
    public static class GrownTrees extends Trees {
        /**
         * 15 fresh keys per key: the walks' shape stops changing after a few per key ({@link TreeShape}), so a
         * tree grown by fewer than the mix's inserter adds in an iteration (some 450,000) walks alike.
         */
        @Param({"150000"})
        public int grown;

        @Override
        int grown() {
            return grown;
        }
    }

    /**
     * Each thread walks the keys from its own random starting point (as Caffeine's GetPutBenchmark does):
     * two threads starting at the same key would stay in step and touch the same nodes at the same moment,
     * which measures that coincidence rather than the tree.
     */
    @State(Scope.Thread)
    public static class Cursor {
        int i = java.util.concurrent.ThreadLocalRandom.current().nextInt(TreeWorkload.KEYS);
        long salt = Thread.currentThread().getId() << 40;

        int next() {
            int k = i;
            i = k + 1 == TreeWorkload.KEYS ? 0 : k + 1;
            return k;
        }
    }

    @Benchmark
    public Match matchRepeat(Trees s, Cursor c) {
        return s.match(s.w.keys[c.next()]);
    }

    @Benchmark
    public Match matchUnseen(Trees s, Cursor c) {
        return s.match(s.w.unseen[c.next()]);
    }

    @Benchmark
    public Match matchGrown(GrownTrees s, Cursor c) {
        return s.match(s.w.unseen[c.next()]);
    }

    @Benchmark
    public void insertRepeat(Trees s, Cursor c) {
        int k = c.next();
        s.insert(s.w.keys[k], s.w.owners[k]);
    }

    @Benchmark
    public void insertFresh(Trees s, Cursor c) {
        int k = c.next();
        s.insert(s.w.freshVariant(k, ++c.salt, 2), s.w.owners[k]);
    }

    @Benchmark
    @Group("mixed")
    @GroupThreads(1)
    public Match mixedMatch(Trees s, Cursor c) {
        return s.match(s.w.unseen[c.next()]);
    }

    @Benchmark
    @Group("mixed")
    @GroupThreads(1)
    public void mixedInsert(Trees s, Cursor c) {
        int k = c.next();
        s.insert(s.w.freshVariant(k, ++c.salt, 2), s.w.owners[k]);
    }
}
