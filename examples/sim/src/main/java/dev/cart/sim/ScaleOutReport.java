package dev.cart.sim;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;

/**
 * The scale-out section of {@code docs/routing-quality.md}: N router instances, each with its own tree and
 * replica counts, behind a random load balancer in front of the report's simulated pool ({@link Instances}),
 * 1 against 2, 4 and 8 instances that share nothing, share nothing but place misses by consistent hashing,
 * or share routes and load (the in-memory stand-in for {@code cart-redis}: 20 ms from publication to apply,
 * the others' load as it was {@value #LOAD_DELAY_MS} ms before). The policy is the shipped {@code cache_aware} behind a host doing what the
 * proxy does (the report's {@code cache_aware} variant). Workloads, arrival rates and the replica model are
 * the main report's ({@link RunMatrix}); each (workload, seed) runs every configuration on the same
 * requests and arrival times. Then failover: four synced instances, one killed at the middle arrival.
 *
 * <p>Run from the repository root: {@value #COMMAND} ({@code -Dreport.args="--seeds 1-20 --threads 2 --trace
 * <path>"}; seeds 1-20 by default). Writes {@code docs/scale-out.md} and prints the tables.
 */
public final class ScaleOutReport {

    /**
     * Seeds 1-20 unless told otherwise: a run's P99 is one of its slowest few requests, and with 5 seeds the
     * noise floor of a P99 ratio (1 instance against itself) spanned 0.93-1.38× on the trace, too wide to
     * tell 1.1× from 1.0×. Twenty take about four times as long (a few minutes on 2 cores).
     */
    static final List<Long> SEEDS = Report.Settings.seeds("1-20");

    static final List<String> WORKLOADS =
            List.of("generated-shared-prefix", "rag-zipf", "multi-turn", "branch-resume", RunMatrix.MOONCAKE);

    /**
     * One configuration of the instances. Synced, the others' load is seen as it was {@code loadDelayMs}
     * before (published on change: {@code loadIntervalMs} 0) or as it was at the last multiple of
     * {@code loadIntervalMs}, {@code loadDelayMs} before (polled).
     */
    record Config(
            String label,
            int instances,
            boolean sync,
            boolean hashMisses,
            int loadIntervalMs,
            int loadDelayMs,
            int lagMs,
            long routerSeedShift) {

        /** With the routers' randomness seeded by the run's seed, as every configuration but the noise floor. */
        Config(
                String label,
                int instances,
                boolean sync,
                boolean hashMisses,
                int loadIntervalMs,
                int loadDelayMs,
                int lagMs) {
            this(label, instances, sync, hashMisses, loadIntervalMs, loadDelayMs, lagMs, 0);
        }
    }

    /**
     * How late the others' load is seen, synced: {@code RedisLoadView} publishes an instance's load on
     * every change (at most every 2 ms) and the others receive it a Redis round trip later; 5 ms allows
     * for a loaded host.
     */
    static final int LOAD_DELAY_MS = 5;

    /** One instance with another seed for its routers' tie-breaking: what a ratio to one instance is worth. */
    static final String NOISE_FLOOR = "1 instance, other tie-break seed";

    static final List<Config> CONFIGS = configs();

    private static List<Config> configs() {
        List<Config> c = new ArrayList<>();
        c.add(new Config("1 instance", 1, false, false, 0, 0, 20));
        // the noise floor of every ratio below: one instance again, on the same requests and arrival times, with
        // only its tie-breaking randomness seeded otherwise
        c.add(new Config(NOISE_FLOOR, 1, false, false, 0, 0, 20, 1_000));
        for (int n : new int[] {2, 4, 8}) {
            c.add(new Config(n + ", no sync", n, false, false, 0, 0, 20));
            c.add(new Config(n + ", no sync, consistent-hash misses", n, false, true, 0, 0, 20));
            c.add(new Config(n + ", synced", n, true, false, 0, LOAD_DELAY_MS, 20));
        }
        // what the load view's age costs: the same seen at once, 2 ms and 20 ms late, and the earlier view
        // polled every 100 ms
        for (int n : new int[] {4, 8}) {
            c.add(new Config(n + ", synced, load seen at once", n, true, false, 0, 0, 20));
            c.add(new Config(n + ", synced, load seen 2 ms late", n, true, false, 0, 2, 20));
            c.add(new Config(n + ", synced, load seen 20 ms late", n, true, false, 0, 20, 20));
            c.add(new Config(n + ", synced, load polled every 100 ms", n, true, false, 100, 0, 20));
        }
        // and what a slow stream costs: route events ten times as late as assumed above
        c.add(new Config("4, synced, 200 ms sync lag", 4, true, false, 0, LOAD_DELAY_MS, 200));
        return c;
    }

