package dev.cart.jmh.extract;

import java.lang.management.ManagementFactory;
import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler that reports the forked JVM's CPU time per operation ({@code cpu.time.norm}, ns/op): the
 * process's CPU time over the iteration (every thread: the benchmark's, the GC's, the JIT's) divided by the
 * operations measured. On a shared machine JMH's wall-clock score counts the time a thread waits for a core;
 * this does not, so the ratio of two benchmarks' CPU time per operation holds under load where their scores
 * do not. Use with {@code -prof dev.cart.jmh.extract.CpuTimeProfiler}; {@link FloorRatio} adds it itself.
 */
public final class CpuTimeProfiler implements InternalProfiler {

    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private long before;

    @Override
    public String getDescription() {
        return "the process's CPU time per operation";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        before = os.getProcessCpuTime();
    }

    @Override
    @SuppressWarnings("rawtypes") // the interface's own signature
    public Collection<? extends Result> afterIteration(
            BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        long cpu = os.getProcessCpuTime() - before;
        long ops = result.getMetadata().getMeasuredOps();
        if (ops <= 0) {
            return List.of();
        }
        return List.of(new ScalarResult("cpu.time.norm", (double) cpu / ops, "ns/op", AggregationPolicy.AVG));
    }
}
