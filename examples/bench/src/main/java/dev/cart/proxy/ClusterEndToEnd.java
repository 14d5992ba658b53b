package dev.cart.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.http.Responses;
import dev.cart.redis.RedisServerProcess;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.Workload;
import dev.cart.sim.WorkloadRequest;
import dev.cart.sim.Workloads;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Several proxies as one, over HTTP and as separate processes: N proxy JVMs ({@code dev.cart.proxy.Main},
 * as {@code bin/cache-aware-router} runs it, on this driver's class path) in front of the same simulated
 * replicas, sharing one {@code redis-server} through their {@code cluster} section, and a replay spread
 * over them at random (each request to a proxy drawn uniformly, as a plain L4 balancer does); against one
 * proxy process, and against N processes sharing nothing. The workload, the replicas (each run starts
 * fresh ones, caches empty), the closed loop and its session rule are {@link EndToEnd}'s.
 *
 * <p>Measured: the replica-measured hit ratio (Σ cached over Σ prompt tokens from the answers' usage),
 * the P99 of the request's whole latency at the client (answers not streamed: the time to the last byte),
 * the requests each replica served, failures, what was left in flight on the proxies at the end, and
 * (clustered) the commands and {@code PUBLISH}es Redis processed meanwhile ({@code INFO}).
 *
 * <p>Run (docs/end-to-end.md, "Several proxies"):
 *
 * <pre>{@code
 * mvn -B -ntp -q -pl examples/bench -am package -DskipTests dependency:build-classpath \
 *     -Dmdep.outputFile=/tmp/cart-cp.txt -Dmdep.includeScope=runtime
 * java -cp "examples/bench/target/cart-bench.jar:$(cat /tmp/cart-cp.txt)" \
 *     dev.cart.proxy.ClusterEndToEnd    # --proxies 4 --seed 1 --clients 64 --workload rag|multi-turn|both
 * }</pre>
 */
final class ClusterEndToEnd {

    private ClusterEndToEnd() {}

    /** One run's figures. */
    record Run(
            String workload,
            String setup,
            int requests,
            int failed,
            long prompt,
            long cached,
            long p99Millis,
            List<Long> perReplica,
            long leftInFlight,
            double seconds,
            long redisCommands,
            long redisPublishes) {
        double hitRatio() {
            return prompt == 0 ? 0 : (double) cached / prompt;
        }
    }

    // the redis-server launcher's close() waits for the process (InterruptedException): fine for a program
    @SuppressWarnings("try")
    public static void main(String[] args) throws Exception {
        long seed = 1;
        int proxies = 4;
        int replicas = 4;
        int clients = 64;
        double speedup = 100;
        long cacheTokens = 150_000;
        String which = "both";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--seed" -> seed = Long.parseLong(args[++i]);
                case "--proxies" -> proxies = Integer.parseInt(args[++i]);
                case "--replicas" -> replicas = Integer.parseInt(args[++i]);
                case "--clients" -> clients = Integer.parseInt(args[++i]);
                case "--speedup" -> speedup = Double.parseDouble(args[++i]);
                case "--cache-tokens" -> cacheTokens = Long.parseLong(args[++i]);
                case "--workload" -> which = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        List<Workload> workloads = new ArrayList<>();
        if (!which.equals("multi-turn")) {
            workloads.add(Workloads.rag(seed, replicas * cacheTokens));
        }
        if (!which.equals("rag")) {
            workloads.add(Workloads.multiTurn(seed));
        }
        Path dir = Files.createTempDirectory("cart-cluster-e2e");
        List<Run> runs = new ArrayList<>();
        try (RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort())) {
            int n = 0;
            for (Workload w : workloads) {
                for (String setup :
                        List.of("1 proxy", proxies + " proxies, no cluster", proxies + " proxies, cluster")) {
                    int count = setup.startsWith("1 ") ? 1 : proxies;
                    String url = setup.endsWith(", cluster") ? redis.uri() : null;
                    Run r = run(
                            w,
                            setup,
                            count,
                            url,
                            "cart:e2e-" + n++,
                            replicas,
                            cacheTokens,
                            speedup,
                            clients,
                            seed,
                            dir);
                    runs.add(r);
                    System.out.printf(
                            Locale.ROOT,
                            "%s, %s: hit ratio %.3f, P99 %d ms, %d failed, per replica %s, left in flight %d, %.1f s;"
                                    + " Redis: %.0f commands/s, %.0f PUBLISH/s per proxy%n",
                            r.workload(),
                            r.setup(),
                            r.hitRatio(),
                            r.p99Millis(),
                            r.failed(),
                            r.perReplica(),
                            r.leftInFlight(),
                            r.seconds(),
                            r.redisCommands() / r.seconds(),
                            r.redisPublishes() / r.seconds() / count);
                }
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%nseed %d, %d replicas of %,d cache tokens, %d clients (closed loop), speedup %.0f, not streamed,"
                        + " Java %s%n%n",
                seed,
                replicas,
                cacheTokens,
                clients,
                speedup,
                Runtime.version());
        System.out.println(
                "| workload | proxies | requests | failed | hit ratio | × 1 proxy | P99 latency ms | × 1 proxy | requests per replica | left in flight |");
        System.out.println("|---|---|---:|---:|---:|---:|---:|---:|---|---:|");
        Run base = null;
        for (Run r : runs) {
            if (r.setup().startsWith("1 ")) {
                base = r;
            }
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %s | %d | %d | %.3f | %.2f | %d | %.2f | %s | %d |%n",
                    r.workload(),
                    r.setup(),
                    r.requests(),
                    r.failed(),
                    r.hitRatio(),
                    r.hitRatio() / base.hitRatio(),
                    r.p99Millis(),
                    (double) r.p99Millis() / base.p99Millis(),
                    r.perReplica().stream()
                            .map(String::valueOf)
                            .reduce((a, b) -> a + " · " + b)
                            .orElse(""),
                    r.leftInFlight());
        }
    }

    static Run run(
            Workload w,
            String setup,
            int proxies,
            String redisUrl,
            String stream,
            int replicas,
            long cacheTokens,
            double speedup,
            int clients,
            long seed,
            Path dir)
            throws Exception {
        List<SimulatedReplicaServer> sims = new ArrayList<>();
        List<Process> processes = new ArrayList<>();
        try {
            StringBuilder workers = new StringBuilder("workers:\n");
            for (int i = 0; i < replicas; i++) {
                SimulatedReplicaServer r = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("e2e-" + i)
                        .port(0)
                        .model("sim")
                        .cacheTokens(cacheTokens)
                        .speedup(speedup));
                sims.add(r);
                workers.append("  - url: ").append(r.baseUri()).append('\n');
            }
            List<URI> bases = new ArrayList<>();
            for (int p = 0; p < proxies; p++) {
                int port = RedisServerProcess.freePort();
                StringBuilder yaml = new StringBuilder("server:\n  host: 127.0.0.1\n  port: ")
                        .append(port)
                        .append("\n  max_threads: ")
                        .append(Math.max(64, 4 * clients))
                        .append("\ncache:\n  policy: cache_aware\n  eviction_interval_secs: 0\n  learn: on_route\n"
                                + "  feedback: true\nproxy:\n  max_retries: 0\n  decision_log: false\n")
                        .append(workers);
                if (redisUrl != null) {
                    yaml.append("cluster:\n  redis_url: \"")
                            .append(redisUrl)
                            .append("\"\n  stream: \"")
                            .append(stream)
                            .append("\"\n  instance_id: p")
                            .append(p)
                            .append('\n');
                }
                Path config = dir.resolve(stream.replace(':', '-') + "-p" + p + ".yaml");
                Files.writeString(config, yaml);
                Path javaBin = Path.of(System.getProperty("java.home"), "bin", "java");
                processes.add(new ProcessBuilder(
                                javaBin.toString(),
                                "-Xmx384m",
                                "-cp",
                                System.getProperty("java.class.path"),
                                "dev.cart.proxy.Main",
                                "-c",
                                config.toString())
                        .redirectErrorStream(true)
                        .redirectOutput(dir.resolve(stream.replace(':', '-') + "-p" + p + ".log")
                                .toFile())
                        .start());
                bases.add(URI.create("http://127.0.0.1:" + port));
            }
            HttpClient http = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(10))
                    .build();
            for (int p = 0; p < proxies; p++) {
                awaitUp(http, bases.get(p), processes.get(p));
            }
            if (redisUrl != null) {
                for (URI b : bases) { // every tailer and publisher connected before the first request
                    awaitMetric(http, b, "cart_cluster_connected", 1.0);
                }
            }
            Replay replay = new Replay(w, clients, bases, http, seed);
            long[] before = redisUrl == null ? new long[2] : redisCounts(redisUrl);
            long t0 = System.nanoTime();
            replay.run();
            double seconds = (System.nanoTime() - t0) / 1e9;
            long[] after = redisUrl == null ? new long[2] : redisCounts(redisUrl);
            long left = 0;
            for (URI b : bases) {
                left += awaitIdle(http, b);
            }
            List<Long> perReplica = new ArrayList<>();
            for (SimulatedReplicaServer r : sims) {
                perReplica.add(r.requestCount());
            }
            return new Run(
                    w.name(),
                    setup,
                    w.size(),
                    replay.failed.get(),
                    replay.prompt.get(),
                    replay.cached.get(),
                    replay.p99Millis(),
                    perReplica,
                    left,
                    seconds,
                    after[0] - before[0],
                    after[1] - before[1]);
        } finally {
            for (Process p : processes) {
                p.destroy();
            }
            for (Process p : processes) {
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            }
            for (SimulatedReplicaServer r : sims) {
                r.close();
            }
        }
    }

    /** Commands Redis has processed since it started, and PUBLISH calls among them. */
    private static long[] redisCounts(String url) {
        io.lettuce.core.RedisClient c = io.lettuce.core.RedisClient.create(url);
        try (var conn = c.connect()) {
            long total = 0;
            long publish = 0;
            for (String line : (conn.sync().info("stats") + "\n" + conn.sync().info("commandstats")).split("\r?\n")) {
                if (line.startsWith("total_commands_processed:")) {
                    total = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                } else if (line.startsWith("cmdstat_publish:calls=")) {
                    publish = Long.parseLong(line.substring(22, line.indexOf(',')));
                }
            }
            return new long[] {total, publish};
        } finally {
            c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    private static void awaitUp(HttpClient http, URI base, Process p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (true) {
            if (!p.isAlive()) {
                throw new IllegalStateException("a proxy process exited at start (code " + p.exitValue() + ")");
            }
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(base.resolve("/health")).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("a proxy did not answer /health within 120 s at " + base);
            }
            LockSupport.parkNanos(50_000_000);
        }
    }

    private static void awaitMetric(HttpClient http, URI base, String name, double value) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (PromText.parse(scrape(http, base)).sum(name) != value) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(name + " did not reach " + value + " at " + base);
            }
            LockSupport.parkNanos(20_000_000);
        }
    }

    /** Waits (bounded) for the proxy's in-flight to reach 0; returns what is left. */
    private static long awaitIdle(HttpClient http, URI base) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            long left = 0;
            JsonNode workers = Responses.JSON
                    .readTree(http.send(
                                    HttpRequest.newBuilder(base.resolve("/workers"))
                                            .GET()
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString())
                            .body())
                    .get("workers");
            for (JsonNode wk : workers) {
                left += wk.get("in_flight").asLong();
            }
            if (left == 0 || System.nanoTime() > deadline) {
                return left;
            }
            LockSupport.parkNanos(20_000_000);
        }
    }

    private static String scrape(HttpClient http, URI base) throws Exception {
        return http.send(
                        HttpRequest.newBuilder(base.resolve("/metrics")).GET().build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** {@link EndToEnd}'s closed loop and session rule; each request to a proxy drawn at random. */
    private static final class Replay {
        private final List<WorkloadRequest> requests;
        private final List<URI> bases;
        private final HttpClient http;
        private final SplittableRandom balancer;
        private final SessionLoop loop;
        final AtomicLong prompt = new AtomicLong();
        final AtomicLong cached = new AtomicLong();
        final AtomicInteger failed = new AtomicInteger();
        private final long[] latencyNanos;

        Replay(Workload w, int clients, List<URI> bases, HttpClient http, long seed) {
            this.requests = w.requests();
            this.bases = bases;
            this.http = http;
            this.balancer = new SplittableRandom(seed * 31 + 7);
            this.loop = new SessionLoop(requests, clients, this::send);
            this.latencyNanos = new long[requests.size()];
            Arrays.fill(latencyNanos, -1);
        }

        void run() throws InterruptedException {
            loop.run();
        }

        long p99Millis() {
            long[] l = Arrays.stream(latencyNanos).filter(x -> x >= 0).sorted().toArray();
            return l.length == 0 ? -1 : l[(int) Math.ceil(0.99 * l.length) - 1] / 1_000_000;
        }

        /** Called with the lock held (the balancer's draws are in a fixed order for a given run). */
        private void send(int i) {
            WorkloadRequest r = requests.get(i);
            URI base = bases.get(balancer.nextInt(bases.size()));
            HttpRequest req = HttpRequest.newBuilder(base.resolve(r.endpoint().path()))
                    .timeout(Duration.ofMinutes(5))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(r.body("sim", false)))
                    .build();
            long t0 = System.nanoTime();
            var unused = http.sendAsync(req, HttpResponse.BodyHandlers.ofString())
                    .whenComplete((resp, err) -> {
                        try {
                            if (err != null || resp.statusCode() != 200 || !count(resp.body())) {
                                System.err.println(
                                        "E2EFAIL " + (err != null ? err : resp.statusCode() + " " + resp.body()));
                                failed.incrementAndGet();
                            } else {
                                latencyNanos[i] = System.nanoTime() - t0;
                            }
                        } finally {
                            loop.finished(i);
                        }
                    });
        }

        private boolean count(String body) {
            try {
                JsonNode usage = Responses.JSON.readTree(body).get("usage");
                if (usage == null || !usage.has("prompt_tokens")) {
                    return false;
                }
                prompt.addAndGet(usage.get("prompt_tokens").asLong());
                cached.addAndGet(usage.path("prompt_tokens_details")
                        .path("cached_tokens")
                        .asLong());
                return true;
            } catch (IOException e) {
                return false;
            }
        }
    }
}
