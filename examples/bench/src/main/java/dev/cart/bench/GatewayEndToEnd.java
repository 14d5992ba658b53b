package dev.cart.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.Workload;
import dev.cart.sim.WorkloadRequest;
import dev.cart.sim.Workloads;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The hit ratio through the example gateway against the standalone proxy's, measured the same way in the same run:
 * one driver (this process), fresh simulated vLLM replicas for every measurement, and the server under test — the
 * proxy's jar or the gateway's jar — started as a child process in front of them with the same JVM options. The
 * replay rules and settings are those of the proxy's end-to-end comparison ({@code docs/end-to-end.md}): 4 replicas
 * of 150,000 cache tokens, engine time 100x faster than the modelled GPU, a closed loop of 64 clients, a chat turn
 * waits for its user's previous turn, hit ratio = sum of {@code cached_tokens} / sum of {@code prompt_tokens} as the
 * replicas reported them; CART learns on route, feedback on, tree eviction off. CART against the proxy's
 * {@code cache_aware}; the gateway's default round robin ({@code lb://llm-rr}) against the proxy's
 * {@code round_robin}.
 *
 * <p>Fairness: the two servers alternate (odd runs A first, even runs B first) so that a change in the
 * machine's load touches both; each runs in its own JVM, not in the one running the replicas and the driver; each is
 * warmed before its measured replay by {@code --warmup} requests whose prompts share nothing with the workload's
 * (the JIT, the gateway's lazily built load-balancer context and both servers' connection pools are then warm; the
 * replicas' caches evict those blocks first, being the least recently used, and CART's routes for them are never
 * matched). Without the warm-up the workload's first burst of 64 requests reaches a cold gateway, which holds it
 * back and then decides it at once, whereas the proxy decides it as the requests arrive: the guard diverts
 * fewer of the first requests and the first users are placed on the replicas differently.
 *
 * <p>Not run by the test suite (it needs both jars, {@code mvn -DskipTests package}):
 *
 * <pre>
 * java -cp examples/bench/target/cart-bench.jar:cart-proxy/target/cart-proxy.jar dev.cart.bench.GatewayEndToEnd [--runs 7] [--seed 1] [--stream] [--warmup 256]
 *     [--speedup 100] [--workloads rag-zipf,multi-turn] [--balancers cart,round_robin] [--proxy-jar ...] [--gateway-jar ...]
 *     [--servers proxy,gateway] [--proxy-learn-answer] [--rag-requests 2048] [--users 128] [--prefill-aware false] [--debug-log]
 *     [--feedback false] [--in-flight-samples]
 * </pre>
 *
 * <p>{@code --servers A,B} names the two servers compared (B − A): {@code proxy,gateway} by default;
 * {@code proxy,proxy} is the A/A run, two identical proxies in the same harness, whose same-run differences are
 * the noise floor the gateway's are judged against; {@code proxy+learn_answer} is the proxy with
 * {@code learn_answer} on. The proxy runs with {@code learn_answer} off unless {@code --proxy-learn-answer}: the
 * gateway does not learn answers, and the two should decide alike for the same arrivals. {@code --rag-requests}
 * and {@code --users} lengthen the replays (more requests per run: less noise per run), the seed set unchanged.
 * {@code --prefill-aware} sets the policy's {@code prefill_aware} on both servers. {@code --debug-log} turns on the
 * gateway's {@code dev.cart.gateway.decisions} DEBUG log (each decision and usage verdict: reason, replica, lengths,
 * two block hashes of the key) and keeps the gateway's output file, whose path is printed. {@code --feedback false}
 * turns usage feedback off on both servers (the router then never forgets a route on a usage report).
 * {@code --in-flight-samples} reports each replay's mean number of requests holding a replica slot (scraped
 * every 100 ms; the scrapes cost the server some CPU, so runs with it are not comparable with runs without).
 */
final class GatewayEndToEnd {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int REPLICAS = 4;
    private static final long CACHE_TOKENS = 150_000;
    private static final int CLIENTS = 16 * REPLICAS;
    /** {@code --debug-log}: the gateway logs each decision and usage verdict, and its log is kept. */
    private static boolean debugLog;

    /** {@code --feedback false}: both servers ignore usage reports ({@code feedback} off); on by default. */
    private static boolean feedback = true;

