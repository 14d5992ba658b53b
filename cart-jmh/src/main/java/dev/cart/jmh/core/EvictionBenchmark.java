package dev.cart.jmh.core;

import dev.cart.core.EvictionReport;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Match;
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
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Eviction: the cost of one pass, and what a pass running in parallel does to {@code match} latency.
 *
 * <ul>
 *   <li>{@code pass}: one pass over the fixed workload's tree (10,000 keys, about 408,000 blocks) with the
 *       cap at half its size, so the pass sorts every entry and evicts about half the blocks.</li>
 *   <li>{@code underEviction}: one thread matches (latency sampled, read its p99) while another adds
 *       fresh keys and runs a pass every 2,000 inserts on a tree capped at 300,000 blocks.</li>
 * </ul>
 */
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
public class EvictionBenchmark {

    @State(Scope.Benchmark)
    public static class FullTree {
        TreeWorkload w;
        PrefixTree tree;

        @Setup(Level.Trial)
        public void workload() {
            w = new TreeWorkload(42);
        }

        @Setup(Level.Invocation)
        public void fill() {
            tree = PrefixTree.builder().maxSize(200_000).build();
            for (int k = 0; k < TreeWorkload.KEYS; k++) {
                tree.insert(w.keys[k], w.owners[k]);
            }
        }
    }

    @Benchmark
    @BenchmarkMode(Mode.SingleShotTime)
    @OutputTimeUnit(TimeUnit.MILLISECONDS)
    @Warmup(iterations = 3)
    @Measurement(iterations = 10)
    public EvictionReport pass(FullTree s) {
        return s.tree.evict();
    }

    @State(Scope.Group)
    public static class Shared {
        TreeWorkload w;
        PrefixTree tree;
        long salt;
        int next;

        @Setup(Level.Trial)
        public void setUp() {
            w = new TreeWorkload(42);
            tree = PrefixTree.builder().maxSize(300_000).build();
            for (int k = 0; k < TreeWorkload.KEYS; k++) {
                tree.insert(w.keys[k], w.owners[k]);
            }
            tree.evict();
        }
    }

    @State(Scope.Thread)
    public static class Cursor {
        int i;
    }

    @Benchmark
    @Group("underEviction")
    @GroupThreads(1)
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    @Warmup(iterations = 3, time = 2)
    @Measurement(iterations = 5, time = 2)
    public Match matcher(Shared s, Cursor c) {
        int k = c.i;
        c.i = k + 1 == TreeWorkload.KEYS ? 0 : k + 1;
        return s.tree.match(s.w.unseen[k]);
    }

    @Benchmark
    @Group("underEviction")
    @GroupThreads(1)
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    @Warmup(iterations = 3, time = 2)
    @Measurement(iterations = 5, time = 2)
    public Object evictor(Shared s) {
        int k = s.next;
        s.next = k + 1 == TreeWorkload.KEYS ? 0 : k + 1;
        s.tree.insert(s.w.freshVariant(k, ++s.salt, 4), s.w.owners[k]);
        return (s.salt % 2_000 == 0) ? s.tree.evict() : null;
    }
}
