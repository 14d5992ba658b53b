package dev.cart.jmh.kvevents;

import dev.cart.kvevents.KvFeed;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Event ingest on one thread: a stream's feed decodes a batch and applies it to the index, the way the
 * subscriber's I/O thread does, socket excluded. The steady state of a busy engine: each invocation applies a
 * batch storing a request's {@code blocks} blocks (chained on a shared root block) and a batch removing the
 * blocks stored {@code WINDOW} batches before, so the index stays near {@code WINDOW * blocks} blocks.
 * Score: time per block (stored or removed). Target: at most 4 µs per block (250,000 blocks/s on one core).
 *
 * <p>Run: {@code java -jar cart-jmh/target/benchmarks.jar IngestBenchmark}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(3)
public class IngestBenchmark {

    static final int WINDOW = 4096;
    static final int PRE = 256;

    @Param({"16"})
    public int blocks;

    private KvFeed feed;
    private byte[][] storedBatches;
    private byte[][] removedBatches;
    private long seq;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        KvIndex index = KvIndex.builder().build();
        feed = index.feed(KvStream.of("r", "inproc://none", null, "m"), null);
        SplittableRandom rnd = new SplittableRandom(7);
        // the shared root: every request's blocks chain on it, as a system prompt's do
        feed.live(seq++, Batches.stored(1.0, new long[] {1}, null, Batches.tokens(rnd, 1)));
        int n = PRE;
        storedBatches = new byte[n][];
        removedBatches = new byte[n][];
        long h = 2;
        for (int i = 0; i < n; i++) {
            long[] hashes = new long[blocks];
            for (int b = 0; b < blocks; b++) {
                hashes[b] = h++ * 0x9E3779B97F4A7C15L;
            }
            storedBatches[i] = Batches.stored(1.0, hashes, 1L, Batches.tokens(rnd, blocks));
            removedBatches[i] = Batches.removed(1.0, hashes);
        }
    }

    @Benchmark
    @OperationsPerInvocation(32) // blocks per invocation: 16 stored + 16 removed (the parameter's default)
    public void storeAndEvict() {
        int i = next;
        feed.live(seq++, storedBatches[i]);
        // the batch stored PRE/2 batches ago leaves: the index stays at about PRE/2 * blocks blocks of this set
        feed.live(seq++, removedBatches[(i + PRE / 2) % PRE]);
        next = (i + 1) % PRE;
    }
}
