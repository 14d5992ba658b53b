package dev.cart.sim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The mixed-model section of {@code docs/routing-quality.md}: the {@link MixedModels} workload on its pool,
 * cache_aware against round robin and least loaded (each within the request's model, since the router
 * offers a policy only the replicas serving it), on the tokenizing replica, seeds 1-5 by default. Its own
 * entry point, since the whole report takes minutes:
 *
 * <pre>
 * mvn -B -ntp -pl examples/sim -am package -DskipTests dependency:build-classpath \
 *     -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
 * java -cp "examples/sim/target/classes:$(cat examples/sim/target/classpath.txt)" dev.cart.sim.MixedModelReport
 * </pre>
 *
 * (from the repository root; {@link #COMMAND}). It writes the section between
 * {@link #BEGIN} and {@link #END} in {@code <out>/routing-quality.md}, replacing the one there or appending
 * it; {@link Report} keeps the section when it rewrites the file. Options as {@link Report.Settings}
 * ({@code --seeds}, {@code --load}, {@code --threads}, {@code --out}); {@code --replicas} is the pool's.
 *
 * <p>Each run also checks the routing itself: a request sent to a replica that does not serve its model
 * fails the run, so the figures come only from runs that kept every model on its replicas.
 */
public final class MixedModelReport {

    /** How the section is regenerated, from the repository root. */
    static final String COMMAND = "mvn -B -ntp -pl examples/sim -am package -DskipTests dependency:build-classpath"
            + " -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime`, then `java -cp"
            + " \"examples/sim/target/classes:$(cat examples/sim/target/classpath.txt)\" dev.cart.sim.MixedModelReport";

    private static final String NAME = "mixed-models";
    static final String BEGIN = KeptSections.begin(NAME);
    static final String END = KeptSections.end(NAME);

    private static final List<Variant> VARIANTS = List.of(
            Variant.shipped(Variant.ROUND_ROBIN, "round_robin", Map.of()),
            Variant.shipped(Variant.LEAST_LOADED, "least_loaded", Map.of()),
            Variant.shipped(Variant.CACHE_AWARE, "cache_aware", Map.of()));

    private static final List<String> MODELS = List.of(MixedModels.LLAMA, MixedModels.LLAMA_SQL, MixedModels.QWEN);

    /** One seed's runs, in {@link #VARIANTS} order, with each run's per-model hit ratios. */
    record SeedRuns(long seed, double rate, List<RunResult> runs, List<Map<String, Double>> modelHits) {}

    private MixedModelReport() {}

    public static void main(String[] args) throws IOException {
        Report.Settings s = Report.Settings.parse(args);
        s.replicas = MixedModels.POOL.size();
        long t0 = System.nanoTime();
        List<SeedRuns> seeds = run(s, MixedModels.Spec.defaults());
        double seconds = (System.nanoTime() - t0) / 1e9;
        Path md = s.outDir().resolve("routing-quality.md");
        Files.createDirectories(md.getParent());
        String section = render(s, seeds, seconds);
        String before = Files.exists(md) ? Files.readString(md, StandardCharsets.UTF_8) : "";
        Files.writeString(md, withSection(before, section), StandardCharsets.UTF_8);
        System.out.printf(Locale.ROOT, "wrote the mixed-model section of %s in %.1f s%n", md, seconds);
    }

    /** Runs every variant on every seed of {@code s}. */
    static List<SeedRuns> run(Report.Settings s, MixedModels.Spec spec) {
        List<Callable<SeedRuns>> tasks = new ArrayList<>();
        for (long seed : s.seeds) {
            tasks.add(() -> {
                Workload w = MixedModels.workload(seed, spec);
                PreparedWorkload p =
                        PreparedWorkload.of(w, EngineConfig.defaults(), RunMatrix.ReplicaModel.TOKENIZING.options());
                double rate = RunMatrix.rateFor(s.load, s.replicas, RunMatrix.ReplicaModel.TOKENIZING, p);
                PreparedWorkload timed = p.retimed(w.poisson(rate, seed));
                List<RunResult> runs = new ArrayList<>();
                List<Map<String, Double>> hits = new ArrayList<>();
                for (Variant v : VARIANTS) {
                    RunResult r = RunMatrix.simulation(s, seed, v, RunMatrix::registered, 0)
                            .replicaModels(MixedModels.POOL)
                            .build()
                            .run(timed);
                    check(timed, r);
                    runs.add(r);
                    hits.add(modelHitRatios(timed, r));
                }
                return new SeedRuns(seed, rate, runs, hits);
            });
        }
        return RunMatrix.parallel(s.threads, tasks);
    }

    /** Fails when a request reached a replica not serving its model, or was not completed. */
    static void check(PreparedWorkload p, RunResult r) {
        int[] replica = r.trace().replica();
        for (int i = 0; i < replica.length; i++) {
            String model = p.models[i];
            if (replica[i] < 0) {
                throw new IllegalStateException(r.policy() + ": request " + i + " (" + model + ") was not routed");
            }
            if (!MixedModels.POOL.get(replica[i]).contains(model)) {
                throw new IllegalStateException(
                        r.policy() + ": request " + i + " for " + model + " reached replica " + replica[i]);
            }
        }
        if (r.completed() != r.requests()) {
            throw new IllegalStateException(r.policy() + ": " + (r.requests() - r.completed()) + " requests lost");
        }
    }

    /** Cached over prompt tokens per model, from the run's per-request trace. */
    static Map<String, Double> modelHitRatios(PreparedWorkload p, RunResult r) {
        Map<String, long[]> sums = new LinkedHashMap<>();
        int[] cached = r.trace().cached();
        for (int i = 0; i < cached.length; i++) {
            long[] t = sums.computeIfAbsent(p.models[i], k -> new long[2]);
            t[0] += Math.max(0, cached[i]);
            t[1] += p.promptTokens[i];
        }
        Map<String, Double> out = new LinkedHashMap<>();
        sums.forEach((m, t) -> out.put(m, t[1] == 0 ? 0 : (double) t[0] / t[1]));
        return out;
    }

    static String render(Report.Settings s, List<SeedRuns> seeds, double seconds) {
        StringBuilder b = new StringBuilder();
        b.append(BEGIN).append('\n');
        b.append("## Mixed models: two base models and a LoRA adapter\n\n");
        b.append("Written by `dev.cart.sim.MixedModelReport` (its own entry point; the rest of this file is ")
                .append("`dev.cart.sim.Report`'s, which keeps this section), ")
                .append(Instant.now().truncatedTo(ChronoUnit.SECONDS))
                .append(String.format(Locale.ROOT, ", %.1f s for %d runs. ", seconds, seeds.size() * VARIANTS.size()))
                .append("Command (from the repository root): `")
                .append(COMMAND)
                .append("` (options as the report's: `--seeds`, `--load`, `--threads`).\n\n");
        Workload w = MixedModels.workload(seeds.get(0).seed());
        b.append("Pool: ")
                .append(s.replicas)
                .append(" replicas, each the tokenizing replica model of the tables above: replicas 0-3 serve `")
                .append(MixedModels.LLAMA)
                .append("`, 4-5 `")
                .append(MixedModels.QWEN)
                .append("`, and 0-2 (half the pool) also the LoRA adapter `")
                .append(MixedModels.LLAMA_SQL)
                .append("`; a replica caches each model's blocks apart. Workload: ")
                .append(w.description())
                .append(String.format(
                        Locale.ROOT,
                        "; Poisson arrivals at the rate where the prompt tokens with no cache reuse would need %.0f%% "
                                + "of the pool's nominal prefill throughput (%.1f-%.1f req/s over the seeds). ",
                        s.load * 100,
                        seeds.stream().mapToDouble(SeedRuns::rate).min().orElse(0),
                        seeds.stream().mapToDouble(SeedRuns::rate).max().orElse(0)))
                .append("Every request names its model and the router offers the policy only the replicas ")
                .append("serving it, so *round_robin* and *least_loaded* are round robin and least loaded ")
                .append("within the model; every run is checked to have sent no request to a replica not ")
                .append("serving its model. Seeds ")
                .append(seedList(seeds))
                .append("; median [min–max] over the seeds; ratios are taken seed by seed.\n\n");
        b.append("| policy | P99 TTFT (ms) | P50 TTFT (ms) | hit ratio | ideal |");
        for (String m : MODELS) {
            b.append(" hit ratio `").append(m).append("` |");
        }
        b.append("\n|---|---|---|---|---|");
        b.append("---|".repeat(MODELS.size()));
        b.append('\n');
        for (int v = 0; v < VARIANTS.size(); v++) {
            int vi = v;
            b.append("| ").append(VARIANTS.get(v).label()).append(" | ");
            b.append(spread(seeds, r -> r.runs().get(vi).ttftP99Millis()).format("%.0f"))
                    .append(" | ");
            b.append(spread(seeds, r -> r.runs().get(vi).ttftP50Millis()).format("%.0f"))
                    .append(" | ");
            b.append(spread(seeds, r -> r.runs().get(vi).hitRatio()).format("%.3f"))
                    .append(" | ");
            b.append(spread(seeds, r -> r.runs().get(vi).idealHitRatio()).format("%.3f"))
                    .append(" |");
            for (String m : MODELS) {
                b.append(' ')
                        .append(spread(seeds, r -> r.modelHits().get(vi).getOrDefault(m, 0.0))
                                .format("%.3f"))
                        .append(" |");
            }
            b.append('\n');
        }
        int ca = VARIANTS.size() - 1;
        b.append('\n');
        b.append("cache_aware's P99 over round_robin's: ")
                .append(spread(
                                seeds,
                                r -> r.runs().get(ca).ttftP99Millis()
                                        / r.runs().get(0).ttftP99Millis())
                        .format("%.2f"))
                .append("; over least_loaded's: ")
                .append(spread(
                                seeds,
                                r -> r.runs().get(ca).ttftP99Millis()
                                        / r.runs().get(1).ttftP99Millis())
                        .format("%.2f"))
                .append(". cache_aware's hit ratio minus round_robin's: ")
                .append(spread(
                                seeds,
                                r -> r.runs().get(ca).hitRatio()
                                        - r.runs().get(0).hitRatio())
                        .format("%.3f"))
                .append("; minus least_loaded's: ")
                .append(spread(
                                seeds,
                                r -> r.runs().get(ca).hitRatio()
                                        - r.runs().get(1).hitRatio())
                        .format("%.3f"))
                .append(".\n");
        b.append(END).append('\n');
        return b.toString();
    }

    private static String seedList(List<SeedRuns> seeds) {
        List<String> out = new ArrayList<>();
        for (SeedRuns r : seeds) {
            out.add(Long.toString(r.seed()));
        }
        return String.join(", ", out);
    }

    private static Spread spread(List<SeedRuns> seeds, java.util.function.ToDoubleFunction<SeedRuns> f) {
        double[] v = new double[seeds.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = f.applyAsDouble(seeds.get(i));
        }
        return Spread.of(v);
    }

    /** {@code doc} with {@code section} in place of the one it has, or appended after a blank line. */
    static String withSection(String doc, String section) {
        return KeptSections.withSection(doc, NAME, section);
    }

    /** The section {@code md} holds (with a newline after it), or "" when it holds none or does not exist. */
    static String keptSection(Path md) throws IOException {
        return KeptSections.kept(md, NAME);
    }
}
