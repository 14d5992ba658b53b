package dev.cart.sim;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;

/**
 * The routing-quality evidence of precise mode: the same workloads routed by {@code cache_aware} (the proxy's
 * host behaviour, {@link Variant#shipped}) in the approximate mode (the prefix tree alone) and in precise mode
 * (the engines' KV events through {@code cart-kvevents}, the tree as fallback and overlay), against the ideal
 * hit ratio, on the tokenizing replica, over a range of seeds, in three conditions: replicas whose caches hold
 * the workload (no pressure), caches at about half the workload's working set across the cluster (pressure),
 * and one replica restarting halfway through the run (restart).
 *
 * <p>Writes its section of {@code docs/precise-mode.md} (between {@code <!-- precise-report:begin -->} and
 * {@code <!-- precise-report:end -->}). Options as {@link Report}'s ({@code --seeds}, {@code --replicas},
 * {@code --load}, {@code --threads}, {@code --root}, {@code --out}).
 */
public final class PreciseReport {

    static final String SECTION = "precise-report";

    private PreciseReport() {}

    /** One condition of the comparison. */
    enum Condition {
        NO_PRESSURE("no pressure", "each replica's cache holds 150,000 tokens (as the main report)"),
        PRESSURE(
                "pressure",
                "the cluster's caches together hold about half the workload's working set (the distinct blocks "
                        + "of every prompt and answer)"),
        RESTART("restart", "no pressure; replica 0's engine restarts once half the requests were sent");

        final String title;
        final String description;

        Condition(String title, String description) {
            this.title = title;
            this.description = description;
        }
    }

    /**
     * One (workload, condition, seed): both modes' runs, and the approximate mode behind a host that reports
     * nothing back ({@code unreported}: the specification's host, learning on route alone, as a router without
     * the replicas' usage, such as the approximate modes of other routers, works).
     */
    record Pair(
            String workload,
            Condition condition,
            long seed,
            RunResult approximate,
            RunResult precise,
            RunResult unreported,
            Bounds bounds) {}

    /** What the condition's total cache allows on the workload ({@link CapacityBounds}), over the ideal. */
    record Bounds(double lru, double optimal) {}

    public static void main(String[] args) throws Exception {
        Report.Settings s = Report.Settings.parse(args);
        long cpu0 = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        List<Pair> pairs = run(s);
        String section = markdown(s, pairs, (System.nanoTime() - t0) / 1e9);
        Path md = s.root.resolve(s.out).resolve("precise-mode.md");
        String doc = Files.exists(md) ? Files.readString(md, StandardCharsets.UTF_8) : "";
        Files.writeString(md, KeptSections.withSection(doc, SECTION, section), StandardCharsets.UTF_8);
        System.out.printf(
                Locale.ROOT,
                "wrote %s (%.0f s wall, main thread CPU %.0f s)%n",
                md,
                (System.nanoTime() - t0) / 1e9,
                (ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - cpu0) / 1e9);
    }

    static List<Workload> workloads(Report.Settings s, long seed) {
        long clusterCache = s.replicas * EngineConfig.defaults().cacheTokens();
        return List.of(
                Workloads.sharedPrefix(seed),
                Workloads.rag(seed, clusterCache),
                Workloads.multiTurn(seed),
                Workloads.branching(seed),
                Workloads.hotPrefix(seed, 0.8));
    }

