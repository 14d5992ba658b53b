package dev.cart.core;

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

/** Building a key: hashing a prompt's text into 64-character blocks. */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class KeyBenchmark {

    @Param({"1000", "4096", "8000"})
    public int chars;

    String text;

    @Setup
    public void setUp() {
        text = TreeWorkload.randomText(new java.util.SplittableRandom(1), chars);
    }

    @Benchmark
    public PromptKey ofText() {
        return PromptKey.ofText(text, PromptKey.DEFAULT_BLOCK_CHARS);
    }
}