    /** What {@code --servers} compares: the gateway, the proxy, the proxy with {@code learn_answer} on. */
    private static final List<String> SERVER_KINDS = List.of("gateway", "proxy", "proxy+learn_answer");

    /** One measured replay. */
    record Run(
            int run,
            String workload,
            String server,
            String balancer,
            int requests,
            int failed,
            long prompt,
            long cached,
            double seconds,
            int moves,
            Map<String, Long> decisions,
            long leftInFlight,
            double meanInFlight) {
        double hitRatio() {
            return prompt == 0 ? 0 : (double) cached / prompt;
        }
    }

    private GatewayEndToEnd() {}

    public static void main(String[] args) throws Exception {
        int runs = 7;
        long seed = 1;
        boolean stream = false;
        int warmup = 256;
        double speedup = 100;
        List<String> workloadNames = List.of("rag-zipf", "multi-turn");
        List<String> balancers = List.of("cart", "round_robin");
        List<String> serverKinds = List.of("proxy", "gateway");
        boolean proxyLearnAnswer = false;
        String prefillAware = null; // the policy's default unless --prefill-aware
        int ragRequests = Workloads.RagSpec.defaults().requests();
        int users = Workloads.ChatSpec.defaults().users();
        String proxyJar = "cart-proxy/target/cart-proxy.jar";
        String gatewayJar = "examples/gateway/target/cart-gateway-example.jar";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--runs" -> runs = Integer.parseInt(args[++i]);
                case "--seed" -> seed = Long.parseLong(args[++i]);
                case "--stream" -> stream = true;
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--speedup" -> speedup = Double.parseDouble(args[++i]);
                case "--workloads" -> workloadNames = List.of(args[++i].split(","));
                case "--balancers" -> balancers = List.of(args[++i].split(","));
                case "--servers" -> serverKinds = List.of(args[++i].split(","));
                case "--proxy-learn-answer" -> proxyLearnAnswer = true;
                case "--debug-log" -> debugLog = true;
                case "--in-flight-samples" -> inFlightSamples = true;
                case "--feedback" -> feedback = Boolean.parseBoolean(args[++i]);
                case "--prefill-aware" -> prefillAware = String.valueOf(Boolean.parseBoolean(args[++i]));
                case "--rag-requests" -> ragRequests = Integer.parseInt(args[++i]);
                case "--users" -> users = Integer.parseInt(args[++i]);
                case "--proxy-jar" -> proxyJar = args[++i];
                case "--gateway-jar" -> gatewayJar = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (serverKinds.size() != 2 || !serverKinds.stream().allMatch(SERVER_KINDS::contains)) {
            throw new IllegalArgumentException("--servers takes two of " + SERVER_KINDS + " (A,B), was " + serverKinds);
        }
        // the two servers' labels: their kind, the second one marked when both are the same (an A/A run)
        List<String> labels = serverKinds.get(0).equals(serverKinds.get(1))
                ? List.of(serverKinds.get(0), serverKinds.get(1) + "'")
                : serverKinds;
        for (String jar : List.of(proxyJar, gatewayJar)) {
            if (!Files.isRegularFile(Path.of(jar))) {
                throw new IllegalArgumentException(jar + " not found: build it with mvn -B -ntp -DskipTests package");
            }
        }
        Map<String, Workload> workloads = new LinkedHashMap<>();
        for (String name : workloadNames) {
            workloads.put(
                    name,
                    switch (name) {
                        case "rag-zipf" -> Workloads.rag(seed, REPLICAS * CACHE_TOKENS, ragSpec(ragRequests));
                        case "multi-turn" -> Workloads.multiTurn(seed, chatSpec(users));
                        default -> throw new IllegalArgumentException("unknown workload " + name);
                    });
        }
        List<Run> all = new ArrayList<>();
        for (int run = 1; run <= runs; run++) {
            List<Integer> order = run % 2 == 1 ? List.of(0, 1) : List.of(1, 0); // odd runs A first
            for (Workload w : workloads.values()) {
                for (String balancer : balancers) {
                    for (int s : order) {
                        String kind = serverKinds.get(s);
                        String jar = kind.equals("gateway") ? gatewayJar : proxyJar;
                        Run r = measure(
                                run,
                                w,
                                labels.get(s),
                                kind,
                                jar,
                                balancer,
                                stream,
                                warmup,
                                speedup,
                                proxyLearnAnswer,
                                prefillAware);
                        all.add(r);
                        System.out.printf(
                                Locale.ROOT,
                                "run %d %s %s %s: hit ratio %.4f, %d failed, %.1f s, %d turns moved replica, "
                                        + "decisions %s, left in flight %d, mean in flight %.1f%n",
                                r.run(),
                                r.workload(),
                                r.server(),
                                r.balancer(),
                                r.hitRatio(),
                                r.failed(),
                                r.seconds(),
                                r.moves(),
                                r.decisions(),
                                r.leftInFlight(),
                                r.meanInFlight());
                    }
                }
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%nseed %d, %d runs, %d replicas of %,d cache tokens, %d clients (closed loop), speedup %.0f, %s, "
                        + "warm-up %d requests, proxy learn_answer %s, prefill_aware %s, %d cores, Java %s%n%n",
                seed,
                runs,
                REPLICAS,
                CACHE_TOKENS,
                CLIENTS,
                speedup,
                stream ? "streamed" : "not streamed",
                warmup,
                proxyLearnAnswer,
                prefillAware == null ? "default" : prefillAware,
                Runtime.getRuntime().availableProcessors(),
                Runtime.version());
        for (Workload w : workloads.values()) {
            System.out.println(w.name() + ": " + w.description());
        }
        System.out.println();
        System.out.print(summary(all, workloads.keySet(), balancers, labels.get(0), labels.get(1)));
        System.exit(0);
    }

    /** The RAG workload's default shape with {@code requests} requests. */
    static Workloads.RagSpec ragSpec(int requests) {
        Workloads.RagSpec d = Workloads.RagSpec.defaults();
        return new Workloads.RagSpec(
                requests,
                d.minDocTokens(),
                d.maxDocTokens(),
                d.zipfS(),
                d.demandShare(),
                d.systemTokens(),
                d.minQuestion(),
                d.maxQuestion(),
                d.outputTokens());
    }

    /** The multi-turn workload's default shape with {@code users} users. */
    static Workloads.ChatSpec chatSpec(int users) {
        Workloads.ChatSpec d = Workloads.ChatSpec.defaults();
        return new Workloads.ChatSpec(
                users, d.rounds(), d.systemTokens(), d.minUser(), d.maxUser(), d.minReply(), d.maxReply());
    }

    /**
     * Per workload and balancer: each server's range, and B − A per run and against A's mean ({@code a} the first
     * server's label, {@code b} the second's: by default the proxy and the gateway).
     */
    static String summary(List<Run> all, Iterable<String> workloads, List<String> balancers, String a, String bLabel) {
        StringBuilder b = new StringBuilder(String.format(
                Locale.ROOT,
                "| workload | balancer | %2$s (range; each run) | %1$s (range; each run) | %2$s − %1$s, same run (points) "
                        + "| %2$s − %1$s mean (points) | failed | left in flight |%n|---|---|---|---|---|---|---:|---:|%n",
                a,
                bLabel));
        for (String w : workloads) {
            for (String balancer : balancers) {
                List<Run> gw = all.stream()
                        .filter(r -> r.workload().equals(w)
                                && r.balancer().equals(balancer)
                                && r.server().equals(bLabel))
                        .toList();
                List<Run> px = all.stream()
                        .filter(r -> r.workload().equals(w)
                                && r.balancer().equals(balancer)
                                && r.server().equals(a))
                        .toList();
                if (gw.isEmpty() || px.size() != gw.size()) {
                    continue;
                }
                double proxyMean =
                        px.stream().mapToDouble(Run::hitRatio).average().orElse(0);
                double[] paired = new double[gw.size()];
                double[] toMean = new double[gw.size()];
                for (int i = 0; i < gw.size(); i++) {
                    paired[i] = 100 * (gw.get(i).hitRatio() - px.get(i).hitRatio());
                    toMean[i] = 100 * (gw.get(i).hitRatio() - proxyMean);
                }
                b.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s | %s | %s | %s | %d | %d |%n",
                        w,
                        balancer.equals("cart") ? "CART / cache_aware" : "round robin",
                        ratios(gw),
                        ratios(px),
                        points(paired),
                        points(toMean),
                        gw.stream().mapToInt(Run::failed).sum()
                                + px.stream().mapToInt(Run::failed).sum(),
                        gw.stream().mapToLong(Run::leftInFlight).sum()
                                + px.stream().mapToLong(Run::leftInFlight).sum()));
            }
        }
        return b.toString();
    }

    private static String ratios(List<Run> runs) {
        double[] v = runs.stream().mapToDouble(Run::hitRatio).toArray();
        double[] s = v.clone();
        Arrays.sort(s);
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%.3f–%.3f (", s[0], s[s.length - 1]));
        for (int i = 0; i < v.length; i++) {
            b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.3f", v[i]));
        }
        return b.append(')').toString();
    }

    private static String points(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%+.1f..%+.1f (", s[0], s[s.length - 1]));
        for (int i = 0; i < v.length; i++) {
            b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%+.1f", v[i]));
        }
        return b.append(')').toString();
    }

    /**
     * Fresh replicas and a fresh server process ({@code kind} proxy or gateway, reported as {@code server}); the
     * warm-up, then the workload through one balancer.
     */
    static Run measure(
            int run,
            Workload w,
            String server,
            String kind,
            String jar,
            String balancer,
            boolean stream,
            int warmup,
            double speedup,
            boolean proxyLearnAnswer,
            String prefillAware)
            throws Exception {
        List<SimulatedReplicaServer> sims = new ArrayList<>();
        Process process = null;
        Path config = null;
        Path log = null;
        boolean ok = false;
        try {
            for (int i = 0; i < REPLICAS; i++) {
                sims.add(SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("e2e-" + i)
                        .port(0)
                        .model("sim")
                        .cacheTokens(CACHE_TOKENS)
                        .speedup(speedup)));
            }
            int port = freePort();
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<String> cmd = new ArrayList<>(List.of(java, "-Xmx1g", "-jar", jar));
            boolean proxy = !kind.equals("gateway");
            if (proxy) {
                config = Files.createTempFile("cart-e2e-", ".yaml");
                Files.writeString(
                        config,
                        proxyConfig(
                                port,
                                balancer,
                                sims,
                                proxyLearnAnswer || kind.endsWith("+learn_answer"),
                                prefillAware));
                cmd.addAll(List.of("-c", config.toString()));
            } else {
                cmd.addAll(List.of(
                        "--server.port=" + port,
                        "--server.address=127.0.0.1",
                        "--cart.eviction-interval-secs=0",
                        "--cart.learn=on_route",
                        "--cart.feedback=" + feedback,
                        "--logging.level.root=WARN",
                        "--spring.main.banner-mode=off"));
                if (debugLog) {
                    cmd.add("--logging.level.dev.cart.gateway.decisions=DEBUG");
                }
                if (prefillAware != null && balancer.equals("cart")) {
                    cmd.add("--cart.prefill-aware=" + prefillAware);
                }
                for (int i = 0; i < sims.size(); i++) {
                    for (String service : List.of("llm", "llm-rr")) {
                        cmd.add("--spring.cloud.discovery.client.simple.instances." + service + "[" + i + "].uri="
                                + sims.get(i).baseUri());
                    }
                }
            }
            log = Files.createTempFile("cart-e2e-" + server + "-", ".log");
            process = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            URI base = URI.create("http://127.0.0.1:" + port);
            HttpClient http = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(10))
                    .build();
            awaitUp(http, base.resolve(proxy ? "/health" : "/actuator/health"), process);
            URI route = URI.create(base + (proxy || balancer.equals("cart") ? "" : "/rr"));
            URI metrics = base.resolve(proxy ? "/metrics" : "/actuator/prometheus");
            if (warmup > 0) {
                warmUp(http, route, warmup, stream);
                awaitIdle(http, metrics);
            }
            Map<String, Long> before = decisions(scrape(http, metrics));
            Replay replay = new Replay(w, http, route, stream);
            InFlightSampler sampler = inFlightSamples ? InFlightSampler.start(http, metrics) : null;
            replay.run();
            double meanInFlight = sampler == null ? Double.NaN : sampler.stop();
            long inFlight = awaitIdle(http, metrics);
            Map<String, Long> decisions = decisions(scrape(http, metrics));
            before.forEach((reason, n) -> decisions.merge(reason, -n, Long::sum));
            decisions.values().removeIf(n -> n == 0);
            ok = true;
            return new Run(
                    run,
                    w.name(),
                    server,
                    balancer,
                    w.requests().size(),
                    replay.failed.get(),
                    replay.prompt.get(),
                    replay.cached.get(),
                    replay.seconds,
                    replay.moves(),
                    decisions,
                    inFlight,
                    meanInFlight);
        } finally {
            if (process != null) {
                process.destroy();
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
            for (SimulatedReplicaServer r : sims) {
                r.close();
            }
            if (config != null) {
                Files.deleteIfExists(config);
            }
            if (log != null && ok && !debugLog) {
                Files.deleteIfExists(log);
            } else if (log != null) {
                System.err.println("the " + server + "'s output is in " + log);
            }
        }
    }

    /**
     * The proxy's settings of {@code docs/end-to-end.md}: learn on route, feedback on, eviction off, no retries;
     * {@code learn_answer} off unless asked for, since the gateway does not learn answers.
     */
    private static String proxyConfig(
            int port, String balancer, List<SimulatedReplicaServer> sims, boolean learnAnswer, String prefillAware) {
        StringBuilder yaml = new StringBuilder("server:\n  host: 127.0.0.1\n  port: ")
                .append(port)
                .append("\n  max_threads: ")
                .append(4 * CLIENTS)
                .append("\ncache:\n  policy: ")
                .append(balancer.equals("cart") ? "cache_aware" : "round_robin")
                .append("\n  eviction_interval_secs: 0\n  learn: on_route\n  feedback: ")
                .append(feedback)
                .append("\n  learn_answer: ")
                .append(learnAnswer)
                .append('\n')
                .append(
                        prefillAware != null && balancer.equals("cart")
                                ? "  prefill_aware: " + prefillAware + "\n"
                                : "")
                .append("proxy:\n  max_retries: 0\n  decision_log: false\nworkers:\n");
        for (SimulatedReplicaServer r : sims) {
            yaml.append("  - url: ").append(r.baseUri()).append('\n');
        }
        return yaml.toString();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void awaitUp(HttpClient http, URI health, Process process) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the server exited with " + process.exitValue() + " before it was up");
            }
            try {
                HttpResponse<Void> r = http.send(
                        HttpRequest.newBuilder(health)
                                .timeout(Duration.ofSeconds(5))
                                .build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
        }
        throw new IllegalStateException("the server was not up within 3 minutes: " + health);
    }

    /**
     * {@code n} chat requests, {@link #CLIENTS} at a time, whose prompts (random words) share no prefix with the
     * workload's or with each other beyond a few characters.
     */
    private static void warmUp(HttpClient http, URI route, int n, boolean stream) throws InterruptedException {
        SplittableRandom rnd = new SplittableRandom(n);
        String[] words = "warm up only the server under test never the measured caches".split(" ");
        List<HttpRequest> requests = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            StringBuilder text = new StringBuilder("warm-up " + i + ":");
            while (text.length() < 2_000) {
                text.append(' ').append(words[rnd.nextInt(words.length)]);
            }
            String body = "{\"model\":\"sim\",\"stream\":" + stream + ",\"max_tokens\":8,\"messages\":[{\"role\":"
                    + "\"user\",\"content\":\"" + text + "\"}]}";
            requests.add(HttpRequest.newBuilder(URI.create(route + "/v1/chat/completions"))
                    .timeout(Duration.ofMinutes(2))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body))
                    .build());
        }
        AtomicInteger next = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(n);
        for (int c = 0; c < Math.min(CLIENTS, n); c++) {
            sendNext(http, requests, next, done);
        }
        if (!done.await(10, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the warm-up did not finish");
        }
    }

    private static void sendNext(HttpClient http, List<HttpRequest> requests, AtomicInteger next, CountDownLatch done) {
        int i = next.getAndIncrement();
        if (i >= requests.size()) {
            return;
        }
        var unused = http.sendAsync(requests.get(i), HttpResponse.BodyHandlers.discarding())
                .whenComplete((r, e) -> {
                    done.countDown();
                    sendNext(http, requests, next, done);
                });
    }

    private static String scrape(HttpClient http, URI metrics) throws IOException, InterruptedException {
        return http.send(
                        HttpRequest.newBuilder(metrics)
                                .timeout(Duration.ofSeconds(30))
                                .build(),
                        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8))
                .body();
    }

    private static final Pattern SAMPLE = Pattern.compile("^([a-z_]+)(\\{[^}]*})? ([-+0-9.eE]+|NaN)$");
    private static final Pattern REASON = Pattern.compile("reason=\"([^\"]+)\"");
    private static final Pattern VERDICT = Pattern.compile("verdict=\"([^\"]+)\"");
    private static final Pattern OUTCOME = Pattern.compile("outcome=\"([^\"]+)\"");

    /**
     * {@code cart_decisions_total} by reason, and {@code cart_cache_feedback_total} by verdict (as
     * {@code feedback_ok}, {@code feedback_stale}: usage reports the router compared with its prediction), and
     * {@code cart_upstream_requests_total} by outcome other than success (as {@code outcome_failure},
     * {@code outcome_cancelled}: what the circuit breakers were told).
     */
    private static Map<String, Long> decisions(String text) {
        Map<String, Long> by = new TreeMap<>();
        for (String line : text.split("\n")) {
            Matcher m = SAMPLE.matcher(line);
            if (m.matches() && m.group(1).equals("cart_decisions_total") && m.group(2) != null) {
                Matcher r = REASON.matcher(m.group(2));
                if (r.find()) {
                    by.merge(r.group(1), (long) Double.parseDouble(m.group(3)), Long::sum);
                }
            } else if (m.matches() && m.group(1).equals("cart_cache_feedback_total") && m.group(2) != null) {
                Matcher v = VERDICT.matcher(m.group(2));
                if (v.find()) {
                    by.merge("feedback_" + v.group(1), (long) Double.parseDouble(m.group(3)), Long::sum);
                }
            } else if (m.matches() && m.group(1).equals("cart_upstream_requests_total") && m.group(2) != null) {
                Matcher o = OUTCOME.matcher(m.group(2));
                if (o.find() && !o.group(1).equals("success")) {
                    by.merge("outcome_" + o.group(1), (long) Double.parseDouble(m.group(3)), Long::sum);
                }
            }
        }
        return by;
    }

    /** Requests holding a slot: the proxy's per-replica gauge, the gateway's per-service one. */
    private static long inFlight(String text) {
        long n = 0;
        for (String line : text.split("\n")) {
            Matcher m = SAMPLE.matcher(line);
            if (m.matches()
                    && (m.group(1).equals("cart_replica_in_flight")
                            || m.group(1).equals("cart_requests_in_flight"))) {
                n += (long) Double.parseDouble(m.group(3));
            }
        }
        return n;
    }

    /**
     * {@code --in-flight-samples}: the server's requests holding a replica slot, scraped every 100 ms while the
     * replay runs (all replicas together), averaged. Of the {@link #CLIENTS} requests out at any time, the ones not
     * holding a slot are in the front (read, decided, or answered and not yet released) or in the driver.
     */
    private static boolean inFlightSamples;

    private static final class InFlightSampler {
        private final Thread thread;
        private volatile boolean stop;
        private long sum;
        private long samples;

        private InFlightSampler(HttpClient http, URI metrics) {
            thread = new Thread(() -> {
                while (!stop) {
                    try {
                        long n = inFlight(scrape(http, metrics));
                        synchronized (this) {
                            sum += n;
                            samples++;
                        }
                    } catch (IOException e) {
                        // a scrape that failed is not a sample
                    } catch (InterruptedException e) {
                        return;
                    }
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
                }
            });
            thread.setDaemon(true);
        }

        static InFlightSampler start(HttpClient http, URI metrics) {
            InFlightSampler s = new InFlightSampler(http, metrics);
            s.thread.start();
            return s;
        }

        double stop() throws InterruptedException {
            stop = true;
            thread.join();
            synchronized (this) {
                return samples == 0 ? Double.NaN : (double) sum / samples;
            }
        }
    }

    /** Waits (bounded) until no request holds a slot; the count left. */
    private static long awaitIdle(HttpClient http, URI metrics) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        long n;
        while ((n = inFlight(scrape(http, metrics))) != 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
        return n;
    }

    /**
     * The closed-loop replay: {@link #CLIENTS} requests out at once, each finished request letting the next one
     * in workload order go, a chat user's turns one after another (the simulation's rules).
     */
    private static final class Replay {
        private final List<WorkloadRequest> requests;
        private final HttpClient http;
        private final URI base;
        private final boolean stream;
        private final CountDownLatch done;
        private final Map<String, ArrayDeque<Integer>> waiting = new HashMap<>();
        private final Map<String, Boolean> busy = new HashMap<>();
        private final AtomicLong prompt = new AtomicLong();
        private final AtomicLong cached = new AtomicLong();
        private final AtomicInteger failed = new AtomicInteger();
        private final String[] servedBy;
        private double seconds;
        private int next;

        Replay(Workload w, HttpClient http, URI base, boolean stream) {
            this.requests = w.requests();
            this.http = http;
            this.base = base;
            this.stream = stream;
            this.done = new CountDownLatch(requests.size());
            this.servedBy = new String[requests.size()];
        }

        void run() throws InterruptedException {
            long t0 = System.nanoTime();
            synchronized (this) {
                for (next = 0; next < Math.min(CLIENTS, requests.size()); next++) {
                    arrive(next);
                }
            }
            if (!done.await(30, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the replay did not finish");
            }
            seconds = (System.nanoTime() - t0) / 1e9;
        }

        /** Turns of a session served by another replica than the session's previous turn. */
        int moves() {
            Map<String, String> last = new HashMap<>();
            int moves = 0;
            for (int i = 0; i < requests.size(); i++) {
                String session = requests.get(i).session();
                if (session != null && servedBy[i] != null) {
                    String before = last.put(session, servedBy[i]);
                    if (before != null && !before.equals(servedBy[i])) {
                        moves++;
                    }
                }
            }
            return moves;
        }

        /** Called with the lock held. */
        private void arrive(int i) {
            String session = requests.get(i).session();
            if (session != null) {
                if (busy.getOrDefault(session, false)) {
                    waiting.computeIfAbsent(session, k -> new ArrayDeque<>()).addLast(i);
                    return;
                }
                busy.put(session, true);
            }
            send(i);
        }

        private synchronized void finished(int i) {
            String session = requests.get(i).session();
            if (session != null) {
                ArrayDeque<Integer> q = waiting.get(session);
                if (q != null && !q.isEmpty()) {
                    send(q.pollFirst());
                } else {
                    busy.put(session, false);
                }
            }
            if (next < requests.size()) {
                arrive(next++);
            }
            done.countDown();
        }

        private void send(int i) {
            WorkloadRequest r = requests.get(i);
            HttpRequest req = HttpRequest.newBuilder(
                            URI.create(base + r.endpoint().path()))
                    .timeout(Duration.ofMinutes(5))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(r.body("sim", stream)))
                    .build();
            var unused = http.sendAsync(req, HttpResponse.BodyHandlers.ofString())
                    .whenComplete((resp, err) -> {
                        try {
                            if (err != null || resp.statusCode() != 200 || !count(resp.body())) {
                                System.err.println("E2EFAIL " + (err != null ? err : resp.statusCode()));
                                failed.incrementAndGet();
                            } else {
                                servedBy[i] = resp.headers()
                                        .firstValue("x-sim-replica")
                                        .orElse(null);
                            }
                        } finally {
                            finished(i);
                        }
                    });
        }

        private boolean count(String body) {
            try {
                JsonNode usage = null;
                if (body.startsWith("{")) {
                    usage = JSON.readTree(body).get("usage");
                } else {
                    for (String line : body.split("\n")) {
                        if (line.startsWith("data: {") && line.contains("\"usage\"")) {
                            JsonNode u = JSON.readTree(line.substring(6)).get("usage");
                            if (u != null && u.isObject()) {
                                usage = u;
                            }
                        }
                    }
                }
                if (usage == null || !usage.has("prompt_tokens")) {
                    return false;
                }
                prompt.addAndGet(usage.get("prompt_tokens").asLong());
                cached.addAndGet(usage.path("prompt_tokens_details")
                        .path("cached_tokens")
                        .asLong());
                return true;
            } catch (Exception e) {
                return false;
            }
        }
    }
}
