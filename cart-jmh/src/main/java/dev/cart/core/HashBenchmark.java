package dev.cart.core;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Block hashing alone: 32,768 characters hashed in chained 64-character blocks, as keys are hashed. A
 * key's Latin-1 blocks (all ASCII text) are hashed by {@code PromptKey.hashLatin1}, eight characters per
 * 64-bit {@code VarHandle} read from a byte array; blocks with a character above U+00FF by
 * {@code PromptKey.hashWide}, each lane assembled from four {@code char} loads.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class HashBenchmark {

    static final int N = 32_768;
    static final int BLOCK = 64;

    char[] chars;
    byte[] bytes;

    @Setup
    public void setUp() {
        String s = TreeWorkload.randomText(new SplittableRandom(5), N);
        chars = s.toCharArray();
        bytes = s.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    /** The hashing of blocks that hold a character above U+00FF (here over ASCII text, for comparison). */
    @Benchmark
    public long hashWide() {
        char[] block = new char[BLOCK];
        long h = 0;
        for (int off = 0; off + BLOCK <= N; off += BLOCK) {
            System.arraycopy(chars, off, block, 0, BLOCK);
            h = PromptKey.hashWide(block, BLOCK, h);
        }
        return h;
    }

    /** The hashing of Latin-1 blocks, straight from the bytes. */
    @Benchmark
    public long hashLatin1() {
        long h = 0;
        for (int off = 0; off + BLOCK <= N; off += BLOCK) {
            h = PromptKey.hashLatin1(bytes, off, BLOCK, h);
        }
        return h;
    }
}