    static List<Pair> run(Report.Settings s) {
        List<Callable<List<Pair>>> tasks = new ArrayList<>();
        PreparedWorkload.Options opts = PreparedWorkload.Options.defaults().withTokenizer(true);
        for (long seed : s.seeds) {
            for (Workload w : workloads(s, seed)) {
                tasks.add(() -> {
                    PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults(), opts);
                    double rate = RunMatrix.rateFor(s.load, s.replicas, RunMatrix.ReplicaModel.TOKENIZING, p);
                    PreparedWorkload timed = p.retimed(w.poisson(rate, seed));
                    List<Pair> out = new ArrayList<>();
                    for (Condition c : Condition.values()) {
                        out.add(new Pair(
                                w.name(),
                                c,
                                seed,
                                once(s, seed, timed, c, false),
                                once(s, seed, timed, c, true),
                                once(s, seed, timed, c, Variant.specified(Variant.SPECIFIED, Map.of()), false),
                                bounds(timed, c, s.replicas)));
                    }
                    System.out.println("seed " + seed + " " + w.name() + " done");
                    return out;
                });
            }
        }
        List<Pair> all = new ArrayList<>();
        for (List<Pair> l : RunMatrix.parallel(s.threads, tasks)) {
            all.addAll(l);
        }
        return all;
    }

    static RunResult once(Report.Settings s, long seed, PreparedWorkload p, Condition c, boolean precise) {
        return once(s, seed, p, c, Variant.shipped(Variant.CACHE_AWARE, "cache_aware", Map.of()), precise);
    }

    static RunResult once(Report.Settings s, long seed, PreparedWorkload p, Condition c, Variant v, boolean precise) {
        Simulation.Builder b =
                RunMatrix.simulation(s, seed, v, RunMatrix::registered, 0).precise(precise);
        if (c == Condition.PRESSURE) {
            b.cacheTokens(pressureCacheTokens(p, s.replicas));
        }
        if (c == Condition.RESTART) {
            b.restartMidRun(0);
        }
        return b.build().run(p);
    }

    static Bounds bounds(PreparedWorkload p, Condition c, int replicas) {
        long perReplica = c == Condition.PRESSURE
                ? pressureCacheTokens(p, replicas)
                : EngineConfig.defaults().cacheTokens();
        long blocks = perReplica / RequestKeys.BLOCK_TOKENS * replicas;
        double ideal = p.idealHitRatio();
        return new Bounds(CapacityBounds.pooledLru(p, blocks) / ideal, CapacityBounds.pooledOptimal(p, blocks) / ideal);
    }

    /** Per replica, half the workload's working set (its distinct blocks) over the replicas. */
    static long pressureCacheTokens(PreparedWorkload p, int replicas) {
        Set<Long> distinct = new HashSet<>();
        for (long[] b : p.blocks) {
            for (long h : b) {
                distinct.add(h);
            }
        }
        long tokens = (long) distinct.size() * RequestKeys.BLOCK_TOKENS;
        return Math.max(RequestKeys.BLOCK_TOKENS * 64L, tokens / 2 / replicas);
    }

    // ------------------------------------------------------------------------------------------------
    // output

    private static String range(List<Double> xs, String fmt) {
        List<Double> v = new ArrayList<>(xs);
        v.sort(null);
        double med = v.get((v.size() - 1) / 2);
        if (v.size() == 1) {
            return String.format(Locale.ROOT, fmt, med);
        }
        return String.format(Locale.ROOT, fmt + " [" + fmt + "–" + fmt + "]", med, v.get(0), v.get(v.size() - 1));
    }

    /** One table cell: {@code value} over the seeds' runs in {@code ps}, as {@link #range}, then the cell's end. */
    private static String cell(List<Pair> ps, ToDoubleFunction<Pair> value, String fmt) {
        return " " + range(ps.stream().map(p -> value.applyAsDouble(p)).toList(), fmt) + " |";
    }

    static String markdown(Report.Settings s, List<Pair> pairs, double seconds) {
        StringBuilder sb = new StringBuilder();
        sb.append(KeptSections.begin(SECTION)).append('\n');
        sb.append("### Routing quality: precise against approximate against the ideal\n\n");
        sb.append(String.format(
                Locale.ROOT,
                "Generated by `PreciseReport` (seeds %s, %d replicas, load %.1f; %.0f s on this machine). "
                        + "Each figure is the median over the seeds with the range in brackets; a ratio is taken seed by "
                        + "seed. Both modes route with `cache_aware` at its defaults behind the proxy's host behaviour "
                        + "(first tokens, usage and answers reported); precise mode adds the engines' events. *hit/ideal*: "
                        + "the replicas' measured hit ratio over the workload's ideal (an infinite cache, perfect "
                        + "placement). *overpredicted*: the share of requests whose predicted cached tokens exceeded what "
                        + "the replica delivered by more than two blocks and a tenth.\n\n",
                seedsText(s.seeds),
                s.replicas,
                s.load,
                seconds));
        for (Condition c : Condition.values()) {
            sb.append("#### ")
                    .append(c.title)
                    .append("\n\n")
                    .append(c.description)
                    .append(".\n\n");
            sb.append("| workload | hit/ideal approximate | hit/ideal precise | P99 TTFT approximate (ms) "
                    + "| P99 TTFT precise (ms) | P99 precise / approximate | overpredicted approximate "
                    + "| overpredicted precise |\n");
            sb.append("|---|---|---|---|---|---|---|---|\n");
            for (String w : workloadNames(pairs)) {
                List<Pair> ps = pairs.stream()
                        .filter(p -> p.workload().equals(w) && p.condition() == c)
                        .toList();
                sb.append("| ")
                        .append(w)
                        .append(" |")
                        .append(cell(ps, p -> share(p.approximate()), "%.3f"))
                        .append(cell(ps, p -> share(p.precise()), "%.3f"))
                        .append(cell(ps, p -> p.approximate().ttftP99Millis(), "%.0f"))
                        .append(cell(ps, p -> p.precise().ttftP99Millis(), "%.0f"))
                        .append(cell(ps, PreciseReport::p99Ratio, "%.2f"))
                        .append(cell(ps, p -> over(p.approximate()), "%.3f"))
                        .append(cell(ps, p -> over(p.precise()), "%.3f"))
                        .append('\n');
            }
            sb.append('\n');
            if (c == Condition.PRESSURE) {
                sb.append(capacity(pairs, c));
            }
        }
        sb.append(unreported(pairs));
        sb.append(verdicts(pairs));
        sb.append(KeptSections.end(SECTION)).append('\n');
        return sb.toString();
    }

    /** The hit ratios the condition's total cache allows, beside precise mode's. */
    private static String capacity(List<Pair> pairs, Condition c) {
        StringBuilder sb = new StringBuilder();
        sb.append("What this cache allows (`CapacityBounds`: the cluster's caches pooled into one, requests in order; "
                + "*LRU*: least recently used eviction, prefix hits, a reference, not a bound; *optimal*: Belady's "
                + "offline replacement, every cached block counted, a bound no router or index can pass), over the "
                + "ideal:\n\n");
        sb.append("| workload | pooled LRU / ideal | optimal / ideal | precise hit / ideal | precise hit / optimal |\n"
                + "|---|---|---|---|---|\n");
        for (String w : workloadNames(pairs)) {
            List<Pair> ps = pairs.stream()
                    .filter(p -> p.workload().equals(w) && p.condition() == c)
                    .toList();
            sb.append("| ")
                    .append(w)
                    .append(" |")
                    .append(cell(ps, p -> p.bounds().lru(), "%.3f"))
                    .append(cell(ps, p -> p.bounds().optimal(), "%.3f"))
                    .append(cell(ps, p -> share(p.precise()), "%.3f"))
                    .append(cell(ps, p -> share(p.precise()) / p.bounds().optimal(), "%.3f"))
                    .append('\n');
        }
        sb.append('\n');
        return sb.toString();
    }

    /** Precise mode against the approximate mode of a host that reports nothing back, by condition. */
    private static String unreported(List<Pair> pairs) {
        StringBuilder sb = new StringBuilder("#### Against an approximate mode that hears nothing back\n\n");
        sb.append("The approximate mode behind the specification's host (`cache_aware` at its defaults, learning on "
                + "route, no usage or answers reported, so no correction by what the replicas cached).\n\n");
        sb.append("| workload | condition | hit/ideal, approximate unreported | P99 TTFT, approximate unreported (ms) "
                + "| P99 precise / approximate unreported |\n|---|---|---|---|---|\n");
        for (String w : workloadNames(pairs)) {
            for (Condition c : Condition.values()) {
                List<Pair> ps = pairs.stream()
                        .filter(p -> p.workload().equals(w) && p.condition() == c)
                        .toList();
                sb.append("| ")
                        .append(w)
                        .append(" | ")
                        .append(c.title)
                        .append(" |")
                        .append(cell(ps, p -> share(p.unreported()), "%.3f"))
                        .append(cell(ps, p -> p.unreported().ttftP99Millis(), "%.0f"))
                        .append(cell(ps, PreciseReport::p99RatioUnreported, "%.2f"))
                        .append('\n');
            }
        }
        sb.append('\n');
        return sb.toString();
    }

    private static String verdicts(List<Pair> pairs) {
        StringBuilder sb = new StringBuilder("#### Targets, seed by seed\n\n");
        sb.append("| workload | pressure: hit ≥ 0.95 × ideal (precise) | pressure: P99 ≤ 0.8 × approximate "
                + "| pressure: P99 ≤ 0.8 × approximate unreported "
                + "| no pressure: no worse than approximate (hit within 0.01, P99 ≤ 1.1×) |\n|---|---|---|---|---|\n");
        for (String w : workloadNames(pairs)) {
            List<Pair> pr = pairs.stream()
                    .filter(p -> p.workload().equals(w) && p.condition() == Condition.PRESSURE)
                    .toList();
            List<Pair> np = pairs.stream()
                    .filter(p -> p.workload().equals(w) && p.condition() == Condition.NO_PRESSURE)
                    .toList();
            long hit = pr.stream().filter(p -> share(p.precise()) >= 0.95).count();
            long p99 = pr.stream().filter(p -> p99Ratio(p) <= 0.8).count();
            long p99Unreported =
                    pr.stream().filter(p -> p99RatioUnreported(p) <= 0.8).count();
            long same = np.stream()
                    .filter(p -> share(p.precise()) >= share(p.approximate()) - 0.01 && p99Ratio(p) <= 1.1)
                    .count();
            sb.append(String.format(
                    Locale.ROOT,
                    "| %s | %d of %d seeds | %d of %d seeds | %d of %d seeds | %d of %d seeds |%n",
                    w,
                    hit,
                    pr.size(),
                    p99,
                    pr.size(),
                    p99Unreported,
                    pr.size(),
                    same,
                    np.size()));
        }
        sb.append('\n');
        return sb.toString();
    }

    private static List<String> workloadNames(List<Pair> pairs) {
        List<String> out = new ArrayList<>();
        for (Pair p : pairs) {
            if (!out.contains(p.workload())) {
                out.add(p.workload());
            }
        }
        return out;
    }

    private static double share(RunResult r) {
        return r.idealHitRatio() == 0 ? Double.NaN : r.hitRatio() / r.idealHitRatio();
    }

    private static double p99Ratio(Pair p) {
        return p.precise().ttftP99Millis() / p.approximate().ttftP99Millis();
    }

    private static double p99RatioUnreported(Pair p) {
        return p.precise().ttftP99Millis() / p.unreported().ttftP99Millis();
    }

    private static double over(RunResult r) {
        RunResult.Feedback f = r.feedback();
        return f.reports() == 0 ? Double.NaN : (double) f.overpredicted() / f.reports();
    }

    private static String seedsText(List<Long> seeds) {
        if (seeds.size() > 1 && seeds.get(seeds.size() - 1) - seeds.get(0) == seeds.size() - 1) {
            return seeds.get(0) + "-" + seeds.get(seeds.size() - 1);
        }
        return seeds.toString();
    }

    /** For tests: the in-memory section for {@code pairs}. */
    static String section(Report.Settings s, List<Pair> pairs) throws IOException {
        return markdown(s, pairs, 0);
    }
}
