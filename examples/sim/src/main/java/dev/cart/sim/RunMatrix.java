package dev.cart.sim;

import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The report's runs: every workload of every seed through every variant on one replica model, each run on
 * a fresh cluster, tree and router with the same requests and arrival times.
 *
 * <p>Arrival rates follow one rule for every workload, fixed before any result was seen: the rate at which
 * the workload's prompt tokens (as the replica model counts them), if none were cached, would need
 * {@code load} of the cluster's nominal prefill throughput. The Mooncake trace keeps its own inter-arrival
 * pattern, compressed to the same rate; its requests do not depend on the seed (only the router's
 * randomness does). Without the trace its workload is kept as a skipped entry, never dropped.
 *
 * <p>Concurrency: the runs of one (seed, workload) are one task on a fixed pool of {@code threads}; a run
 * touches nothing shared but immutable prepared workloads and thread-safe extractors, and results are
 * collected in submission order, so the figures do not depend on the number of threads.
 */
final class RunMatrix {

    /** How the simulated replica counts tokens and hashes its blocks. */
    enum ReplicaModel {
        /**
         * Real BPE tokens ({@link ModelTokenizer}: a Llama-3 chat template, {@code cl100k_base}), 16-token
         * blocks hashed on token ids: the router's 64-character key blocks do not line up with them.
         */
        TOKENIZING(
                "tokenizing replica",
                "counts real tokens: the prompt rendered in a Llama-3 chat template "
                        + "(not the router's serialization), each template marker one special token, the text "
                        + "between them encoded with `cl100k_base`; KV blocks of 16 token ids, so the router's "
                        + "64-character key blocks do not line up with the replica's blocks, as with a real vLLM"),
        /** Four characters per token, 64-character blocks hashed by the router's own {@code PromptKey}. */
        ALIGNED(
                "aligned replica",
                "counts exactly 4 characters per token and hashes 64-character blocks "
                        + "with the router's own `PromptKey.ofText`: every router block is a replica block, no "
                        + "misalignment can happen");

        final String title;
        final String description;

        ReplicaModel(String title, String description) {
            this.title = title;
            this.description = description;
        }

        PreparedWorkload.Options options() {
            return PreparedWorkload.Options.defaults().withTokenizer(this == TOKENIZING);
        }
    }

    /**
     * How fast the cluster's replicas are: all alike (the main tables), some slower from the start, or one
     * slowing down mid-run.
     *
     * @param name        short name, as the report's section titles it
     * @param description what the shape is, for the report
     * @param slowdowns   each replica's step time over the model's, or null for all 1 (see
     *                    {@link Simulation.Builder#slowdowns})
     * @param slowReplica the replica that slows down once half the requests were sent, or -1
     * @param slowFactor  by how much it slows down
     */
    record Shape(String name, String description, double[] slowdowns, int slowReplica, double slowFactor) {
        static final Shape UNIFORM = new Shape("uniform", "every replica as modelled", null, -1, 1.0);

        /** The first half of the replicas as modelled, the others twice as slow. */
        static Shape heterogeneous(int replicas) {
            double[] f = new double[replicas];
            for (int i = 0; i < replicas; i++) {
                f[i] = i < (replicas + 1) / 2 ? 1.0 : 2.0;
            }
            return new Shape(
                    "heterogeneous",
                    "the first " + (replicas + 1) / 2 + " replicas as modelled, the other " + replicas / 2
                            + " twice as slow (each of their engine steps takes 2x); arrival rates by the load "
                            + "rule on the pool's real capacity",
                    f,
                    -1,
                    1.0);
        }

        /** The last replica becomes three times slower once half the requests were sent. */
        static Shape slowdown(int replicas) {
            return new Shape(
                    "slowdown",
                    "every replica as modelled until half the requests were sent; then replica-" + (replicas - 1)
                            + " takes 3x as long per engine step (another tenant on its GPU); arrival rates as for "
                            + "the uniform pool",
                    null,
                    replicas - 1,
                    3.0);
        }

        /** The pool's prefill capacity in replicas as modelled (the sum of 1 / slowdown). */
        double capacity(int replicas) {
            if (slowdowns == null) {
                return replicas;
            }
            double c = 0;
            for (double f : slowdowns) {
                c += 1.0 / f;
            }
            return c;
        }

        Simulation.Builder apply(Simulation.Builder b) {
            if (slowdowns != null) {
                b.slowdowns(slowdowns);
            }
            if (slowReplica >= 0) {
                b.slowdownMidRun(slowReplica, slowFactor);
            }
            return b;
        }
    }

    /** A workload with its arrivals, prepared for one replica model. */
    record Scenario(String name, String description, String arrivals, PreparedWorkload prepared, int closedClients) {}

    record Row(Variant variant, RunResult result) {}

