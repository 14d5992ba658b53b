package dev.cart.jmh.extract;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs {@link FloorBenchmark} with {@link CpuTimeProfiler} and prints, per body, each fork's figure for
 * {@code extract} and for {@code jackson} (ns per operation) and extraction's ratio to Jackson's token pass:
 * the ratio of the fork medians, and its range over forks (the lowest extract fork over the highest floor
 * fork, and the highest over the lowest), and beside them {@code jacksonText}'s forks and extraction's ratio to
 * it (of the medians). Two tables: JMH's wall-clock score, and the process's CPU time per
 * operation, the one to read on a shared machine. Arguments are JMH's own (e.g. {@code -f 3 -prof gc});
 * the benchmark pattern is fixed.
 *
 * <pre>{@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.extract.FloorRatio -f 3 -prof gc}</pre>
 */
public final class FloorRatio {

    private FloorRatio() {}

    public static void main(String[] args) throws RunnerException, CommandLineOptionException {
        CommandLineOptions cli = new CommandLineOptions(args);
        OptionsBuilder opts = new OptionsBuilder();
        opts.parent(cli);
        opts.include(FloorBenchmark.class.getName() + "\\.");
        opts.addProfiler(CpuTimeProfiler.class);
        Collection<RunResult> results = new Runner(opts.build()).run();
        table(results, "wall clock (JMH's score)", null);
        table(results, "CPU time of the process (CpuTimeProfiler)", "cpu.time.norm");
    }

    /** One table of forks and ratios: of the primary score, or of the secondary result {@code name}. */
    private static void table(Collection<RunResult> results, String what, String name) {
        Map<String, double[]> extract = new LinkedHashMap<>();
        Map<String, double[]> jackson = new LinkedHashMap<>();
        Map<String, double[]> text = new LinkedHashMap<>();
        for (RunResult r : results) {
            String body = r.getParams().getParam("body");
            String op = r.getParams().getBenchmark();
            List<Double> forks = new ArrayList<>();
            for (BenchmarkResult b : r.getBenchmarkResults()) {
                Result<?> res = name == null
                        ? b.getPrimaryResult()
                        : b.getSecondaryResults().get(name);
                if (res != null) {
                    forks.add(res.getScore());
                }
            }
            double[] f = forks.stream().mapToDouble(Double::doubleValue).toArray();
            (op.endsWith(".extract") ? extract : op.endsWith(".jacksonText") ? text : jackson).put(body, f);
        }
        System.out.println();
        System.out.println("Extraction against Jackson's token pass, " + what + ", ns per operation:");
        System.out.println();
        System.out.println(
                "| body | extract, per fork | Jackson's token pass, per fork | ratio of medians | range over forks"
                        + " | Jackson reading every string's text, per fork | extract over it |");
        System.out.println("|---|---|---|---:|---:|---|---:|");
        for (Map.Entry<String, double[]> e : extract.entrySet()) {
            double[] x = e.getValue();
            double[] j = jackson.get(e.getKey());
            if (j == null || x.length == 0 || j.length == 0) {
                continue;
            }
            Arrays.sort(x);
            Arrays.sort(j);
            double[] t = text.getOrDefault(e.getKey(), new double[0]);
            Arrays.sort(t);
            System.out.printf(
                    "| %s | %s | %s | %.2f | %.2f–%.2f | %s | %s |%n",
                    e.getKey(),
                    list(x),
                    list(j),
                    median(x) / median(j),
                    x[0] / j[j.length - 1],
                    x[x.length - 1] / j[0],
                    list(t),
                    t.length == 0 ? "" : String.format("%.2f", median(x) / median(t)));
        }
    }

    private static String list(double[] v) {
        StringBuilder sb = new StringBuilder();
        for (double d : v) {
            sb.append(sb.length() == 0 ? "" : ", ").append(String.format("%,.0f", d));
        }
        return sb.toString();
    }

    private static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
