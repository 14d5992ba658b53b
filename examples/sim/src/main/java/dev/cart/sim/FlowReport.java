package dev.cart.sim;

import dev.cart.flow.FlowConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.ToDoubleFunction;

/**
 * The admission queue's evidence: overload scenarios on the simulated pool with the router in process,
 * over several seeds, written to {@code docs/flow-control.md} (its section "Evidence", kept between markers).
 *
 * <pre>
 * java dev.cart.sim.FlowReport [--root .] [--seeds 1-5] [--replicas 4] [--max-load 16] [--overload 1.5]
 * </pre>
 *
 * <p>Per seed: the RAG workload (Zipf-popular documents, so cache placement matters); the pool's capacity
 * measured as the throughput of a closed loop with as many clients as the pool has slots (cache_aware);
 * arrivals then Poisson at {@code overload} times that; each request a tenant's, the heavy tenant's with
 * probability 5/6 (five times the polite tenant's share), every request with a 2 s deadline. Runs: round
 * robin and cache_aware with the specification's immediate 503, cache_aware with the admission queue;
 * the polite tenant alone; and a priority run (one tenant, a tenth of the requests in band 0) loaded and
 * with band 0 alone.
 */
public final class FlowReport {

    static final long DEADLINE_MS = 2_000;

    /**
     * What a host gives the queue of a request's deadline: the deadline less what serving it takes (its
     * time to first token on a busy replica), so that a request handed a slot late still makes it.
     */
    static final long QUEUE_BUDGET_MS = Long.getLong("flow.budget", 1_500);

    /** Retries of a request answered 429 or 503, after its Retry-After: the OpenAI SDK's default (2). */
    static final int RETRIES = 2;

    /** The section of {@code docs/flow-control.md} this report writes (the rest of the file is kept). */
    static final String SECTION = "flow-evidence";

    private FlowReport() {}

    /** One seed's runs. */
    record Seed(
            long seed,
            double capacity,
            FlowSimulation.ClassResult[][] rr503,
            FlowSimulation.ClassResult[][] ca503,
            FlowSimulation.ClassResult[][] flow,
            FlowSimulation.ClassResult[][] politeAlone503,
            FlowSimulation.ClassResult[][] politeAloneFlow,
            FlowSimulation.ClassResult[][] bandsLoaded,
            FlowSimulation.ClassResult[][] band0Alone,
            FlowSimulation.ClassResult[][] burst503,
            FlowSimulation.ClassResult[][] burstFlow,
            FlowSimulation.ClassResult[][] burst503Once,
            FlowSimulation.ClassResult[][] burstFlowOnce) {}

    /** Bursts: {@link #BURST_HIGH}x the capacity for {@link #BURST_HIGH_S} s, then {@link #BURST_LOW}x. */
    static final double BURST_HIGH = 2.0;

    static final double BURST_LOW = 0.5;
    static final double BURST_HIGH_S = 1.0;
    static final double BURST_LOW_S = 2.0;

    static final int POLITE = 0;
    static final int HEAVY = 1;