    /** One scenario of one seed under every variant. */
    record ScenarioResult(Scenario scenario, long seed, List<Row> rows) {
        RunResult of(String label) {
            for (Row r : rows) {
                if (r.variant().label().equals(label)) {
                    return r.result();
                }
            }
            return null;
        }

        PreparedWorkload prepared() {
            return scenario.prepared();
        }
    }

    /** One workload over every seed, in seed order; or skipped, with the reason, and no results. */
    record WorkloadRuns(String name, String skipped, List<ScenarioResult> seeds) {
        boolean isSkipped() {
            return skipped != null;
        }

        /** {@code f} of {@code label}'s run on every seed. */
        Spread spread(String label, ToDoubleFunction<RunResult> f) {
            double[] v = new double[seeds.size()];
            for (int i = 0; i < v.length; i++) {
                RunResult r = seeds.get(i).of(label);
                v[i] = r == null ? Double.NaN : f.applyAsDouble(r);
            }
            return Spread.of(v);
        }

        /** {@code f} of each seed's prepared workload. */
        Spread prepared(ToDoubleFunction<PreparedWorkload> f) {
            return Spread.of(seeds.stream()
                    .mapToDouble(s -> f.applyAsDouble(s.prepared()))
                    .toArray());
        }

        boolean has(String label) {
            return !seeds.isEmpty() && seeds.get(0).of(label) != null;
        }
    }

    /** Every workload over every seed on one replica model. */
    record Matrix(ReplicaModel model, List<Long> seeds, List<Variant> variants, List<WorkloadRuns> workloads) {
        WorkloadRuns named(String name) {
            for (WorkloadRuns w : workloads) {
                if (w.name().equals(name)) {
                    return w;
                }
            }
            return null;
        }

        int runs() {
            int n = 0;
            for (WorkloadRuns w : workloads) {
                for (ScenarioResult s : w.seeds()) {
                    n += s.rows().size();
                }
            }
            return n;
        }
    }

    static final String MOONCAKE = "mooncake-trace";

    private RunMatrix() {}

    /** The policy a variant names, from the registered providers. */
    static Supplier<RoutingPolicy> registered(Variant v) {
        return () -> RoutingPolicyProvider.named(v.policy()).create(v.settings());
    }

    /** A simulation of the report's cluster routing with {@code v}. */
    static Simulation.Builder simulation(
            Report.Settings s,
            long seed,
            Variant v,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            int closedClients) {
        return Simulation.builder()
                .replicas(s.replicas)
                .seed(seed)
                .closedLoop(closedClients)
                .policy(v.label(), policies.apply(v))
                .learn(v.learn())
                .reportUsage(v.usage())
                .deferDivertedRoutes(v.defer())
                .signalFirstToken(v.firstTokens())
                .learnAnswers(v.answers())
                .feedback(v.feedback())
                .singleDepth(v.singleDepth());
    }

    /** Runs {@code variants} on every workload of every seed of {@code s} on {@code model}. */
    static Matrix run(Report.Settings s, ReplicaModel model, List<Variant> variants, boolean progress) {
        return run(s, model, variants, progress, Shape.UNIFORM);
    }

