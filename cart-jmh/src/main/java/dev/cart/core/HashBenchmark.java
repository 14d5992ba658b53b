package dev.cart.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
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
 * Block hashing alone, for the extraction profile: 32,768 characters hashed in chained 64-character blocks
 * by {@code PromptKey.hashChars} (each 64-bit lane assembled from four {@code char} loads), against the
 * same rounds over the same text held as Latin-1 bytes and read 8 bytes per load (a {@code VarHandle}
 * view), which is what a key builder keeping Latin-1 text in a {@code byte[]} could do. Not a replacement
 * hash (its values differ): a measure of what the lane loads cost.
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
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;

    char[] chars;
    byte[] bytes;

    @Setup
    public void setUp() {
        String s = TreeWorkload.randomText(new SplittableRandom(5), N);
        chars = s.toCharArray();
        bytes = s.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    @Benchmark
    public long hashChars() {
        char[] block = new char[BLOCK];
        long h = 0;
        for (int off = 0; off + BLOCK <= N; off += BLOCK) {
            System.arraycopy(chars, off, block, 0, BLOCK);
            h = PromptKey.hashChars(block, BLOCK, h);
        }
        return h;
    }

    @Benchmark
    public long hashLatin1Bytes() {
        long h = 0;
        for (int off = 0; off + BLOCK <= N; off += BLOCK) {
            h = hashBytes(bytes, off, BLOCK, h);
        }
        return h;
    }

    /** The rounds of {@code hashChars}, over bytes read 8 at a time. */
    static long hashBytes(byte[] b, int off, int n, long seed) {
        long a1 = seed + P1 + P2, a2 = seed + P2, a3 = seed, a4 = seed - P1;
        int i = 0;
        for (; i + 32 <= n; i += 32) {
            a1 = round(a1, (long) LONGS.get(b, off + i));
            a2 = round(a2, (long) LONGS.get(b, off + i + 8));
            a3 = round(a3, (long) LONGS.get(b, off + i + 16));
            a4 = round(a4, (long) LONGS.get(b, off + i + 24));
        }
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        h += n;
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        return h ^ (h >>> 32);
    }

    private static long round(long acc, long input) {
        return Long.rotateLeft(acc + input * P2, 31) * P1;
    }
}
