package dev.cart.jmh.core;

import dev.cart.core.internal.KeyAccess;
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
 * Block hashing alone: 32,768 characters hashed in chained 64-character blocks, as keys are hashed. Every
 * text block is hashed by {@code PromptKey.hashBytes} over the CESU-8 bytes of its characters, eight bytes
 * per 64-bit {@code VarHandle} read: an ASCII block is 64 bytes, a block of CJK text 192.
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

    byte[] bytes;
    /** The CESU-8 of N characters between U+4E00 and U+9FFF, three bytes each. */
    byte[] cjk;

    @Setup
    public void setUp() {
        String s = TreeWorkload.randomText(new SplittableRandom(5), N);
        bytes = s.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        SplittableRandom rnd = new SplittableRandom(6);
        StringBuilder sb = new StringBuilder(N);
        for (int i = 0; i < N; i++) {
            sb.append((char) rnd.nextInt(0x4E00, 0xA000));
        }
        cjk = sb.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The hashing of blocks of three-byte characters (192 bytes a block), straight from the bytes. */
    @Benchmark
    public long hashCjk() {
        long h = 0;
        for (int off = 0; off + 3 * BLOCK <= cjk.length; off += 3 * BLOCK) {
            h = KeyAccess.secrets().hashBytes(cjk, off, 3 * BLOCK, h);
        }
        return h;
    }

    /** The hashing of ASCII blocks, straight from the bytes. */
    @Benchmark
    public long hashAscii() {
        long h = 0;
        for (int off = 0; off + BLOCK <= N; off += BLOCK) {
            h = KeyAccess.secrets().hashBytes(bytes, off, BLOCK, h);
        }
        return h;
    }
}