    /** Runs {@code variants} on every workload of every seed of {@code s} on {@code model}, a {@code shape} pool. */
    static Matrix run(Report.Settings s, ReplicaModel model, List<Variant> variants, boolean progress, Shape shape) {
        Workload trace = Files.isReadable(s.tracePath()) ? Workloads.mooncake(s.tracePath(), s.traceBlockChars) : null;
        if (trace == null) {
            System.err.println("trace not found, the replay is reported as skipped: "
                    + s.tracePath().toAbsolutePath());
        }
        PreparedWorkload tracePrepared =
                trace == null ? null : PreparedWorkload.of(trace, EngineConfig.defaults(), model.options());
        List<Callable<List<ScenarioResult>>> tasks = new ArrayList<>();
        for (long seed : s.seeds) {
            for (Workload w : baseWorkloads(s, seed)) {
                tasks.add(() -> {
                    PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults(), model.options());
                    List<ScenarioResult> out = new ArrayList<>();
                    double rate = rateFor(s.load, shape.capacity(s.replicas), model, p);
                    out.add(runScenario(
                            new Scenario(
                                    w.name(),
                                    w.description(),
                                    String.format(Locale.ROOT, "Poisson, %.1f req/s", rate),
                                    p.retimed(w.poisson(rate, seed)),
                                    0),
                            s,
                            seed,
                            variants,
                            RunMatrix::registered,
                            progress,
                            shape));
                    if (w.name().equals("rag-zipf")) {
                        int clients = 16 * s.replicas;
                        out.add(runScenario(
                                new Scenario(
                                        w.name() + "-closed",
                                        w.description(),
                                        "closed loop, " + clients + " clients",
                                        p,
                                        clients),
                                s,
                                seed,
                                variants,
                                RunMatrix::registered,
                                progress,
                                shape));
                    }
                    return out;
                });
            }
            if (tracePrepared != null) {
                tasks.add(() -> {
                    double rate = rateFor(s.load, shape.capacity(s.replicas), model, tracePrepared);
                    double factor = trace.meanRate() / rate;
                    return List.of(runScenario(
                            new Scenario(
                                    trace.name(),
                                    trace.description(),
                                    String.format(Locale.ROOT, "trace timestamps x%.3f (%.1f req/s)", factor, rate),
                                    tracePrepared.retimed(trace.timeScaled(factor)),
                                    0),
                            s,
                            seed,
                            variants,
                            RunMatrix::registered,
                            progress,
                            shape));
                });
            }
        }
        Map<String, List<ScenarioResult>> byName = new LinkedHashMap<>();
        for (List<ScenarioResult> rs : parallel(s.threads, tasks)) {
            for (ScenarioResult r : rs) {
                byName.computeIfAbsent(r.scenario().name(), k -> new ArrayList<>())
                        .add(r);
            }
        }
        return new Matrix(model, s.seeds, variants, collect(byName));
    }

    /** The report's workloads, in table order. */
    static final List<String> WORKLOADS = List.of(
            "generated-shared-prefix",
            "rag-zipf",
            "multi-turn",
            "branch-resume",
            "hot-prefix-80",
            "hot-prefix-100",
            MOONCAKE,
            "rag-zipf-closed");

    /**
     * The runs of every workload in table order; the trace replay, when it did not run, as skipped ("no
     * trace"), never left out. Any other workload missing is a bug.
     */
    static List<WorkloadRuns> collect(Map<String, List<ScenarioResult>> byName) {
        List<WorkloadRuns> out = new ArrayList<>();
        for (String name : WORKLOADS) {
            List<ScenarioResult> rs = byName.get(name);
            if (rs == null && name.equals(MOONCAKE)) {
                out.add(new WorkloadRuns(name, "no trace", List.of()));
            } else if (rs == null) {
                throw new IllegalStateException("no runs for " + name);
            } else {
                out.add(new WorkloadRuns(name, null, rs));
            }
        }
        return out;
    }

    /** The generated workloads of one seed (the Mooncake trace is added apart). */
    static List<Workload> baseWorkloads(Report.Settings s, long seed) {
        long clusterCache = s.replicas * EngineConfig.defaults().cacheTokens();
        return List.of(
                Workloads.sharedPrefix(seed),
                Workloads.rag(seed, clusterCache),
                Workloads.multiTurn(seed),
                Workloads.branching(seed),
                Workloads.hotPrefix(seed, 0.8),
                Workloads.hotPrefix(seed, 1.0));
    }

    /**
     * The load rule: prompt tokens with no cache reuse would need {@code load} of nominal prefill throughput.
     * On the tokenizing replica the tokens are the replica's count; on the aligned one, the prompt's
     * characters over four.
     */
    static double rateFor(Report.Settings s, ReplicaModel model, PreparedWorkload p) {
        return rateFor(s.load, s.replicas, model, p);
    }

    static double rateFor(double load, double replicas, ReplicaModel model, PreparedWorkload p) {
        EngineConfig cfg = EngineConfig.defaults();
        double tokensPerSecond = 1e9 / cfg.prefillTokenNanos() * replicas;
        double meanTokens = model == ReplicaModel.TOKENIZING
                ? p.meanPromptTokens()
                : p.workload.meanPromptChars() / cfg.charsPerToken();
        return load * tokensPerSecond / meanTokens;
    }

    /** Runs one scenario under every variant, each on a fresh cluster. */
    static ScenarioResult runScenario(
            Scenario sc,
            Report.Settings s,
            long seed,
            List<Variant> variants,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        return runScenario(sc, s, seed, variants, policies, progress, Shape.UNIFORM);
    }

    /** Runs one scenario under every variant, each on a fresh cluster of {@code shape}. */
    static ScenarioResult runScenario(
            Scenario sc,
            Report.Settings s,
            long seed,
            List<Variant> variants,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress,
            Shape shape) {
        List<Row> rows = new ArrayList<>();
        for (Variant v : variants) {
            RunResult r = shape.apply(simulation(s, seed, v, policies, sc.closedClients()))
                    .build()
                    .run(sc.prepared());
            rows.add(new Row(v, r));
            if (progress) {
                System.out.println("seed " + seed + ": " + r);
            }
        }
        return new ScenarioResult(sc, seed, rows);
    }

    /** Runs {@code tasks} on {@code threads} threads; the results in task order. */
    static <T> List<T> parallel(int threads, List<Callable<T>> tasks) {
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads, tasks.size())), r -> {
            Thread t = new Thread(r, "report-run");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (Callable<T> c : tasks) {
                fs.add(pool.submit(c));
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : fs) {
                out.add(f.get());
            }
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException re) {
                throw re;
            }
            if (c instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(c);
        } finally {
            pool.shutdownNow();
        }
    }
}
