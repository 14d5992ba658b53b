package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's plumbing on small workloads: seeds, run matrix, spreads, targets, Markdown, chart. */
class ReportTest {

    @Test
    void seedsParseAsRangesAndLists() {
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), Report.Settings.parse(new String[0]).seeds);
        assertEquals(List.of(2L, 3L, 4L, 9L), Report.Settings.parse(new String[] {"--seeds", "2-4,9"}).seeds);
        assertEquals(List.of(7L), Report.Settings.parse(new String[] {"--seed", "7"}).seeds);
        Report.Settings s = Report.Settings.parse(new String[] {"--seeds", "3-6", "--replicas", "2"});
        assertEquals("--seeds 3-6 --replicas 2", s.nonDefault());
        assertThrows(IllegalArgumentException.class, () -> Report.Settings.parse(new String[] {"--seeds", "1,1"}));
        assertThrows(IllegalArgumentException.class, () -> Report.Settings.parse(new String[] {"--seeds", "5-1"}));
        assertThrows(IllegalArgumentException.class, () -> Report.Settings.parse(new String[] {"--bogus", "1"}));
    }

    @Test
    void aSpreadIsTheMedianAndTheRange() {
        Spread s = Spread.of(3, 1, 200, Double.NaN, 7);
        assertEquals(5, s.median(), 1e-9, "NaN left out; median of four is the mean of the middle two");
        assertEquals(1, s.min());
        assertEquals(200, s.max());
        assertEquals("5 [1–200]", s.format("%.0f"));
        assertEquals("4", Spread.of(4, 4, 4).format("%.0f"), "no range when every seed agrees");
        assertEquals("—", Spread.of(Double.NaN).format("%.0f"));
    }

    @Test
    void aTargetIsJudgedOnTheMedianAndOnTheWorstSeed() {
        Targets.Target p99 = new Targets.Target("t", Targets.Kind.P99_RATIO, Variant.LEAST_LOADED, 1.1);
        Spread ratios = Spread.of(0.6, 0.7, 1.3);
        assertTrue(p99.met(ratios.median()));
        assertFalse(p99.met(p99.worst(ratios)), "the worst ratio is the highest");
        Targets.Target hit = new Targets.Target("h", Targets.Kind.HIT_SHARE, null, 0.9);
        assertEquals(0.85, hit.worst(Spread.of(0.95, 0.85, 0.99)), 1e-12, "the worst share is the lowest");
    }

    /**
     * Two seeds of two small workloads through the matrix's runner, on the tokenizing replica, then the
     * Markdown and the chart: every figure a median with its range, the targets on median and worst seed,
     * round_robin beside least_loaded, and a missing trace kept as a skipped row.
     */
    @Test
    void writesTablesTargetsAndAChartOverSeeds(@TempDir Path dir) throws Exception {
        System.setProperty("java.awt.headless", "true");
        Report.Settings s = Report.Settings.parse(new String[] {
            "--replicas",
            "2",
            "--seeds",
            "3-4",
            "--trace",
            dir.resolve("absent.jsonl").toString()
        });
        List<Variant> variants = Variant.core();
        RunMatrix.ReplicaModel model = RunMatrix.ReplicaModel.TOKENIZING;
        List<RunMatrix.ScenarioResult> rag = new java.util.ArrayList<>();
        List<RunMatrix.ScenarioResult> hot = new java.util.ArrayList<>();
        for (long seed : s.seeds) {
            Workload r =
                    Workloads.rag(seed, 2 * 150_000L, new Workloads.RagSpec(120, 256, 512, 1.1, 0.7, 32, 8, 16, 8));
            Workload h = Workloads.hotPrefix(seed, new Workloads.HotSpec(80, 1.0, 512, 32, 8));
            PreparedWorkload pr = PreparedWorkload.of(r.poisson(10, seed), EngineConfig.defaults(), model.options());
            PreparedWorkload ph = PreparedWorkload.of(h, EngineConfig.defaults(), model.options());
            rag.add(RunMatrix.runScenario(
                    new RunMatrix.Scenario("rag-zipf", r.description(), "Poisson, 10.0 req/s", pr, 0),
                    s,
                    seed,
                    variants,
                    RunMatrix::registered,
                    false));
            hot.add(RunMatrix.runScenario(
                    new RunMatrix.Scenario("hot-prefix-100", h.description(), "closed", ph, 4),
                    s,
                    seed,
                    variants,
                    RunMatrix::registered,
                    false));
        }
        RunMatrix.Matrix main = new RunMatrix.Matrix(
                model,
                s.seeds,
                variants,
                List.of(
                        new RunMatrix.WorkloadRuns("rag-zipf", null, rag),
                        new RunMatrix.WorkloadRuns("hot-prefix-100", null, hot),
                        new RunMatrix.WorkloadRuns(RunMatrix.MOONCAKE, "no trace", List.of())));
        RunMatrix.Matrix aligned =
                new RunMatrix.Matrix(RunMatrix.ReplicaModel.ALIGNED, s.seeds, variants, main.workloads());
        String md = ReportMarkdown.render(s, main, aligned, List.of(), List.of(), 1.0, 2.0);

        assertTrue(md.contains("options: `--trace "), md);
        assertTrue(md.contains("| seeds | 3,4 (2 seeds"), md);
        assertTrue(md.contains("main tables | the **tokenizing replica**"), md);
        assertTrue(md.contains("second table | the **aligned replica**"), md);
        assertTrue(md.contains("### rag-zipf"));
        assertTrue(md.contains("| cache_aware hit ratio >= 0.9 x ideal | rag-zipf |"));
        assertTrue(md.contains("| cache_aware P99 TTFT <= 0.6 x strict affinity | hot-prefix-100 |"));
        assertTrue(
                md.contains("| cache_aware P99 TTFT <= 1.1 x least_loaded | mooncake-trace | skipped: no trace |"),
                "the skipped workload keeps its target row");
        assertTrue(md.contains("| mooncake-trace | skipped: no trace |"), "and its headline row");
        assertTrue(md.contains("1 not measured, skipped: no trace"), md);
        // rag-zipf: hit + P99 vs rr + P99 vs ll; hot-prefix-100: max/mean + P99 vs strict + P99 vs ll; mooncake: 1
        assertTrue(md.contains(" of 7 targets on the median and "), md);
        assertTrue(md.contains("| workload | P99 TTFT (ms) round_robin | least_loaded | cache_aware |"));
        assertTrue(md.contains("Median P99: round_robin below least_loaded on "), md);
        assertTrue(md.contains(" workloads; cache_aware below both on "), md);
        assertTrue(md.contains(" of 2"), "counted over the two measured workloads, the skipped one left out");
        // one row per policy in each workload's table, every figure a median with its range (two seeds differ)
        long rows = md.lines()
                .filter(l -> l.matches("\\| (round_robin|least_loaded|cache_aware[a-z ]*) \\| "
                        + "[0-9.]+( \\[[0-9.]+–[0-9.]+\\])? \\| .*"))
                .count();
        assertEquals(2 * variants.size(), rows, md);
        assertTrue(
                md.lines().anyMatch(l -> l.startsWith("| cache_aware | ") && l.contains("–")),
                "a range appears where the seeds differ");

        Path png = dir.resolve("chart.png");
        Chart.write(png, s, main);
        BufferedImage img = ImageIO.read(png.toFile());
        assertTrue(img.getWidth() >= 1000 && img.getHeight() >= 600);
    }

    /** The runner's results do not depend on how many threads run them, nor on their order of completion. */
    @Test
    void runsInParallelGiveTheSameResultsAsOneThread() {
        Report.Settings s = Report.Settings.parse(new String[] {"--replicas", "2"});
        List<java.util.concurrent.Callable<RunMatrix.ScenarioResult>> tasks = new java.util.ArrayList<>();
        for (long seed : List.of(5L, 6L, 7L)) {
            tasks.add(() -> {
                Workload h = Workloads.hotPrefix(seed, new Workloads.HotSpec(60, 0.8, 256, 32, 8))
                        .poisson(40, seed);
                PreparedWorkload p = PreparedWorkload.of(h, EngineConfig.defaults());
                return RunMatrix.runScenario(
                        new RunMatrix.Scenario("hot", "", "", p, 0),
                        s,
                        seed,
                        Variant.core(),
                        RunMatrix::registered,
                        false);
            });
        }
        List<RunMatrix.ScenarioResult> one = RunMatrix.parallel(1, tasks);
        List<RunMatrix.ScenarioResult> two = RunMatrix.parallel(3, tasks);
        assertEquals(
                List.of(5L, 6L, 7L),
                two.stream().map(RunMatrix.ScenarioResult::seed).toList(),
                "task order");
        for (int i = 0; i < one.size(); i++) {
            for (Variant v : Variant.core()) {
                RunResult a = one.get(i).of(v.label());
                RunResult b = two.get(i).of(v.label());
                assertEquals(a.toString(), b.toString(), v.label());
                assertEquals(a.ttftP99Millis(), b.ttftP99Millis());
                assertEquals(a.hitRatio(), b.hitRatio());
                org.junit.jupiter.api.Assertions.assertArrayEquals(
                        a.trace().firstToken(),
                        b.trace().firstToken(),
                        "every request's first token at the same virtual time");
                org.junit.jupiter.api.Assertions.assertArrayEquals(
                        a.trace().replica(), b.trace().replica());
            }
        }
        assertTrue(
                one.get(0).of(Variant.CACHE_AWARE).ttftP99Millis()
                                != one.get(1).of(Variant.CACHE_AWARE).ttftP99Millis()
                        || one.get(0).of(Variant.CACHE_AWARE).hitRatio()
                                != one.get(1).of(Variant.CACHE_AWARE).hitRatio(),
                "other seeds, other runs");
    }

    @Test
    void aMissingTraceIsReportedAsSkippedNotDropped() {
        java.util.Map<String, List<RunMatrix.ScenarioResult>> byName = new java.util.HashMap<>();
        for (String name : RunMatrix.WORKLOADS) {
            if (!name.equals(RunMatrix.MOONCAKE)) {
                byName.put(name, List.of());
            }
        }
        List<RunMatrix.WorkloadRuns> ws = RunMatrix.collect(byName);
        assertEquals(RunMatrix.WORKLOADS.size(), ws.size(), "no workload dropped");
        RunMatrix.WorkloadRuns trace = ws.get(RunMatrix.WORKLOADS.indexOf(RunMatrix.MOONCAKE));
        assertEquals("no trace", trace.skipped());
        byName.remove("multi-turn");
        assertThrows(IllegalStateException.class, () -> RunMatrix.collect(byName), "only the trace may be missing");

        RunMatrix.Matrix m =
                new RunMatrix.Matrix(RunMatrix.ReplicaModel.TOKENIZING, List.of(1L), Variant.core(), List.of(trace));
        List<Targets.Verdict> vs = Targets.verdicts(m);
        assertEquals(1, vs.size(), "the replay's target stays");
        assertTrue(vs.get(0).skippedTarget());
        assertFalse(vs.get(0).metMedian());
        assertEquals(1, Targets.count(vs)[4]);
    }

    /** The predicted_ttft section: every shape, every policy's row, and verdicts computed seed by seed. */
    @Test
    void theTtftSectionJudgesEachShapeAgainstCacheAware() {
        Report.Settings s = Report.Settings.parse(new String[] {"--replicas", "2", "--seeds", "5-6"});
        List<TtftComparison.ShapeRuns> runs = new java.util.ArrayList<>();
        for (RunMatrix.Shape shape :
                List.of(RunMatrix.Shape.UNIFORM, RunMatrix.Shape.heterogeneous(2), RunMatrix.Shape.slowdown(2))) {
            List<RunMatrix.ScenarioResult> hot = new java.util.ArrayList<>();
            for (long seed : s.seeds) {
                Workload h = Workloads.hotPrefix(seed, new Workloads.HotSpec(60, 0.8, 256, 32, 8))
                        .poisson(30, seed);
                hot.add(RunMatrix.runScenario(
                        new RunMatrix.Scenario(
                                "hot-prefix-80", "", "", PreparedWorkload.of(h, EngineConfig.defaults()), 0),
                        s,
                        seed,
                        TtftComparison.variants(),
                        RunMatrix::registered,
                        false,
                        shape));
            }
            runs.add(new TtftComparison.ShapeRuns(
                    shape,
                    new RunMatrix.Matrix(
                            RunMatrix.ReplicaModel.TOKENIZING,
                            s.seeds,
                            TtftComparison.variants(),
                            List.of(
                                    new RunMatrix.WorkloadRuns("hot-prefix-80", null, hot),
                                    new RunMatrix.WorkloadRuns(RunMatrix.MOONCAKE, "no trace", List.of())))));
        }
        assertEquals(3 * 2 * 4, TtftComparison.runs(runs), "3 shapes x 2 seeds x 4 policies, none reused");
        List<TtftComparison.Verdict> vs = TtftComparison.verdicts(runs);
        // uniform: P99, hit, error; heterogeneous: P99, throughput, error; slowdown: P99, error
        assertEquals(8, vs.size(), String.valueOf(vs));
        RunMatrix.ScenarioResult first =
                runs.get(0).matrix().workloads().get(0).seeds().get(0);
        double ratio = first.of(Variant.PREDICTED_TTFT).ttftP99Millis()
                / first.of(Variant.CACHE_AWARE).ttftP99Millis();
        assertTrue(
                vs.get(0).value().min() <= ratio && ratio <= vs.get(0).value().max(), "a per-seed ratio");
        assertTrue(vs.stream().allMatch(v -> !Double.isNaN(v.value().median())), "every target measured");
        String md = TtftComparison.markdown(s, runs);
        assertTrue(md.contains("### Targets: "), md);
        for (String shape : List.of("uniform", "heterogeneous", "slowdown")) {
            assertTrue(md.contains("### " + shape + " pool"), md);
        }
        for (String l : TtftComparison.LABELS) {
            assertEquals(
                    3,
                    md.lines()
                            .filter(x -> x.startsWith("| hot-prefix-80 | " + l + " | "))
                            .count(),
                    l);
        }
        assertTrue(md.contains("| mooncake-trace | skipped: no trace |"), md);
    }
}
