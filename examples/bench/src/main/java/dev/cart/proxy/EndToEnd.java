package dev.cart.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.core.LearnMode;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import dev.cart.sim.RunResult;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.Simulation;
import dev.cart.sim.Workload;
import dev.cart.sim.WorkloadRequest;
import dev.cart.sim.Workloads;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A workload through the real proxy over HTTP, in front of simulated vLLM replicas running as HTTP
 * servers, set against the in-process simulation of the same workload, seed and cluster: the check that
 * extraction and proxying preserve what the policy decides (issue 6, item 4).
 *
 * <p>How: {@code replicas} {@link SimulatedReplicaServer}s (each with {@code cacheTokens} of KV cache,
 * engine time {@code speedup} times faster than the modelled GPU) and a {@link ProxyServer} routing to them
 * with the given policy, learning on route, feedback on, eviction off, as {@link Simulation} runs its
 * router. The workload's requests are sent with the JDK {@link HttpClient} in a closed loop of
 * {@code clients} concurrent clients, with the simulation's rules: a client sends the next request in
 * workload order as soon as its previous one finished, and a request whose session (chat user) still has
 * a request running waits for it, then goes out at once. The replica-measured hit ratio is the sum of
 * {@code usage.prompt_tokens_details.cached_tokens} over the sum of {@code usage.prompt_tokens}, read from
 * the responses (the usage chunk of a stream when streaming). The simulation runs the same workload with
 * {@code closedLoop(clients)} and the replicas' usage handed to the leases ({@code reportUsage}), as the
 * proxy does.
 *
 * <p>The two cannot agree exactly: over HTTP, time is real (thread scheduling, the proxy's and the
 * replicas' own work), so which requests overlap, and hence the load the guard sees and the order in which
 * the replicas' caches evict, differ from the virtual clock's. They should agree within a few points.
 *
 * <p>Run the full comparison (default RAG and multi-turn workloads, four replicas) with {@link #main}; the
 * command is in {@code docs/end-to-end.md}. {@code EndToEndTest} runs a small version in the suite.
 *
 * <p>It lives in {@code examples/bench} but in the proxy's package, as {@code ClusterEndToEnd} and {@code Soak}
 * do: it starts the proxy in process through {@code ProxyServer}'s package-private entry point (options without
 * health checks) and reads its metrics with the proxy tests' {@code PromText} (cart-proxy's test jar).
 */
final class EndToEnd {

    /**
     * How a comparison is run; {@code slowdowns}, when not null, gives each replica's step time as a multiple
     * of the model's (its engine runs {@code speedup / slowdown} times faster than the modelled GPU).
     */
    record Settings(
            int replicas,
            long cacheTokens,
            double speedup,
            int clients,
            long seed,
            boolean stream,
            boolean learnAnswer,
            double[] slowdowns) {
        Settings(
                int replicas,
                long cacheTokens,
                double speedup,
                int clients,
                long seed,
                boolean stream,
                boolean learnAnswer) {
            this(replicas, cacheTokens, speedup, clients, seed, stream, learnAnswer, null);
        }

        double slowdown(int replica) {
            return slowdowns == null ? 1.0 : slowdowns[replica];
        }
    }

    /** What the replay over HTTP measured. */
    record HttpRun(
            String workload,
            String policy,
            int requests,
            int failed,
            long promptTokens,
            long cachedTokens,
            long proxyPromptTokens,
            long proxyDeliveredTokens,
            double seconds,
            int leftInFlight,
            Map<String, Long> reasons,
            List<Long> perReplica,
            Trace trace) {
        double hitRatio() {
            return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
        }
    }

    /**
     * Per request, in workload order: the replica that served it (index, -1 if unknown), its usage, and (when
     * streamed) the time from sending it to the first event of its answer, in real nanoseconds (-1 if none).
     */
    record Trace(int[] replica, long[] prompt, long[] cached, long[] firstEventNanos) {
        /** The {@code q}-quantile of the time to first event, in the model's milliseconds (real x speedup). */
        double ttftModelMillis(double q, double speedup) {
            long[] v = java.util.Arrays.stream(firstEventNanos)
                    .filter(x -> x >= 0)
                    .sorted()
                    .toArray();
            if (v.length == 0) {
                return Double.NaN;
            }
            int rank = (int) Math.ceil(q * v.length);
            return v[Math.max(0, Math.min(v.length - 1, rank - 1))] / 1e6 * speedup;
        }
    }

