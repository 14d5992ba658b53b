package dev.cart.jmh.flow;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The admission queue's cost per admitted request against {@code Router.choose} alone, one thread
 * ({@link FlowSetup} says what each operation does): {@code choose} the baseline, {@code atOnce} through
 * flow control with nothing waiting, {@code queued} an enqueue and a hand-out. Judge by the ratios within
 * one run; {@link FlowCpuTiming} gives the same three by the thread's CPU time, interleaved.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class FlowBenchmark {

    FlowSetup setup;

    @Setup(Level.Trial)
    public void setUp() {
        setup = new FlowSetup();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        setup.close();
    }

    @Benchmark
    public long choose() {
        return setup.choose();
    }

    @Benchmark
    public long atOnce() {
        return setup.atOnce();
    }

    @Benchmark
    public long queued() {
        return setup.queued();
    }
}
