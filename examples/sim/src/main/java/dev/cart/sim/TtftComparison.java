package dev.cart.sim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * The report's {@code predicted_ttft} section: the policy against {@code cache_aware}, {@code least_loaded}
 * and {@code round_robin} on every workload and seed of the tokenizing replica, on three cluster shapes
 * (uniform, heterogeneous, a replica slowing down mid-run), with the targets of its issue and whether
 * they are met.
 *
 * <p>Its own entry point writes the section alone, for a quicker look than the whole report:
 * <pre>
 * mvn -B -ntp -pl examples/sim -am -Preport package -DskipTests -Dreport.main=dev.cart.sim.TtftComparison
 * </pre>
 * (the same options as {@link Report}; it writes {@code predicted-ttft.md} in {@code --out}).
 */
public final class TtftComparison {

    static final List<String> LABELS =
            List.of(Variant.ROUND_ROBIN, Variant.LEAST_LOADED, Variant.CACHE_AWARE, Variant.PREDICTED_TTFT);

    /** One cluster shape's runs; {@code reused} when they are the main tables' own. */
    record ShapeRuns(RunMatrix.Shape shape, RunMatrix.Matrix matrix, boolean reused) {
        ShapeRuns(RunMatrix.Shape shape, RunMatrix.Matrix matrix) {
            this(shape, matrix, false);
        }
    }

    private TtftComparison() {}

    static List<Variant> variants() {
        List<Variant> v = new ArrayList<>();
        for (String l : LABELS) {
            v.add(Variant.named(l));
        }
        return v;
    }

    /**
     * Runs the comparison. {@code uniform}, when given, is the main tables' matrix: its runs of the
     * baselines are reused and only {@code predicted_ttft} runs again on the uniform pool.
     */
    static List<ShapeRuns> run(Report.Settings s, RunMatrix.Matrix uniform, boolean progress) {
        List<ShapeRuns> out = new ArrayList<>();
        RunMatrix.ReplicaModel model = RunMatrix.ReplicaModel.TOKENIZING;
        if (uniform != null
                && uniform.variants().stream().anyMatch(v -> v.label().equals(Variant.PREDICTED_TTFT))) {
            out.add(new ShapeRuns(RunMatrix.Shape.UNIFORM, uniform, true));
        } else {
            out.add(new ShapeRuns(
                    RunMatrix.Shape.UNIFORM, RunMatrix.run(s, model, variants(), progress, RunMatrix.Shape.UNIFORM)));
        }
        for (RunMatrix.Shape shape :
                List.of(RunMatrix.Shape.heterogeneous(s.replicas), RunMatrix.Shape.slowdown(s.replicas))) {
            out.add(new ShapeRuns(shape, RunMatrix.run(s, model, variants(), progress, shape)));
        }
        return out;
    }

    /** The runs made for the section: those of every shape but a uniform one reused from the main tables. */
    static int runs(List<ShapeRuns> runs) {
        int n = 0;
        for (ShapeRuns r : runs) {
            n += r.reused() ? 0 : r.matrix().runs();
        }
        return n;
    }

    /** One target: a measure per seed, judged on the median and, where the issue says so, on every seed. */
    record Verdict(String shape, String workload, String target, Spread value, boolean median, Boolean everySeed) {}

    /** The targets on every workload of every shape. */
    static List<Verdict> verdicts(List<ShapeRuns> runs) {
        List<Verdict> out = new ArrayList<>();
        for (ShapeRuns sr : runs) {
            String shape = sr.shape().name();
            for (RunMatrix.WorkloadRuns w : sr.matrix().workloads()) {
                if (w.isSkipped()) {
                    continue;
                }
                Spread p99 = ratio(w, RunResult::ttftP99Millis);
                Spread hit = diff(w, RunResult::hitRatio);
                Spread err = w.spread(Variant.PREDICTED_TTFT, RunResult::estimateErrorP50);
                if (shape.equals("uniform")) {
                    out.add(new Verdict(
                            shape,
                            w.name(),
                            "P99 TTFT <= 0.9x cache_aware (median), <= 1.05x (every seed)",
                            p99,
                            p99.median() <= 0.9,
                            p99.max() <= 1.05));
                    out.add(new Verdict(
                            shape,
                            w.name(),
                            "hit ratio within 0.01 of cache_aware",
                            hit,
                            Math.abs(hit.median()) <= 0.01,
                            hit.min() >= -0.01 && hit.max() <= 0.01));
                } else if (shape.equals("heterogeneous")) {
                    Spread tput = ratio(w, RunResult::requestsPerSecond);
                    out.add(new Verdict(
                            shape, w.name(), "P99 TTFT <= 0.7x cache_aware", p99, p99.median() <= 0.7, null));
                    out.add(new Verdict(
                            shape, w.name(), "throughput >= 1.2x cache_aware", tput, tput.median() >= 1.2, null));
                } else {
                    out.add(new Verdict(
                            shape, w.name(), "P99 TTFT <= 0.9x cache_aware (median)", p99, p99.median() <= 0.9, null));
                }
                out.add(new Verdict(
                        shape, w.name(), "estimate error p50 <= 0.25", err, err.median() <= 0.25, err.max() <= 0.25));
            }
        }
        return out;
    }