    public static void main(String[] args) throws IOException {
        Path root = Path.of(".");
        List<Long> seeds = Report.Settings.DEFAULT_SEEDS;
        int replicas = 4;
        int maxLoad = 16;
        double overload = 1.5;
        for (int i = 0; i + 1 < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--root" -> root = Path.of(v);
                case "--seeds" -> seeds = Report.Settings.seeds(v);
                case "--replicas" -> replicas = Integer.parseInt(v);
                case "--max-load" -> maxLoad = Integer.parseInt(v);
                case "--overload" -> overload = Double.parseDouble(v);
                default ->
                    throw new IllegalArgumentException("unknown option " + args[i]
                            + "; options: --root, --seeds, --replicas, --max-load, --overload");
            }
        }
        if (System.getenv("FLOW_DEBUG") != null) {
            debug(seeds.get(0), replicas, maxLoad, overload);
            return;
        }
        long t0 = System.nanoTime();
        long cpu0 = ReportMarkdown.processCpuNanos();
        List<Seed> runs = new ArrayList<>();
        for (long seed : seeds) {
            runs.add(runSeed(seed, replicas, maxLoad, overload));
            System.err.println("flow report: seed " + seed + " done");
        }
        String md = render(
                runs,
                replicas,
                maxLoad,
                overload,
                (System.nanoTime() - t0) / 1e9,
                (ReportMarkdown.processCpuNanos() - cpu0) / 1e9);
        Path doc = root.resolve("docs/flow-control.md");
        String before = Files.exists(doc) ? Files.readString(doc) : "";
        String section = KeptSections.begin(SECTION) + "\n" + md + KeptSections.end(SECTION) + "\n";
        Files.writeString(doc, KeptSections.withSection(before, SECTION, section));
        System.err.println("wrote " + doc);
    }

    static Seed runSeed(long seed, int replicas, int maxLoad, double overload) {
        EngineConfig engine = EngineConfig.defaults();
        Workload base = Workloads.rag(seed, (long) replicas * engine.cacheTokens());
        PreparedWorkload prepared = PreparedWorkload.of(base, engine);
        int n = prepared.size();
        int[] one = new int[n];
        int[] band1 = new int[n];
        java.util.Arrays.fill(band1, 1);
        String[] anon = new String[n];
        java.util.Arrays.fill(anon, "anonymous");
        boolean[] all = new boolean[n];
        java.util.Arrays.fill(all, true);

        FlowSimulation.Setup off = new FlowSimulation.Setup(
                "cache_aware", FlowConfig.defaults(), replicas, maxLoad, seed, DEADLINE_MS, QUEUE_BUDGET_MS, RETRIES);
        FlowSimulation cap = new FlowSimulation(prepared, off, one, 1, band1, anon, all, replicas * maxLoad);
        cap.run();
        double capacity = cap.throughput();

        PreparedWorkload w = prepared.retimed(base.poisson(overload * capacity, seed));
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 0xF10L));
        int[] tenantClass = new int[n];
        String[] tenants = new String[n];
        boolean[] polite = new boolean[n];
        int[] bandClass = new int[n];
        int[] bands = new int[n];
        boolean[] band0 = new boolean[n];
        for (int i = 0; i < n; i++) {
            boolean heavy = rnd.nextInt(6) != 0; // five times the polite tenant's share
            tenantClass[i] = heavy ? HEAVY : POLITE;
            tenants[i] = heavy ? "heavy" : "polite";
            polite[i] = !heavy;
            bands[i] = rnd.nextInt(10) == 0 ? 0 : 1;
            bandClass[i] = bands[i];
            band0[i] = bands[i] == 0;
        }
        FlowConfig on = FlowConfig.enabledDefaults().withMaxWait(java.time.Duration.ofMillis(DEADLINE_MS));
        if (System.getProperty("flow.affinity") != null) {
            on = on.withAffinity(java.time.Duration.ofMillis(Long.getLong("flow.affinity")), 4, 3);
        }
        if (System.getProperty("flow.reserve") != null) {
            on = on.withReserveRatio(Double.parseDouble(System.getProperty("flow.reserve")));
        }
        FlowSimulation.Setup rr = new FlowSimulation.Setup(
                "round_robin", FlowConfig.defaults(), replicas, maxLoad, seed, DEADLINE_MS, QUEUE_BUDGET_MS, RETRIES);
        FlowSimulation.Setup flow = new FlowSimulation.Setup(
                "cache_aware", on, replicas, maxLoad, seed, DEADLINE_MS, QUEUE_BUDGET_MS, RETRIES);
        // bursts a queue can absorb: above capacity for less than the deadline, then below, at the capacity
        // on average; clients that retry as the SDKs do, and clients that do not retry
        PreparedWorkload bursty = prepared.retimed(
                base.bursts(BURST_HIGH * capacity, BURST_LOW * capacity, BURST_HIGH_S, BURST_LOW_S, seed));
        FlowSimulation.Setup offOnce = new FlowSimulation.Setup(
                "cache_aware", FlowConfig.defaults(), replicas, maxLoad, seed, DEADLINE_MS, QUEUE_BUDGET_MS, 0);
        FlowSimulation.Setup flowOnce =
                new FlowSimulation.Setup("cache_aware", on, replicas, maxLoad, seed, DEADLINE_MS, QUEUE_BUDGET_MS, 0);
        int[] none = new int[n];
        return new Seed(
                seed,
                capacity,
                both(new FlowSimulation(w, rr, tenantClass, 2, band1, tenants, all, 0)),
                both(new FlowSimulation(w, off, tenantClass, 2, band1, tenants, all, 0)),
                both(new FlowSimulation(w, flow, tenantClass, 2, band1, tenants, all, 0)),
                both(new FlowSimulation(w, off, tenantClass, 2, band1, tenants, polite, 0)),
                both(new FlowSimulation(w, flow, tenantClass, 2, band1, tenants, polite, 0)),
                both(new FlowSimulation(w, flow, bandClass, 2, bands, anon, all, 0)),
                both(new FlowSimulation(w, flow, bandClass, 2, bands, anon, band0, 0)),
                both(new FlowSimulation(bursty, off, none, 1, band1, anon, all, 0)),
                both(new FlowSimulation(bursty, flow, none, 1, band1, anon, all, 0)),
                both(new FlowSimulation(bursty, offOnce, none, 1, band1, anon, all, 0)),
                both(new FlowSimulation(bursty, flowOnce, none, 1, band1, anon, all, 0)));
    }

    /** The run's results over every request ([0]) and after the warm-up ([1]). */
    private static FlowSimulation.ClassResult[][] both(FlowSimulation sim) {
        FlowSimulation.ClassResult[] all = sim.run();
        return new FlowSimulation.ClassResult[][] {all, sim.steady()};
    }

    private static void debug(long seed, int replicas, int maxLoad, double overload) {
        Seed s = runSeed(seed, replicas, maxLoad, overload);
        for (String name : List.of("rr503", "ca503", "flow", "alone503", "aloneFlow", "bands", "band0")) {
            FlowSimulation.ClassResult[] r = switch (name) {
                case "rr503" -> s.rr503()[1];
                case "ca503" -> s.ca503()[1];
                case "flow" -> s.flow()[1];
                case "alone503" -> s.politeAlone503()[1];
                case "aloneFlow" -> s.politeAloneFlow()[1];
                case "bands" -> s.bandsLoaded()[1];
                default -> s.band0Alone()[1];
            };
            for (int c = 0; c < r.length; c++) {
                FlowSimulation.ClassResult x = r[c];
                System.out.printf(
                        Locale.ROOT,
                        "%-9s class %d sent %4d served %4d refused %4d p50 %6.0f p99 %6.0f wait p50 %5.0f p99 %5.0f within %4d hit %.3f%n",
                        name,
                        c,
                        x.sent(),
                        x.served(),
                        x.refused(),
                        FlowSimulation.quantile(x.ttftMillis(), 0.5),
                        x.p99(),
                        FlowSimulation.quantile(x.queuedMillis(), 0.5),
                        FlowSimulation.quantile(x.queuedMillis(), 0.99),
                        x.withinDeadline(),
                        x.promptTokens() == 0 ? 0 : (double) x.cachedTokens() / x.promptTokens());
            }
        }
        System.out.printf(Locale.ROOT, "capacity %.1f%n", s.capacity());
    }

    // ---- figures ----

    static int goodput(FlowSimulation.ClassResult[] r) {
        int g = 0;
        for (FlowSimulation.ClassResult c : r) {
            g += c.withinDeadline();
        }
        return g;
    }

    static double hitRatio(FlowSimulation.ClassResult[] r) {
        long p = 0;
        long h = 0;
        for (FlowSimulation.ClassResult c : r) {
            p += c.promptTokens();
            h += c.cachedTokens();
        }
        return p == 0 ? Double.NaN : (double) h / p;
    }

    static int refused(FlowSimulation.ClassResult[] r) {
        int n = 0;
        for (FlowSimulation.ClassResult c : r) {
            n += c.refused();
        }
        return n;
    }

    private static Spread spread(List<Seed> runs, ToDoubleFunction<Seed> f) {
        return Spread.of(runs.stream().mapToDouble(f).toArray());
    }

    private static double worst(List<Seed> runs, ToDoubleFunction<Seed> f, boolean higherIsWorse) {
        double w = higherIsWorse ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
        for (Seed s : runs) {
            double v = f.applyAsDouble(s);
            w = higherIsWorse ? Math.max(w, v) : Math.min(w, v);
        }
        return w;
    }

    static String render(List<Seed> runs, int replicas, int maxLoad, double overload, double wall, double cpu) {
        StringBuilder md = new StringBuilder();
        md.append("## Evidence\n\n");
        md.append(String.format(
                Locale.ROOT,
                "Generated by `FlowReport` (seeds %s, %d replicas, `max_load` %d each, %.1fx the measured capacity, "
                        + "a %d ms deadline on every request, clients retrying a 429 or 503 up to %d times after its "
                        + "`Retry-After` as the SDKs do, in every run; the queue with its defaults (`reserve_ratio` %.2f); "
                        + "%.0f s wall, %.0f s CPU). Regenerate from the repository root with:\n\n",
                Report.Settings.seedsText(runs.stream().map(Seed::seed).toList()),
                replicas,
                maxLoad,
                overload,
                DEADLINE_MS,
                RETRIES,
                FlowConfig.defaults().reserveRatio(),
                wall,
                cpu));
        md.append("```sh\nmvn -B -ntp -pl examples/sim -am -Preport package -DskipTests "
                + "-Dreport.main=dev.cart.sim.FlowReport\n```\n\n");
        md.append("Every figure is `median [min–max]` over the seeds; a ratio is taken seed by seed. TTFT counts "
                + "from a request's first arrival (its time in the queue and its retries included). *Refused* counts the "
                + "requests answered 429 or 503 at least once (a retry may then have been served), and the time to "
                + "refusal is that of the first answer. *Goodput* is the number of requests whose first token came "
                + "within the deadline of their first arrival. The pool's capacity is measured per seed: the throughput of "
                + "a closed loop with one client per slot.\n\n");
        md.append("Capacity (requests/s): ")
                .append(spread(runs, Seed::capacity).format("%.1f"))
                .append("\n\n");

        md.append("### Two tenants, one at five times its share\n\n");
        md.append("P99 figures over every request, and (after the slash) over those arriving after the first "
                + FlowSimulation.WARM_UP_NANOS / 1_000_000_000L + " s: the run starts on an idle pool, and the first "
                + "slots free only when the first wave of requests ends (about a second later); a request queued "
                + "then waits for that.\n\n");
        MarkdownTable t = new MarkdownTable(
                "router",
                "polite P99 TTFT ms",
                "polite P99 / alone",
                "polite refused",
                "heavy refused",
                "heavy median time to refusal ms",
                "goodput",
                "hit ratio");
        addTenantRow(t, runs, "round_robin, 503 at once", Seed::rr503, Seed::politeAlone503);
        addTenantRow(t, runs, "cache_aware, 503 at once", Seed::ca503, Seed::politeAlone503);
        addTenantRow(t, runs, "cache_aware, admission queue", Seed::flow, Seed::politeAloneFlow);
        md.append(t).append('\n');

        md.append("### Priority band 0 under overload\n\n");
        MarkdownTable b = new MarkdownTable(
                "run", "band 0 P99 TTFT ms", "band 0 refused", "band 1 P99 TTFT ms", "band 1 refused");
        b.row(
                "a tenth in band 0, the rest in band 1, loaded",
                twice(runs, s -> s.bandsLoaded(), 0),
                spread(runs, s -> s.bandsLoaded()[0][0].refused()).format("%.0f"),
                twice(runs, s -> s.bandsLoaded(), 1),
                spread(runs, s -> s.bandsLoaded()[0][1].refused()).format("%.0f"));
        b.row(
                "band 0 alone (unloaded)",
                twice(runs, s -> s.band0Alone(), 0),
                spread(runs, s -> s.band0Alone()[0][0].refused()).format("%.0f"),
                "—",
                "—");
        md.append(b).append('\n');

        md.append("### Bursts the queue can absorb\n\n");
        md.append(String.format(
                Locale.ROOT,
                "The same workload arriving at %.1fx the capacity for %.0f s, then %.1fx for %.0f s, repeated "
                        + "(the capacity on average), one tenant, band 1. With clients that retry as the SDKs do "
                        + "(as above) and with clients that do not retry.\n\n",
                BURST_HIGH,
                BURST_HIGH_S,
                BURST_LOW,
                BURST_LOW_S));
        MarkdownTable u = new MarkdownTable(
                "clients", "router", "P99 TTFT ms", "refused", "goodput", "goodput / 503 rule", "hit ratio");
        burstRow(u, runs, "retry", "cache_aware, 503 at once", Seed::burst503, Seed::burst503);
        burstRow(u, runs, "retry", "cache_aware, admission queue", Seed::burstFlow, Seed::burst503);
        burstRow(u, runs, "no retry", "cache_aware, 503 at once", Seed::burst503Once, Seed::burst503Once);
        burstRow(u, runs, "no retry", "cache_aware, admission queue", Seed::burstFlowOnce, Seed::burst503Once);
        md.append(u).append('\n');

        md.append("### Targets\n\n");
        MarkdownTable g = new MarkdownTable("target", "median", "worst seed", "met");
        for (int k = 0; k < 2; k++) {
            int v = k;
            String when = k == 0 ? " (every request)" : " (after the warm-up)";
            target(
                    g,
                    runs,
                    "polite P99 TTFT within 1.5x of alone" + when,
                    s -> ratio(s.flow()[v][POLITE].p99(), s.politeAloneFlow()[v][POLITE].p99()),
                    true,
                    1.5,
                    "%.2fx");
            target(
                    g,
                    runs,
                    "band 0 P99 within 1.2x of unloaded" + when,
                    s -> ratio(s.bandsLoaded()[v][0].p99(), s.band0Alone()[v][0].p99()),
                    true,
                    1.2,
                    "%.2fx");
        }
        target(g, runs, "polite requests never shed", s -> s.flow()[0][POLITE].refused(), true, 0, "%.0f");
        target(g, runs, "heavy tenant shed with 429s (count)", s -> s.flow()[0][HEAVY].refused(), false, 1, "%.0f");
        target(
                g,
                runs,
                "heavy median time to a 429 ≤ 10 ms",
                s -> s.flow()[0][HEAVY].medianRefusal(),
                true,
                10,
                "%.1f ms");
        target(
                g,
                runs,
                "goodput ≥ 1.3x the 503 rule (cache_aware)",
                s -> ratio(goodput(s.flow()[0]), goodput(s.ca503()[0])),
                false,
                1.3,
                "%.2fx");
        target(
                g,
                runs,
                "goodput ≥ 1.3x the 503 rule (round_robin)",
                s -> ratio(goodput(s.flow()[0]), goodput(s.rr503()[0])),
                false,
                1.3,
                "%.2fx");
        target(
                g,
                runs,
                "hit ratio not below the 503 rule's by more than 0.02",
                s -> hitRatio(s.flow()[0]) - hitRatio(s.ca503()[0]),
                false,
                -0.02,
                "%+.3f");
        md.append(g).append('\n');
        return md.toString();
    }

    /** A class's P99 TTFT over every request / after the warm-up. */
    private static String twice(
            List<Seed> runs, java.util.function.Function<Seed, FlowSimulation.ClassResult[][]> f, int c) {
        return spread(runs, s -> f.apply(s)[0][c].p99()).format("%.0f") + " / "
                + spread(runs, s -> f.apply(s)[1][c].p99()).format("%.0f");
    }

    private static double ratio(double a, double b) {
        return b == 0 ? Double.NaN : a / b;
    }

    private static void target(
            MarkdownTable g,
            List<Seed> runs,
            String name,
            ToDoubleFunction<Seed> f,
            boolean atMost,
            double bound,
            String fmt) {
        double w = worst(runs, f, atMost);
        Spread s = spread(runs, f);
        boolean medianMet = atMost ? s.median() <= bound : s.median() >= bound;
        boolean worstMet = atMost ? w <= bound : w >= bound;
        g.row(
                name,
                s.format(fmt),
                String.format(Locale.ROOT, fmt, w),
                worstMet ? "yes" : medianMet ? "on the median, not every seed" : "**no**");
    }

    private static void burstRow(
            MarkdownTable t,
            List<Seed> runs,
            String clients,
            String name,
            java.util.function.Function<Seed, FlowSimulation.ClassResult[][]> run,
            java.util.function.Function<Seed, FlowSimulation.ClassResult[][]> rule) {
        t.row(
                clients,
                name,
                spread(runs, s -> run.apply(s)[0][0].p99()).format("%.0f"),
                spread(runs, s -> refused(run.apply(s)[0])).format("%.0f"),
                spread(runs, s -> goodput(run.apply(s)[0])).format("%.0f"),
                spread(runs, s -> ratio(goodput(run.apply(s)[0]), goodput(rule.apply(s)[0])))
                        .format("%.2fx"),
                spread(runs, s -> hitRatio(run.apply(s)[0])).format("%.3f"));
    }

    private static void addTenantRow(
            MarkdownTable t,
            List<Seed> runs,
            String name,
            java.util.function.Function<Seed, FlowSimulation.ClassResult[][]> loaded,
            java.util.function.Function<Seed, FlowSimulation.ClassResult[][]> alone) {
        t.row(
                name,
                twice(runs, loaded, POLITE),
                spread(runs, s -> ratio(loaded.apply(s)[0][POLITE].p99(), alone.apply(s)[0][POLITE].p99()))
                                .format("%.2fx")
                        + " / "
                        + spread(runs, s -> ratio(loaded.apply(s)[1][POLITE].p99(), alone.apply(s)[1][POLITE].p99()))
                                .format("%.2fx"),
                spread(runs, s -> loaded.apply(s)[0][POLITE].refused()).format("%.0f"),
                spread(runs, s -> loaded.apply(s)[0][HEAVY].refused()).format("%.0f"),
                spread(runs, s -> loaded.apply(s)[0][HEAVY].medianRefusal()).format("%.1f"),
                spread(runs, s -> goodput(loaded.apply(s)[0])).format("%.0f"),
                spread(runs, s -> hitRatio(loaded.apply(s)[0])).format("%.3f"));
    }
}
