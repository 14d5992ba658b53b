package dev.cart.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * RAG, multi-turn and the hot prefixes at several loads under round_robin, least_loaded, strict affinity,
 * cache_aware as specified and cache_aware, on every seed, with the prepared workloads of the main tables
 * retimed: how the comparisons behind the targets depend on the load the load rule fixes. Not used for the
 * verdicts. At the main tables' own load the points are the main tables' runs.
 */
final class LoadSensitivity {

    /** Loads of the table. */
    static final double[] LOADS = {0.4, 0.7, 1.0, 1.3};

    static final List<String> WORKLOADS = List.of("rag-zipf", "multi-turn", "hot-prefix-80", "hot-prefix-100");

    /** The five configurations, in column order. */
    static final List<String> LABELS =
            List.of(Variant.ROUND_ROBIN, Variant.LEAST_LOADED, Variant.STRICT, Variant.SPECIFIED, Variant.CACHE_AWARE);

    /** One workload at one load: per seed, the rate and the five configurations' results (in {@link #LABELS} order). */
    record Point(String workload, double load, List<Double> rates, List<List<RunResult>> bySeed) {
        Spread spread(String label, java.util.function.ToDoubleFunction<RunResult> f) {
            int i = LABELS.indexOf(label);
            return Spread.of(
                    bySeed.stream().mapToDouble(r -> f.applyAsDouble(r.get(i))).toArray());
        }

        /** {@code label}'s P99 over {@code base}'s, seed by seed. */
        Spread p99Ratio(String label, String base) {
            int i = LABELS.indexOf(label);
            int j = LABELS.indexOf(base);
            return Spread.of(bySeed.stream()
                    .mapToDouble(r -> r.get(i).ttftP99Millis() / r.get(j).ttftP99Millis())
                    .toArray());
        }
    }

    private LoadSensitivity() {}

    /** Runs made for the table (those at the main tables' load are theirs, not counted). */
    static int runs(Report.Settings s, List<Point> points) {
        return points.stream()
                .filter(p -> p.load() != s.load)
                .mapToInt(p -> p.bySeed().size() * LABELS.size())
                .sum();
    }

    static List<Point> run(Report.Settings s, RunMatrix.Matrix main) {
        List<Callable<List<Point>>> tasks = new ArrayList<>();
        for (String name : WORKLOADS) {
            RunMatrix.WorkloadRuns wr = main.named(name);
            if (wr == null || wr.isSkipped()) {
                continue;
            }
            tasks.add(() -> {
                List<Point> out = new ArrayList<>();
                for (double load : LOADS) {
                    List<Double> rates = new ArrayList<>();
                    List<List<RunResult>> bySeed = new ArrayList<>();
                    for (RunMatrix.ScenarioResult sr : wr.seeds()) {
                        PreparedWorkload base = sr.prepared();
                        double rate = RunMatrix.rateFor(load, s.replicas, main.model(), base);
                        PreparedWorkload p = base.retimed(base.workload.poisson(rate, sr.seed()));
                        List<RunResult> rs = new ArrayList<>();
                        for (String label : LABELS) {
                            // the main tables' load: the same runs as there (same requests, times and seed)
                            RunResult same = load == s.load ? sr.of(label) : null;
                            rs.add(
                                    same != null
                                            ? same
                                            : RunMatrix.simulation(
                                                            s,
                                                            sr.seed(),
                                                            Variant.named(label),
                                                            RunMatrix::registered,
                                                            0)
                                                    .build()
                                                    .run(p));
                        }
                        rates.add(rate);
                        bySeed.add(rs);
                    }
                    out.add(new Point(name, load, rates, bySeed));
                }
                return out;
            });
        }
        List<Point> out = new ArrayList<>();
        for (List<Point> ps : RunMatrix.parallel(s.threads, tasks)) {
            out.addAll(ps);
        }
        return out;
    }
}
