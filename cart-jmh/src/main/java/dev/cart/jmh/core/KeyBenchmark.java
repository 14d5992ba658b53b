package dev.cart.jmh.core;

import dev.cart.core.PromptKey;
import dev.cart.core.internal.KeyAccess;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Building a key: a prompt's text (ASCII) into 64-character blocks, hashed. {@code ofText} from a String
 * (copied out of the String, encoded to bytes, hashed); {@code cesu8Bytes} from the bytes of a body
 * ({@code appendCesu8}: full blocks hashed straight from the array), what extraction does with the
 * ASCII runs of a request; {@code latin1Bytes} the same through {@code appendLatin1}, which first checks
 * that the run is ASCII.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class KeyBenchmark {

    @Param({"1000", "4096", "32768"})
    public int chars;

    String text;
    byte[] bytes;

    @Setup
    public void setUp() {
        text = TreeWorkload.randomText(new java.util.SplittableRandom(1), chars);
        bytes = text.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    @Benchmark
    public PromptKey latin1Bytes() {
        return KeyAccess.appendLatin1(PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS), bytes, 0, bytes.length)
                .build();
    }

    /** The path extraction takes: ASCII bytes as CESU-8 (one unit a byte), whole blocks hashed in place. */
    @Benchmark
    public PromptKey cesu8Bytes() {
        return KeyAccess.appendCesu8(
                        PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS), bytes, 0, bytes.length, bytes.length)
                .build();
    }

    @Benchmark
    public PromptKey ofText() {
        return PromptKey.ofText(text, PromptKey.DEFAULT_BLOCK_CHARS);
    }
}