    /** predicted_ttft's {@code f} over cache_aware's, seed by seed. */
    static Spread ratio(RunMatrix.WorkloadRuns w, ToDoubleFunction<RunResult> f) {
        double[] v = new double[w.seeds().size()];
        for (int i = 0; i < v.length; i++) {
            RunMatrix.ScenarioResult sr = w.seeds().get(i);
            v[i] = f.applyAsDouble(sr.of(Variant.PREDICTED_TTFT)) / f.applyAsDouble(sr.of(Variant.CACHE_AWARE));
        }
        return Spread.of(v);
    }

    /** predicted_ttft's {@code f} minus cache_aware's, seed by seed. */
    static Spread diff(RunMatrix.WorkloadRuns w, ToDoubleFunction<RunResult> f) {
        double[] v = new double[w.seeds().size()];
        for (int i = 0; i < v.length; i++) {
            RunMatrix.ScenarioResult sr = w.seeds().get(i);
            v[i] = f.applyAsDouble(sr.of(Variant.PREDICTED_TTFT)) - f.applyAsDouble(sr.of(Variant.CACHE_AWARE));
        }
        return Spread.of(v);
    }

    /** The section, headed {@code ## ...}. */
    static String markdown(Report.Settings s, List<ShapeRuns> runs) {
        StringBuilder md = new StringBuilder("\n## predicted_ttft against cache_aware and the baselines\n\n");
        md.append("`predicted_ttft` (issue 23) predicts each candidate's time to first token from its pending "
                + "prefill, the prompt's part it does not hold and its in-flight load, with per-replica speeds "
                + "learned online from first-token reports, and picks the smallest among the candidates within its load "
                + "bound (at most twice the candidates' mean load, rounded up, once a replica has 8 in flight). "
                + "Tokenizing replica, seeds "
                + s.seedsText() + ", every workload of the main tables, three cluster shapes; each figure is "
                + "the median over the seeds with the range in brackets. *est. error* is the policy's median "
                + "relative error |predicted − measured| / measured TTFT over the last first tokens of its "
                + "warmed-up replicas (after " + dev.cart.policy.PredictedTtftPolicy.class.getSimpleName()
                + "'s 32 first observations of each), at the end of the run. On the uniform pool the "
                + "baselines' runs are those of the main tables.\n\n");
        List<Verdict> vs = verdicts(runs);
        int met = 0;
        int all = 0;
        for (Verdict v : vs) {
            all++;
            met += v.median() && (v.everySeed() == null || v.everySeed()) ? 1 : 0;
        }
        md.append(String.format(Locale.ROOT, "### Targets: %d of %d met%n%n", met, all));
        md.append("Ratios and differences are predicted_ttft's against cache_aware's on the same seed. A target "
                + "with two verdicts is judged on the median and on every seed.\n\n");
        MarkdownTable targets =
                new MarkdownTable("shape", "workload", "target", "measured", "met (median)", "met (every seed)");
        for (Verdict v : vs) {
            targets.row(
                    v.shape(),
                    v.workload(),
                    v.target(),
                    v.value().format(v.target().startsWith("hit") ? "%+.3f" : "%.2f"),
                    v.median() ? "yes" : "**no**",
                    v.everySeed() == null ? "—" : v.everySeed() ? "yes" : "**no**");
        }
        md.append(targets);
        for (ShapeRuns sr : runs) {
            md.append("\n### ")
                    .append(sr.shape().name())
                    .append(" pool\n\n")
                    .append(sr.shape().description())
                    .append(".\n\n");
            MarkdownTable t = new MarkdownTable(
                    "workload",
                    "policy",
                    "hit ratio",
                    "TTFT p50 (ms)",
                    "TTFT p99 (ms)",
                    "req/s",
                    "max/mean req",
                    "est. error");
            for (RunMatrix.WorkloadRuns w : sr.matrix().workloads()) {
                if (w.isSkipped()) {
                    t.row(w.name(), "skipped: " + w.skipped());
                    continue;
                }
                for (String l : LABELS) {
                    t.row(
                            w.name(),
                            l,
                            w.spread(l, RunResult::hitRatio).format("%.3f"),
                            w.spread(l, RunResult::ttftP50Millis).format("%.0f"),
                            w.spread(l, RunResult::ttftP99Millis).format("%.0f"),
                            w.spread(l, RunResult::requestsPerSecond).format("%.2f"),
                            w.spread(l, RunResult::maxOverMeanRequests).format("%.2f"),
                            w.spread(l, RunResult::estimateErrorP50).format("%.2f"));
                }
            }
            md.append(t);
        }
        return md.toString();
    }

    /** Writes the section alone to {@code predicted-ttft.md} in {@code --out}. */
    public static void main(String[] args) throws IOException {
        Report.Settings s = Report.Settings.parse(args);
        long t0 = System.nanoTime();
        List<ShapeRuns> runs = run(s, null, true);
        Path dir = s.outDir();
        Files.createDirectories(dir);
        Path md = dir.resolve("predicted-ttft.md");
        Files.writeString(
                md,
                "# predicted_ttft: the section of routing-quality.md on its own\n\nGenerated by "
                        + "`dev.cart.sim.TtftComparison`"
                        + (s.nonDefault().isBlank() ? "" : " (options: `" + s.nonDefault() + "`)")
                        + "; the full report carries the same section.\n"
                        + markdown(s, runs),
                StandardCharsets.UTF_8);
        System.out.printf(Locale.ROOT, "wrote %s in %.1f s%n", md, (System.nanoTime() - t0) / 1e9);
    }
}