    /** One line of the comparison. */
    record Row(HttpRun http, RunResult sim) {
        double difference() {
            return http.hitRatio() - sim.hitRatio();
        }
    }

    private EndToEnd() {}

    /**
     * The in-process simulation's figure for the same workload, policy, seed and cluster. The HTTP replica
     * caches prompt blocks only, so the simulation does too here.
     */
    static RunResult simulate(Workload w, String policy, Settings s) {
        return Simulation.builder()
                .replicas(s.replicas())
                .cacheTokens(s.cacheTokens())
                .seed(s.seed())
                .policy(policy, Map.of())
                .closedLoop(s.clients())
                .learn(LearnMode.ON_ROUTE)
                .feedback(true)
                .reportUsage(true)
                .cacheGeneratedTokens(false)
                .slowdowns(slowdowns(s))
                .build()
                .run(w);
    }

    private static double[] slowdowns(Settings s) {
        double[] f = new double[s.replicas()];
        for (int i = 0; i < f.length; i++) {
            f[i] = s.slowdown(i);
        }
        return f;
    }

    /** Replays {@code w} through a fresh proxy and fresh simulated replicas. */
    static HttpRun overHttp(Workload w, String policy, Settings s) throws Exception {
        List<SimulatedReplicaServer> sims = new ArrayList<>();
        ProxyServer proxy = null;
        try {
            StringBuilder yaml = new StringBuilder("server:\n  host: 127.0.0.1\n  port: 0\n  max_threads: ")
                    .append(Math.max(64, 4 * s.clients()))
                    .append("\ncache:\n  policy: ")
                    .append(policy)
                    .append("\n  eviction_interval_secs: 0\n  learn: on_route\n  feedback: true\n  learn_answer: ")
                    .append(s.learnAnswer())
                    .append(
                            "\nproxy:\n  max_retries: 0\n  decision_log: false\n  add_routed_peer_header: true\nworkers:\n");
            for (int i = 0; i < s.replicas(); i++) {
                SimulatedReplicaServer r = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("e2e-" + i)
                        .port(0)
                        .model("sim")
                        .cacheTokens(s.cacheTokens())
                        .speedup(s.speedup() / s.slowdown(i)));
                sims.add(r);
                yaml.append("  - url: ").append(r.baseUri()).append('\n');
            }
            proxy = ProxyServer.start(
                    ConfigLoader.parse(yaml.toString()), new ProxyServer.Options().healthChecks(false));
            List<String> urls = new ArrayList<>();
            for (SimulatedReplicaServer r : sims) {
                urls.add(r.baseUri().toString());
            }
            HttpRun run = new Replay(w, policy, s, proxy, urls).run();
            ManagedReplicaSet set = proxy.routing().replicas;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (set.totalInFlight() != 0 && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(2_000_000); // bounded wait for the last closes
            }
            // a request is counted when its exchange ends, just after its lease closed: wait until every request
            // the replay made is counted (a scrape shows every request that ended before it)
            PromText m = PromText.parse(proxy.metrics().scrape());
            while (m.sum("cart_requests_total") < run.requests() && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
                m = PromText.parse(proxy.metrics().scrape());
            }
            Map<String, Long> reasons = new java.util.TreeMap<>();
            for (PromText.Sample x : m.named("cart_decisions_total")) {
                reasons.merge(x.labels().get("reason"), (long) x.value(), Long::sum);
            }
            List<Long> perReplica = new ArrayList<>();
            for (SimulatedReplicaServer r : sims) {
                perReplica.add(r.requestCount());
            }
            return new HttpRun(
                    run.workload(),
                    run.policy(),
                    run.requests(),
                    run.failed(),
                    run.promptTokens(),
                    run.cachedTokens(),
                    (long) m.sum("cart_cache_prompt_tokens_total"),
                    (long) m.sum("cart_cache_delivered_tokens_total"),
                    run.seconds(),
                    set.totalInFlight(),
                    reasons,
                    perReplica,
                    run.trace());
        } finally {
            if (proxy != null) {
                proxy.close();
            }
            for (SimulatedReplicaServer r : sims) {
                r.close();
            }
        }
    }

    /** The closed-loop replay over HTTP, with the simulation's session rule. */
    private static final class Replay {
        private final List<WorkloadRequest> requests;
        private final String workload;
        private final String policy;
        private final Settings s;
        private final URI base;
        private final HttpClient http;
        private final SessionLoop loop;
        private final AtomicLong prompt = new AtomicLong();
        private final AtomicLong cached = new AtomicLong();
        private final AtomicInteger failed = new AtomicInteger();
        private final List<String> urls;
        private final Trace trace;

        Replay(Workload w, String policy, Settings s, ProxyServer proxy, List<String> urls) {
            this.urls = urls;
            this.requests = w.requests();
            this.workload = w.name();
            this.policy = policy;
            this.s = s;
            this.base = proxy.baseUri();
            this.http = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(10))
                    .build();
            this.loop = new SessionLoop(requests, s.clients(), this::send);
            int n = requests.size();
            this.trace = new Trace(new int[n], new long[n], new long[n], new long[n]);
            java.util.Arrays.fill(trace.replica(), -1);
            java.util.Arrays.fill(trace.firstEventNanos(), -1);
        }

        HttpRun run() throws InterruptedException {
            long t0 = System.nanoTime();
            loop.run();
            return new HttpRun(
                    workload,
                    policy,
                    requests.size(),
                    failed.get(),
                    prompt.get(),
                    cached.get(),
                    0,
                    0,
                    (System.nanoTime() - t0) / 1e9,
                    0,
                    Map.of(),
                    List.of(),
                    trace);
        }

        private void send(int i) {
            WorkloadRequest r = requests.get(i);
            HttpRequest req = HttpRequest.newBuilder(base.resolve(r.endpoint().path()))
                    .timeout(Duration.ofMinutes(5))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(r.body("sim", s.stream())))
                    .build();
            long sent = System.nanoTime();
            var unused = http.sendAsync(req, firstEventTimed(i, sent)).whenComplete((resp, err) -> {
                try {
                    if (err != null || resp.statusCode() != 200 || !count(i, resp.body())) {
                        System.err.println("E2EFAIL " + (err != null ? err : resp.statusCode() + " " + resp.body()));
                        failed.incrementAndGet();
                    } else {
                        trace.replica()[i] = urls.indexOf(
                                resp.headers().firstValue("x-routed-peer").orElse(""));
                    }
                } finally {
                    loop.finished(i);
                }
            });
        }

        /**
         * The body as a string, noting when the first line of it arrived (for a stream: its first event, the
         * first token's; for a JSON answer: the whole answer).
         */
        private HttpResponse.BodyHandler<String> firstEventTimed(int i, long sent) {
            return info -> HttpResponse.BodySubscribers.mapping(
                    HttpResponse.BodySubscribers.fromLineSubscriber(
                            new java.util.concurrent.Flow.Subscriber<String>() {
                                private final StringBuilder text = new StringBuilder();

                                @Override
                                public void onSubscribe(java.util.concurrent.Flow.Subscription sub) {
                                    sub.request(Long.MAX_VALUE);
                                }

                                @Override
                                public void onNext(String line) {
                                    if (trace.firstEventNanos()[i] < 0 && !line.isEmpty()) {
                                        trace.firstEventNanos()[i] = System.nanoTime() - sent;
                                    }
                                    text.append(line).append('\n');
                                }

                                @Override
                                public void onError(Throwable t) {}

                                @Override
                                public void onComplete() {}

                                @Override
                                public String toString() {
                                    return text.toString();
                                }
                            },
                            Object::toString,
                            java.nio.charset.StandardCharsets.UTF_8,
                            "\n"),
                    String::strip);
        }

        /** Adds the response's usage to the sums and the trace; false if it had none. */
        private boolean count(int i, String body) {
            try {
                JsonNode usage = null;
                if (body.startsWith("{")) {
                    usage = Responses.JSON.readTree(body).get("usage");
                } else {
                    for (String line : body.split("\n")) {
                        if (line.startsWith("data: {") && line.contains("\"usage\"")) {
                            JsonNode u =
                                    Responses.JSON.readTree(line.substring(6)).get("usage");
                            if (u != null && u.isObject()) {
                                usage = u;
                            }
                        }
                    }
                }
                if (usage == null || !usage.has("prompt_tokens")) {
                    return false;
                }
                long p = usage.get("prompt_tokens").asLong();
                long c = usage.path("prompt_tokens_details")
                        .path("cached_tokens")
                        .asLong();
                prompt.addAndGet(p);
                cached.addAndGet(c);
                trace.prompt()[i] = p;
                trace.cached()[i] = c;
                return true;
            } catch (Exception e) {
                return false;
            }
        }
    }

    static String table(List<Row> rows) {
        StringBuilder b = new StringBuilder();
        b.append("| workload | policy | requests | hit ratio over HTTP | hit ratio in process | difference (points) "
                + "| failed | proxy saw prompt / cached tokens | HTTP run (s) |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|---|---:|\n");
        for (Row r : rows) {
            HttpRun h = r.http();
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %d | %.3f | %.3f | %+.1f | %d | %,d / %,d | %.1f |%n",
                    h.workload(),
                    h.policy(),
                    h.requests(),
                    h.hitRatio(),
                    r.sim().hitRatio(),
                    100 * r.difference(),
                    h.failed(),
                    h.proxyPromptTokens(),
                    h.proxyDeliveredTokens(),
                    h.seconds()));
        }
        return b.toString();
    }

    /** One line of the TTFT comparison: a pool, a workload and a policy, over HTTP and in process. */
    record TtftRow(String pool, HttpRun http, RunResult sim, double speedup) {}

    /**
     * {@code predicted_ttft} against {@code cache_aware} over HTTP, on a uniform pool and a heterogeneous one
     * (the second half of the replicas twice as slow), every answer streamed so that the client times each
     * first event: the comparison of the routing-quality report's last section on a smaller run
     * ({@link #ttftWorkloads}). TTFT is in the model's milliseconds: real time times {@code speedup}, so the
     * proxy's and the HTTP client's own time counts {@code speedup} times over; keep it low.
     */
    static void ttftComparison(Settings base) throws Exception {
        double[] het = new double[base.replicas()];
        for (int i = 0; i < het.length; i++) {
            het[i] = i < (het.length + 1) / 2 ? 1.0 : 2.0;
        }
        List<TtftRow> rows = new ArrayList<>();
        // a run whose figures are dropped, so that the first measured one does not pay for class loading and JIT
        overHttp(ttftWorkloads(base).get(1), "cache_aware", base);
        for (double[] pool : new double[][] {null, het}) {
            Settings s = new Settings(
                    base.replicas(),
                    base.cacheTokens(),
                    base.speedup(),
                    base.clients(),
                    base.seed(),
                    true,
                    base.learnAnswer(),
                    pool);
            String name = pool == null ? "uniform" : "heterogeneous";
            for (Workload w : ttftWorkloads(s)) {
                for (String policy : List.of("cache_aware", "predicted_ttft")) {
                    HttpRun h = overHttp(w, policy, s);
                    RunResult sim = simulate(w, policy, s);
                    rows.add(new TtftRow(name, h, sim, s.speedup()));
                    System.out.printf(
                            Locale.ROOT,
                            "%s %s %s: HTTP hit %.3f p99 %.0f ms (%d failed, %.1f s) per replica %s %s; in process hit %.3f p99 %.0f ms per replica %s%n",
                            name,
                            w.name(),
                            policy,
                            h.hitRatio(),
                            h.trace().ttftModelMillis(0.99, s.speedup()),
                            h.failed(),
                            h.seconds(),
                            h.perReplica(),
                            h.reasons(),
                            sim.hitRatio(),
                            sim.ttftP99Millis(),
                            java.util.Arrays.toString(sim.routed()));
                }
            }
        }
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "seed %d, %d replicas of %,d cache tokens, %d clients (closed loop), speedup %.0f, streamed, Java %s%n%n",
                base.seed(),
                base.replicas(),
                base.cacheTokens(),
                base.clients(),
                base.speedup(),
                Runtime.version());
        System.out.print(ttftTable(rows));
    }

    /** The report's RAG and multi-turn workloads, a quarter and half as long (512 requests each). */
    static List<Workload> ttftWorkloads(Settings s) {
        Workloads.RagSpec rag = Workloads.RagSpec.defaults();
        Workloads.ChatSpec chat = Workloads.ChatSpec.defaults();
        return List.of(
                Workloads.rag(
                        s.seed(),
                        s.replicas() * s.cacheTokens(),
                        new Workloads.RagSpec(
                                512,
                                rag.minDocTokens(),
                                rag.maxDocTokens(),
                                rag.zipfS(),
                                rag.demandShare(),
                                rag.systemTokens(),
                                rag.minQuestion(),
                                rag.maxQuestion(),
                                rag.outputTokens())),
                Workloads.multiTurn(
                        s.seed(),
                        new Workloads.ChatSpec(
                                64,
                                chat.rounds(),
                                chat.systemTokens(),
                                chat.minUser(),
                                chat.maxUser(),
                                chat.minReply(),
                                chat.maxReply())));
    }

    static String ttftTable(List<TtftRow> rows) {
        StringBuilder b = new StringBuilder();
        b.append("| pool | workload | policy | hit ratio over HTTP | in process | TTFT p50 / p99 over HTTP (ms) "
                + "| in process (ms) | requests per replica over HTTP | failed | HTTP run (s) |\n");
        b.append("|---|---|---|---:|---:|---:|---:|---|---:|---:|\n");
        for (TtftRow r : rows) {
            HttpRun h = r.http();
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | %.3f | %.3f | %.0f / %.0f | %.0f / %.0f | %s | %d | %.1f |%n",
                    r.pool(),
                    h.workload(),
                    h.policy(),
                    h.hitRatio(),
                    r.sim().hitRatio(),
                    h.trace().ttftModelMillis(0.5, r.speedup()),
                    h.trace().ttftModelMillis(0.99, r.speedup()),
                    r.sim().ttftP50Millis(),
                    r.sim().ttftP99Millis(),
                    h.perReplica(),
                    h.failed(),
                    h.seconds()));
        }
        return b.toString();
    }

    /**
     * The full comparison. Options: {@code --seed N} (1), {@code --replicas N} (4), {@code --clients N}
     * (16 per replica, as the report's closed-loop scenario), {@code --speedup X} (100), {@code --cache-tokens N} (150000, the simulated replica's default),
     * {@code --stream} (stream every answer, usage read from its last chunk), {@code --learn-answer};
     * {@code --ttft} runs {@link #ttftComparison} instead.
     */
    public static void main(String[] args) throws Exception {
        long seed = 1;
        int replicas = 4;
        int clients = -1;
        double speedup = 100;
        long cacheTokens = 150_000;
        boolean stream = false;
        boolean learnAnswer = false;
        boolean ttft = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--seed" -> seed = Long.parseLong(args[++i]);
                case "--replicas" -> replicas = Integer.parseInt(args[++i]);
                case "--clients" -> clients = Integer.parseInt(args[++i]);
                case "--speedup" -> speedup = Double.parseDouble(args[++i]);
                case "--cache-tokens" -> cacheTokens = Long.parseLong(args[++i]);
                case "--stream" -> stream = true;
                case "--learn-answer" -> learnAnswer = true;
                case "--ttft" -> ttft = true;
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (clients < 0) {
            clients = 16 * replicas;
        }
        if (ttft) {
            ttftComparison(new Settings(replicas, cacheTokens, speedup, clients, seed, true, learnAnswer));
            return;
        }
        Settings s = new Settings(replicas, cacheTokens, speedup, clients, seed, stream, learnAnswer);
        List<Workload> workloads = List.of(Workloads.rag(seed, replicas * cacheTokens), Workloads.multiTurn(seed));
        List<Row> rows = new ArrayList<>();
        for (Workload w : workloads) {
            for (String policy : List.of("round_robin", "cache_aware")) {
                HttpRun h = overHttp(w, policy, s);
                RunResult sim = simulate(w, policy, s);
                rows.add(new Row(h, sim));
                System.out.printf(
                        Locale.ROOT,
                        "%s %s: HTTP %.3f (%d failed, %.1f s) requests per replica %s %s; "
                                + "in process %.3f requests per replica %s %s%n",
                        w.name(),
                        policy,
                        h.hitRatio(),
                        h.failed(),
                        h.seconds(),
                        h.perReplica(),
                        h.reasons(),
                        sim.hitRatio(),
                        java.util.Arrays.toString(sim.routed()),
                        sim.reasons());
            }
        }
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "seed %d, %d replicas of %,d cache tokens, %d clients (closed loop), speedup %.0f, "
                        + "%s, learn_answer %s, Java %s%n%n",
                seed,
                replicas,
                cacheTokens,
                clients,
                speedup,
                stream ? "streamed" : "not streamed",
                learnAnswer,
                Runtime.version());
        System.out.print(table(rows));
    }
}
