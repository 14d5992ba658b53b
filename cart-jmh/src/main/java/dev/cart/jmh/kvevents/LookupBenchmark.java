package dev.cart.jmh.kvevents;

import dev.cart.kvevents.KvFeed;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import dev.cart.kvevents.PreciseMatch;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 * The lookup of a 500-block prompt (8,000 tokens, tokenization excluded) in an index of 8 streams holding
 * about 10^6 blocks in all: each stream holds 250 random 500-block chains; the prompt is one of stream 0's
 * chains, also held by stream 1 up to its 250th block ({@code held}, the worst case: the walk goes the whole
 * prompt); or the same prompt with its tokens changed from the 33rd block on ({@code diverging}: a shared system
 * prompt, then the request's own text), where the lookup stops after 32 blocks. Mode sample time, so JMH
 * reports the p99. Target: p99 at most 20 µs.
 *
 * <p>Run: {@code java -jar cart-jmh/target/benchmarks.jar LookupBenchmark}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(3)
public class LookupBenchmark {

    static final int STREAMS = 8;
    static final int CHAINS = 250;
    static final int BLOCKS = 500;

    /** Blocks a diverging prompt shares with the held chain. */
    static final int SHARED = 32;

    @Param({"500"})
    public int promptBlocks;

    @Param({"held", "diverging"})
    public String shape = "held";

    private KvIndex index;
    private int[][] prompts;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        index = KvIndex.builder().build();
        SplittableRandom rnd = new SplittableRandom(11);
        KvFeed[] feeds = new KvFeed[STREAMS];
        long[] seq = new long[STREAMS];
        for (int s = 0; s < STREAMS; s++) {
            feeds[s] = index.feed(KvStream.of("r" + s, "inproc://none", null, "m"), null);
        }
        prompts = new int[16][];
        long h = 1;
        for (int s = 0; s < STREAMS; s++) {
            for (int c = 0; c < CHAINS; c++) {
                int[] tokens = Batches.tokens(rnd, BLOCKS);
                long[] hashes = new long[BLOCKS];
                for (int b = 0; b < BLOCKS; b++) {
                    hashes[b] = h++ * 0x9E3779B97F4A7C15L;
                }
                feeds[s].live(seq[s]++, Batches.stored(1.0, hashes, null, tokens));
                if (s == 0 && c < prompts.length) {
                    int[] p = java.util.Arrays.copyOf(tokens, promptBlocks * Batches.BLOCK + 1);
                    prompts[c] = p;
                    // stream 1 holds the first half of the same chain
                    long[] half = new long[BLOCKS / 2];
                    for (int b = 0; b < half.length; b++) {
                        half[b] = h++ * 0x9E3779B97F4A7C15L;
                    }
                    feeds[1].live(
                            seq[1]++,
                            Batches.stored(
                                    1.0, half, null, java.util.Arrays.copyOf(tokens, half.length * Batches.BLOCK)));
                }
            }
        }
        boolean diverging = shape.equals("diverging");
        if (diverging) {
            for (int[] p : prompts) {
                for (int i = SHARED * Batches.BLOCK; i < p.length; i++) {
                    p[i] ^= 0x5A5A;
                }
            }
        }
        PreciseMatch m = index.lookup(prompts[0], "m", null);
        int r0 = diverging ? SHARED : promptBlocks;
        int r1 = diverging ? SHARED : BLOCKS / 2;
        if (m.confirmedTokens("r0") != r0 * Batches.BLOCK || m.confirmedTokens("r1") != r1 * Batches.BLOCK) {
            throw new IllegalStateException("the index does not hold the prompt as set up");
        }
    }

    @Benchmark
    public PreciseMatch lookup() {
        int[] p = prompts[next];
        next = (next + 1) & 15;
        return index.lookup(p, "m", null);
    }
}
