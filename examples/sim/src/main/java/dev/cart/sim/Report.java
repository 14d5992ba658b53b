package dev.cart.sim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The routing-quality report's command line: parses the options, runs the matrix ({@link RunMatrix}) on the
 * tokenizing and the aligned replica, the learning section ({@link Features}) and the load sensitivity
 * ({@link LoadSensitivity}), the {@code predicted_ttft} comparison ({@link TtftComparison}), and writes {@code routing-quality.md} ({@link ReportMarkdown}) and
 * {@code routing-quality.png} ({@link Chart}).
 *
 * <pre>
 * java dev.cart.sim.Report [--root .] [--out docs] [--trace ../shared/traces/mooncake_synthetic_trace.jsonl]
 *                          [--seeds 1-5 | --seed N] [--replicas 4] [--load 0.7] [--trace-block-chars 256]
 *                          [--threads 2]
 * </pre>
 * {@code --out} and {@code --trace} are relative to {@code --root}, the repository root (by default the
 * working directory). {@code --threads} changes how long the report takes, not what it says.
 */
public final class Report {

    /** Options of one report run. */
    static final class Settings {
        static final List<Long> DEFAULT_SEEDS = List.of(1L, 2L, 3L, 4L, 5L);

        Path root = Path.of("");
        Path out = Path.of("docs");
        Path trace = Path.of("../shared/traces/mooncake_synthetic_trace.jsonl");
        List<Long> seeds = DEFAULT_SEEDS;
        int replicas = 4;
        double load = 0.7;
        int traceBlockChars = Workloads.MOONCAKE_BLOCK_CHARS;
        int threads = Math.min(2, Runtime.getRuntime().availableProcessors());

        static Settings parse(String[] args) {
            Settings s = new Settings();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value after " + a);
                }
                String v = args[++i];
                switch (a) {
                    case "--root" -> s.root = Path.of(v);
                    case "--out" -> s.out = Path.of(v);
                    case "--trace" -> s.trace = Path.of(v);
                    case "--seed" -> s.seeds = List.of(Long.parseLong(v));
                    case "--seeds" -> s.seeds = seeds(v);
                    case "--replicas" -> s.replicas = Integer.parseInt(v);
                    case "--load" -> s.load = Double.parseDouble(v);
                    case "--trace-block-chars" -> s.traceBlockChars = Integer.parseInt(v);
                    case "--threads" -> s.threads = Math.max(1, Integer.parseInt(v));
                    default ->
                        throw new IllegalArgumentException("unknown option " + a + "; options: --root, --out, "
                                + "--trace, --seeds, --seed, --replicas, --load, --trace-block-chars, --threads");
                }
            }
            return s;
        }

        /** {@code 1-5}, {@code 1,3,7} or a mix ({@code 1-3,9}). */
        static List<Long> seeds(String v) {
            List<Long> out = new ArrayList<>();
            for (String part : v.split(",")) {
                String p = part.trim();
                int dash = p.indexOf('-', 1);
                if (dash > 0) {
                    long from = Long.parseLong(p.substring(0, dash).trim());
                    long to = Long.parseLong(p.substring(dash + 1).trim());
                    if (to < from || to - from > 1000) {
                        throw new IllegalArgumentException("bad seed range " + p);
                    }
                    for (long x = from; x <= to; x++) {
                        out.add(x);
                    }
                } else {
                    out.add(Long.parseLong(p));
                }
            }
            if (out.isEmpty() || out.stream().distinct().count() != out.size()) {
                throw new IllegalArgumentException("--seeds needs distinct seeds, was " + v);
            }
            return List.copyOf(out);
        }

        /** {@code out} resolved against the repository root. */
        Path outDir() {
            return root.resolve(out).normalize();
        }

        /** {@code trace} resolved against the repository root. */
        Path tracePath() {
            return root.resolve(trace).normalize();
        }

        /** The seeds as typed: {@code 1-5} when consecutive. */
        String seedsText() {
            return seedsText(seeds);
        }

        /** {@code seeds} as typed: {@code 1-5} when consecutive, else a list. */
        static String seedsText(List<Long> seeds) {
            boolean consecutive = true;
            for (int i = 1; i < seeds.size(); i++) {
                consecutive &= seeds.get(i) == seeds.get(i - 1) + 1;
            }
            if (seeds.size() > 2 && consecutive) {
                return seeds.get(0) + "-" + seeds.get(seeds.size() - 1);
            }
            StringBuilder sb = new StringBuilder();
            for (long x : seeds) {
                sb.append(sb.length() == 0 ? "" : ",").append(x);
            }
            return sb.toString();
        }

        /** The options that change the figures and differ from the defaults, as typed (paths relative). */
        String nonDefault() {
            Settings d = new Settings();
            StringBuilder sb = new StringBuilder();
            if (!out.equals(d.out)) {
                sb.append(" --out ").append(out);
            }
            if (!trace.equals(d.trace)) {
                sb.append(" --trace ").append(trace);
            }
            if (!seeds.equals(d.seeds)) {
                sb.append(" --seeds ").append(seedsText());
            }
            if (replicas != d.replicas) {
                sb.append(" --replicas ").append(replicas);
            }
            if (load != d.load) {
                sb.append(" --load ").append(load);
            }
            if (traceBlockChars != d.traceBlockChars) {
                sb.append(" --trace-block-chars ").append(traceBlockChars);
            }
            return sb.toString().trim();
        }
    }

    private Report() {}

    public static void main(String[] args) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Settings s = Settings.parse(args);
        long t0 = System.nanoTime();
        long cpu0 = ReportMarkdown.processCpuNanos();
        RunMatrix.Matrix main = RunMatrix.run(s, RunMatrix.ReplicaModel.TOKENIZING, Variant.all(), true);
        RunMatrix.Matrix aligned = RunMatrix.run(s, RunMatrix.ReplicaModel.ALIGNED, Variant.core(), true);
        List<Features.Feature> features = Features.run(s, main, RunMatrix::registered, true);
        List<LoadSensitivity.Point> sens = LoadSensitivity.run(s, main);
        List<TtftComparison.ShapeRuns> ttft = TtftComparison.run(s, main, true);
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpuSeconds = (ReportMarkdown.processCpuNanos() - cpu0) / 1e9;
        Path dir = s.outDir();
        Files.createDirectories(dir);
        Path md = dir.resolve("routing-quality.md");
        Path png = dir.resolve("routing-quality.png");
        String mixedModels = MixedModelReport.keptSection(md); // written by its own entry point
        String scaleOut = KeptSections.kept(md, "scale-out"); // a summary of scale-out.md (ScaleOutReport)
        Files.writeString(
                md,
                ReportMarkdown.render(s, main, aligned, features, sens, TtftComparison.runs(ttft), seconds, cpuSeconds)
                        + TtftComparison.markdown(s, ttft)
                        + scaleOut
                        + mixedModels,
                StandardCharsets.UTF_8);
        Chart.write(png, s, main);
        System.out.printf(Locale.ROOT, "wrote %s and %s in %.1f s (%.1f s of CPU)%n", md, png, seconds, cpuSeconds);
    }
}