    /** The failover runs: four instances, none killed or the last one killed at the middle arrival. */
    record Failover(String label, boolean sync, boolean kill) {}

    static final List<Failover> FAILOVERS = List.of(
            new Failover("4 synced", true, false),
            new Failover("4 synced, one killed", true, true),
            new Failover("4 no sync, one killed", false, true));

    /** What one run gives the tables. */
    record Figures(
            double hit,
            double p99,
            double maxOverMean,
            double hitAfter,
            double p99After,
            double wirePerLearnedBlock,
            double eventsPerEntry) {}

    private ScaleOutReport() {}

    public static void main(String[] args) throws Exception {
        Report.Settings s = Report.Settings.parse(args);
        if (!List.of(args).contains("--seeds") && !List.of(args).contains("--seed")) {
            s.seeds = SEEDS;
        }
        RunMatrix.ReplicaModel model = RunMatrix.ReplicaModel.TOKENIZING;
        Workload trace = Files.isReadable(s.tracePath()) ? Workloads.mooncake(s.tracePath(), s.traceBlockChars) : null;
        List<Callable<Map<String, Figures>>> tasks = new ArrayList<>();
        List<String> taskWorkload = new ArrayList<>();
        for (long seed : s.seeds) {
            for (Workload w : RunMatrix.baseWorkloads(s, seed)) {
                if (!WORKLOADS.contains(w.name())) {
                    continue;
                }
                taskWorkload.add(w.name());
                tasks.add(() -> {
                    PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults(), model.options());
                    return runAll(s, seed, p.retimed(w.poisson(RunMatrix.rateFor(s, model, p), seed)));
                });
            }
            if (trace != null) {
                taskWorkload.add(RunMatrix.MOONCAKE);
                tasks.add(() -> {
                    PreparedWorkload p = PreparedWorkload.of(trace, EngineConfig.defaults(), model.options());
                    double rate = RunMatrix.rateFor(s, model, p);
                    return runAll(s, seed, p.retimed(trace.timeScaled(trace.meanRate() / rate)));
                });
            }
        }
        long t0 = System.nanoTime();
        List<Map<String, Figures>> results = RunMatrix.parallel(s.threads, tasks);
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<String, List<Map<String, Figures>>> byWorkload = new LinkedHashMap<>();
        for (String w : WORKLOADS) {
            byWorkload.put(w, new ArrayList<>());
        }
        for (int i = 0; i < results.size(); i++) {
            byWorkload.get(taskWorkload.get(i)).add(results.get(i));
        }
        String tables = tables(s, byWorkload, trace != null);
        System.out.println(tables);
        Path out = s.root.resolve(s.out).resolve("scale-out.md").normalize();
        Files.writeString(out, document(s, tables, seconds, results.size()));
        System.out.println("wrote " + out);
    }

    static final String COMMAND = "mvn -B -ntp -pl examples/sim -am -Pscale-out package -DskipTests";

    /** The whole page: how it was made, what is simulated, the tables. */
    static String document(Report.Settings s, String tables, double seconds, int tasks) {
        StringBuilder md = new StringBuilder();
        md.append("# Scale-out: several router instances in front of one pool (simulated)\n\n");
        md.append("Generated by `dev.cart.sim.ScaleOutReport`; do not edit by hand. The section \"Scale-out\" of"
                + " [`routing-quality.md`](routing-quality.md) points here.\n\n");
        md.append("| | |\n|---|---|\n");
        md.append("| date | ")
                .append(DateTimeFormatter.ISO_INSTANT.format(Instant.now().truncatedTo(ChronoUnit.SECONDS)))
                .append(" |\n");
        md.append("| command | `")
                .append(COMMAND)
                .append("` (with `-Dreport.args=\"--trace <path of the Mooncake"
                        + " trace>\"` when `../shared/traces` is not beside the repository) |\n");
        md.append("| machine | ")
                .append(System.getProperty("os.name"))
                .append(' ')
                .append(System.getProperty("os.arch"))
                .append(", ")
                .append(Runtime.getRuntime().availableProcessors())
                .append(" cores |\n");
        md.append("| JDK | ")
                .append(System.getProperty("java.vm.name"))
                .append(' ')
                .append(System.getProperty("java.runtime.version"))
                .append(" |\n");
        md.append(String.format(
                Locale.ROOT,
                "| run time | %.0f s on %d threads for %d (workload, seed) tasks of %d runs each |%n%n",
                seconds,
                s.threads,
                tasks,
                CONFIGS.size() + FAILOVERS.size()));
        md.append("""
                **Setup.** The main report's cluster, replica model (the tokenizing replica), workloads, seeds and \
                arrival rates (`RunMatrix`: 4 replicas, 70% of nominal prefill throughput). In front of it, N router \
                instances, each with its own prefix tree and its own replica set (so its own in-flight and \
                pending-prefill counts), behind a load balancer that sends each request to a live instance chosen \
                uniformly at random, as a plain L4 balancer does (no session affinity). Every instance runs the \
                shipped `cache_aware` policy behind a host that does what the proxy does (the report's `cache_aware` \
                variant). A conversation's turns therefore land on any instance.

                - *1 instance, other tie-break seed*: the single instance again, on the same requests and arrival \
                  times, with only the seed of its routers' tie-breaking changed: the noise floor of every "× 1 \
                  instance" ratio. A run's P99 is one of its slowest few requests (the eleventh-slowest of \
                  generated-shared-prefix's 1,024), and which replica a tie sends one cold prompt to moves it.
                - *no sync*: the instances share nothing, as several proxies without a `cluster` section.
                - *consistent-hash misses*: no sync, and `miss_placement: consistent_hash`, so instances that never \
                  saw a prompt still tend to place it on the same replica.
                - *synced*: the instances share what `cart-redis` shares, through an in-memory stand-in on the \
                  simulation's virtual clock (`Instances`): every route event (learned route, forgotten branch) \
                  reaches the other instances' `Router.applyRemote` 20 ms after its publication (measured on \
                  loopback, on a loaded 2-core machine: p50 5 to 10 ms, p99 50 to 200 ms, see \
                  `cart-redis/README.md`; one row below uses 200 ms), and each instance's per-replica in-flight \
                  count and pending prefill, published when it changes as `RedisLoadView` does (the router wakes \
                  its publisher, which `PUBLISH`es at once, at most every 2 ms; a heartbeat every 100 ms \
                  otherwise), is added by the others to their own exact counts (`Router.Builder.remoteLoad`) as \
                  it was 5 ms before (its age measured on loopback at load average 18-22: p50 about 1 ms, p90 3.5 \
                  to 4.7 ms, `LoadViewAgeFigures`). The simulator records every instance's \
                  counts at each change (a decision, a first token, a finished request), so "as it was 5 ms \
                  before" is exact. As with `RedisRouteSync`'s default repeat interval, a router publishes a \
                  route it already held only on its first use in each second. The real transport is the subject \
                  of `cart-redis`'s tests against a real \
                  `redis-server` (routes, load, faults) and of the proxy's `ClusterProxyTest` and \
                  `ClusterFaultTest`; the simulation does not talk to Redis.
                - *load seen at once*, *2 ms late*, *20 ms late*: synced, with the others' load as it was that \
                  long before (at once: no transport could do it; it bounds what a fresher view can give). \
                  *load polled every \
                  100 ms*: the earlier design, each instance writing its load every 100 ms and reading the \
                  others' as often (modelled as the counts at the last multiple of 100 ms, every instance in \
                  step: kinder than real, unaligned timers). *200 ms sync lag*: synced, with route events ten \
                  times as late.

                Hit ratio is measured by the replicas (cached over prompt tokens); P99 TTFT from the request's \
                sending to its first token; *max/mean* is requests on the busiest replica over the mean. Ratios to \
                one instance are taken seed by seed on the same requests and arrival times. Failover: four \
                instances, the fourth stops receiving requests at the middle arrival (its requests in flight run to \
                their end; its load counts a further second, the view's TTL); *after* counts the requests sent from \
                then on.

                *P99 TTFT × 1 instance, seed by seed*: the P99 rows' ratios as a distribution over the seeds (20 \
                by default: a run's P99 is one of its slowest few requests, and over 5 seeds the noise floor's \
                spread was too wide to tell 1.1× from 1.0×): median, a 95% confidence interval of the median \
                (the k-th smallest and k-th largest ratio, k from the binomial distribution: no assumption about \
                the ratios' distribution), quartiles, range, and how many seeds are within 1.1×.

                *Bytes on the wire per learned block*: every synced instance's published route events batched \
                and encoded by `cart-redis`'s `RouteStreamMeter` as its publisher would (the first event, then \
                what follows within 5 ms, up to 256; repeats within a second left out) on the virtual clock, \
                counted with the `XADD` command around each entry (RESP framing, stream name `cart:routes`, \
                `MAXLEN ~ 100000`), replica ids written as `http://vllm-N.pool.svc:8000`; over the blocks they \
                taught: (replica, block) pairs no event had named before, over the pool. The publisher also \
                gathers what arrives while an `XADD` is on its way, so real batches are at least as large and \
                the figure errs high.

                """.replaceAll("(?<=\\S) {2,}(?=\\S)", " ")); // the continuation lines of list items
        md.append(tables);
        return md.toString();
    }

    /** Every configuration and every failover run on one (workload, seed). */
    static Map<String, Figures> runAll(Report.Settings s, long seed, PreparedWorkload p) {
        Map<String, Figures> out = new LinkedHashMap<>();
        for (Config c : CONFIGS) {
            Instances.Wire wire = new Instances.Wire();
            Instances.ScaleOut spec = Instances.ScaleOut.of(c.instances(), c.sync())
                    .syncLag(c.lagMs() * 1_000_000L)
                    .loadTimed(c.loadIntervalMs() * 1_000_000L, c.loadDelayMs() * 1_000_000L)
                    .counting(wire);
            out.put(
                    c.label(),
                    figures(
                            run(s, seed, seed + c.routerSeedShift(), c.hashMisses(), spec, p),
                            p,
                            Long.MAX_VALUE,
                            wire));
        }
        long middle = p.arrivals[p.size() / 2];
        for (Failover f : FAILOVERS) {
            Instances.ScaleOut spec = Instances.ScaleOut.of(4, f.sync()).loadTimed(0, LOAD_DELAY_MS * 1_000_000L);
            if (f.kill()) {
                spec = spec.killing(3, middle);
            }
            out.put(
                    "failover: " + f.label(),
                    figures(run(s, seed, seed, false, spec, p), p, middle, new Instances.Wire()));
        }
        return out;
    }

    /** One run of {@code p}, the routers' randomness seeded with {@code routerSeed}. */
    static RunResult run(
            Report.Settings s,
            long seed,
            long routerSeed,
            boolean hashMisses,
            Instances.ScaleOut spec,
            PreparedWorkload p) {
        Variant v = Variant.named(Variant.CACHE_AWARE);
        if (hashMisses) {
            v = Variant.shipped(
                    "cache_aware miss=consistent_hash", "cache_aware", Map.of("miss_placement", "consistent_hash"));
        }
        return RunMatrix.simulation(s, seed, v, RunMatrix::registered, 0)
                .seed(routerSeed)
                .scaleOut(spec)
                .build()
                .run(p);
    }

    /** The run's figures; those "after" count only requests sent at or after {@code from}. */
    static Figures figures(RunResult r, PreparedWorkload p, long from, Instances.Wire wire) {
        RunResult.Trace t = r.trace();
        long prompt = 0;
        long cached = 0;
        List<Long> ttfts = new ArrayList<>();
        for (int i = 0; i < t.sent().length; i++) {
            if (t.sent()[i] >= from && t.finished()[i] >= 0) {
                prompt += p.promptTokens[i];
                cached += t.cached()[i];
                ttfts.add(t.firstToken()[i] - t.sent()[i]);
            }
        }
        double p99After = Double.NaN;
        if (!ttfts.isEmpty()) {
            ttfts.sort(null);
            p99After = ttfts.get((int) Math.min(ttfts.size() - 1, Math.ceil(0.99 * ttfts.size()) - 1)) / 1e6;
        }
        return new Figures(
                r.hitRatio(),
                r.ttftP99Millis(),
                r.maxOverMeanRequests(),
                prompt == 0 ? Double.NaN : (double) cached / prompt,
                p99After,
                wire.perLearnedBlock(),
                wire.eventsPerEntry());
    }

    static String tables(Report.Settings s, Map<String, List<Map<String, Figures>>> byWorkload, boolean traced) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(
                Locale.ROOT,
                "Seeds %s; %d replicas; load %.1f; tokenizing replica. Each cell: median [min-max] over the seeds.%n%n",
                s.seeds,
                s.replicas,
                s.load));
        for (String w : WORKLOADS) {
            List<Map<String, Figures>> runs = byWorkload.get(w);
            if (runs.isEmpty()) {
                b.append("**")
                        .append(w)
                        .append("**: skipped")
                        .append(traced ? "" : " (no trace)")
                        .append("\n\n");
                continue;
            }
            b.append("**").append(w).append("**\n\n");
            b.append("| instances | hit ratio | × 1 instance | P99 TTFT ms | × 1 instance | max/mean requests |\n");
            b.append("|---|---:|---:|---:|---:|---:|\n");
            for (Config c : CONFIGS) {
                b.append("| ").append(c.label()).append(" | ");
                b.append(spread(runs, c.label(), Figures::hit).format("%.3f")).append(" | ");
                b.append(ratio(runs, c.label(), "1 instance", Figures::hit).format("%.2f"))
                        .append(" | ");
                b.append(spread(runs, c.label(), Figures::p99).format("%.0f")).append(" | ");
                b.append(ratio(runs, c.label(), "1 instance", Figures::p99).format("%.2f"))
                        .append(" | ");
                b.append(spread(runs, c.label(), Figures::maxOverMean).format("%.2f"))
                        .append(" |\n");
            }
            b.append('\n');
        }
        b.append(p99Resolution(byWorkload));
        b.append("**Bytes on the wire per learned block** (synced: what the instances' route events would take"
                + " through `cart-redis`, batched at the workload's own rate as its publisher batches them; see"
                + " below)\n\n");
        b.append("| workload | instances | bytes per learned block | events per stream entry |\n|---|---|---:|---:|\n");
        for (String w : WORKLOADS) {
            List<Map<String, Figures>> runs = byWorkload.get(w);
            if (runs.isEmpty()) {
                continue;
            }
            for (Config c : CONFIGS) {
                if (!c.label().endsWith(", synced")) {
                    continue;
                }
                b.append("| ").append(w).append(" | ").append(c.label()).append(" | ");
                b.append(spread(runs, c.label(), Figures::wirePerLearnedBlock).format("%.1f"))
                        .append(" | ");
                b.append(spread(runs, c.label(), Figures::eventsPerEntry).format("%.2f"))
                        .append(" |\n");
            }
        }
        b.append('\n');
        b.append("**Failover** (four instances; the killed one stops at the middle arrival; \"after\" counts the"
                + " requests sent from then on)\n\n");
        b.append("| workload | run | hit ratio | hit ratio after | P99 TTFT ms after |\n|---|---|---:|---:|---:|\n");
        for (String w : WORKLOADS) {
            List<Map<String, Figures>> runs = byWorkload.get(w);
            if (runs.isEmpty()) {
                continue;
            }
            for (Failover f : FAILOVERS) {
                String l = "failover: " + f.label();
                b.append("| ").append(w).append(" | ").append(f.label()).append(" | ");
                b.append(spread(runs, l, Figures::hit).format("%.3f")).append(" | ");
                b.append(spread(runs, l, Figures::hitAfter).format("%.3f")).append(" | ");
                b.append(spread(runs, l, Figures::p99After).format("%.0f")).append(" |\n");
            }
        }
        return b.toString();
    }

    /** The rows whose P99 ratio the target is about, beside the noise floor. */
    static final List<String> P99_ROWS = List.of(NOISE_FLOOR, "2, synced", "4, synced", "8, synced");

    /**
     * The P99 ratios to one instance, seed by seed, as a distribution: median, interquartile range, a 95%
     * confidence interval of the median (distribution-free: order statistics of the seeds), range, and
     * how many seeds are within 1.1×.
     */
    static String p99Resolution(Map<String, List<Map<String, Figures>>> byWorkload) {
        StringBuilder b = new StringBuilder();
        b.append("**P99 TTFT × 1 instance, seed by seed** (the target is ≤ 1.1×; the noise floor is one instance"
                + " against itself with another tie-break seed; the median's confidence interval is"
                + " distribution-free, from the order statistics of the seeds)\n\n");
        b.append(
                "| workload | instances | seeds | median | 95% CI of the median | quartiles | range | seeds ≤ 1.1× |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|---:|\n");
        for (String w : WORKLOADS) {
            List<Map<String, Figures>> runs = byWorkload.get(w);
            if (runs.isEmpty()) {
                continue;
            }
            for (String row : P99_ROWS) {
                double[] v = runs.stream()
                        .mapToDouble(m -> m.get(row).p99() / m.get("1 instance").p99())
                        .filter(x -> !Double.isNaN(x))
                        .sorted()
                        .toArray();
                if (v.length == 0) {
                    continue;
                }
                int k = medianCiRank(v.length);
                long within = java.util.Arrays.stream(v).filter(x -> x <= 1.1).count();
                b.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %d | %.2f | %s | %.2f–%.2f | %.2f–%.2f | %d of %d |%n",
                        w,
                        row,
                        v.length,
                        Spread.of(v).median(),
                        k < 1 ? "—" : String.format(Locale.ROOT, "%.2f–%.2f", v[k - 1], v[v.length - k]),
                        quantile(v, 0.25),
                        quantile(v, 0.75),
                        v[0],
                        v[v.length - 1],
                        within,
                        v.length));
            }
        }
        b.append('\n');
        return b.toString();
    }

    /**
     * The rank k (1-based) such that the k-th smallest and k-th largest of {@code n} values bound the median
     * with at least 95% confidence: the largest k with P(Binomial(n, 1/2) < k) ≤ 2.5%; 0 when n is too small.
     */
    static int medianCiRank(int n) {
        double p = Math.pow(0.5, n);
        double cdf = 0;
        int k = 0;
        for (int j = 0; j < n; j++) {
            cdf += p; // P(X <= j)
            if (cdf > 0.025) {
                break;
            }
            k = j + 1;
            p = p * (n - j) / (j + 1);
        }
        return k;
    }

    /** The {@code q} quantile of sorted {@code v}, linearly interpolated. */
    static double quantile(double[] v, double q) {
        double pos = q * (v.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = Math.min(v.length - 1, lo + 1);
        return v[lo] + (pos - lo) * (v[hi] - v[lo]);
    }

    private static Spread spread(List<Map<String, Figures>> runs, String label, ToDoubleFunction<Figures> f) {
        return Spread.of(
                runs.stream().mapToDouble(m -> f.applyAsDouble(m.get(label))).toArray());
    }

    /** Per seed, {@code label}'s figure over {@code base}'s on the same requests. */
    private static Spread ratio(
            List<Map<String, Figures>> runs, String label, String base, ToDoubleFunction<Figures> f) {
        return Spread.of(runs.stream()
                .mapToDouble(m -> f.applyAsDouble(m.get(label)) / f.applyAsDouble(m.get(base)))
                .toArray());
    }
}
