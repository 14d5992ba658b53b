package dev.cart.examples.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.gateway.CartGatewayRouting;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.Workload;
import dev.cart.sim.WorkloadRequest;
import dev.cart.sim.Workloads;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The hit ratio of a workload replayed through the example gateway over HTTP, in front of simulated vLLM
 * replicas running as HTTP servers: through the CART route ({@code lb://llm}) and, on the same gateway and the
 * same kind of fresh replicas, through the gateway's default round robin ({@code lb://llm-rr}). The replay rules
 * and settings are those of the standalone proxy's end-to-end comparison ({@code docs/end-to-end.md}): 4 replicas
 * of 150,000 cache tokens, engine time 100x faster than the modelled GPU, a closed loop of 64 clients, a chat
 * turn waits for its user's previous turn, hit ratio = sum of {@code cached_tokens} / sum of {@code prompt_tokens}
 * as the replicas reported them; CART learns on route, feedback on, eviction off. Not run by the test suite:
 *
 * <pre>
 * java -cp ... dev.cart.examples.gateway.GatewayEndToEnd [--seed N] [--stream]
 * </pre>
 */
final class GatewayEndToEnd {

    private static final ObjectMapper JSON = new ObjectMapper();

    record Run(
            String workload,
            String route,
            int requests,
            int failed,
            long prompt,
            long cached,
            double seconds,
            Map<String, Long> perReplica,
            int leftInFlight) {
        double hitRatio() {
            return prompt == 0 ? 0 : (double) cached / prompt;
        }
    }

    private GatewayEndToEnd() {}

    public static void main(String[] args) throws Exception {
        long seed = 1;
        boolean stream = false;
        int replicas = 4;
        long cacheTokens = 150_000;
        double speedup = 100;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--seed" -> seed = Long.parseLong(args[++i]);
                case "--stream" -> stream = true;
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        int clients = 16 * replicas;
        List<Workload> workloads = List.of(Workloads.rag(seed, replicas * cacheTokens), Workloads.multiTurn(seed));
        List<Run> runs = new ArrayList<>();
        for (Workload w : workloads) {
            for (String route : List.of("round_robin", "cart")) {
                Run r = run(w, route, replicas, cacheTokens, speedup, clients, stream);
                runs.add(r);
                System.out.printf(
                        Locale.ROOT,
                        "%s via %s: hit ratio %.3f, %d failed, %.1f s, per replica %s, left in flight %d%n",
                        r.workload(),
                        r.route(),
                        r.hitRatio(),
                        r.failed(),
                        r.seconds(),
                        r.perReplica(),
                        r.leftInFlight());
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%nseed %d, %d replicas of %,d cache tokens, %d clients (closed loop), speedup %.0f, %s, Java %s%n%n",
                seed,
                replicas,
                cacheTokens,
                clients,
                speedup,
                stream ? "streamed" : "not streamed",
                Runtime.version());
        System.out.println("| workload | gateway balancer | requests | hit ratio over HTTP | failed | run (s) |");
        System.out.println("|---|---|---:|---:|---:|---:|");
        for (Run r : runs) {
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %s | %d | %.3f | %d | %.1f |%n",
                    r.workload(),
                    r.route().equals("cart") ? "CART (cache_aware)" : "default round robin",
                    r.requests(),
                    r.hitRatio(),
                    r.failed(),
                    r.seconds());
        }
        System.exit(0);
    }

    /** Fresh replicas and a fresh gateway; the workload through one route. */
    static Run run(
            Workload w, String route, int replicas, long cacheTokens, double speedup, int clients, boolean stream)
            throws Exception {
        List<SimulatedReplicaServer> sims = new ArrayList<>();
        ConfigurableApplicationContext gateway = null;
        try {
            List<String> props = new ArrayList<>(List.of(
                    "--server.port=0",
                    "--cart.eviction-interval-secs=0",
                    "--cart.learn=on_route",
                    "--cart.feedback=true",
                    "--logging.level.root=WARN",
                    "--spring.main.banner-mode=off"));
            for (int i = 0; i < replicas; i++) {
                SimulatedReplicaServer r = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("e2e-" + i)
                        .port(0)
                        .model("sim")
                        .cacheTokens(cacheTokens)
                        .speedup(speedup));
                sims.add(r);
                for (String service : List.of("llm", "llm-rr")) {
                    props.add("--spring.cloud.discovery.client.simple.instances." + service + "[" + i + "].uri="
                            + r.baseUri());
                }
            }
            gateway = SpringApplication.run(GatewayExample.class, props.toArray(String[]::new));
            int port = Integer.parseInt(gateway.getEnvironment().getProperty("local.server.port"));
            String prefix = route.equals("cart") ? "" : "/rr";
            Run run = new Replay(w, route, URI.create("http://127.0.0.1:" + port + prefix), clients, stream).run();
            CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (routing.inFlight("llm") != 0 && System.nanoTime() < deadline) {
                LockSupport.parkNanos(2_000_000); // bounded wait for the last leases to close
            }
            Map<String, Long> reasons = new TreeMap<>();
            for (var c : gateway.getBean(io.micrometer.core.instrument.MeterRegistry.class)
                    .find("cart.decisions")
                    .counters()) {
                reasons.merge(c.getId().getTag("reason"), (long) c.count(), Long::sum);
            }
            System.out.println(w.name() + " via " + route + ": decisions by reason " + reasons);
            Map<String, Long> perReplica = new TreeMap<>();
            for (SimulatedReplicaServer s : sims) {
                perReplica.put(s.name(), s.requestCount());
            }
            return new Run(
                    run.workload(),
                    route,
                    run.requests(),
                    run.failed(),
                    run.prompt(),
                    run.cached(),
                    run.seconds(),
                    perReplica,
                    routing.inFlight("llm"));
        } finally {
            if (gateway != null) {
                gateway.close();
            }
            for (SimulatedReplicaServer r : sims) {
                r.close();
            }
        }
    }

    /** The closed-loop replay: {@code clients} requests out at once, a chat user's turns one after another. */
    private static final class Replay {
        private final List<WorkloadRequest> requests;
        private final Workload w;
        private final String route;
        private final URI base;
        private final int clients;
        private final boolean stream;
        private final HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        private final CountDownLatch done;
        private final Map<String, ArrayDeque<Integer>> waiting = new HashMap<>();
        private final Map<String, Boolean> busy = new HashMap<>();
        private final AtomicLong prompt = new AtomicLong();
        private final AtomicLong cached = new AtomicLong();
        private final AtomicInteger failed = new AtomicInteger();
        private int next;

        Replay(Workload w, String route, URI base, int clients, boolean stream) {
            this.w = w;
            this.requests = w.requests();
            this.route = route;
            this.base = base;
            this.clients = clients;
            this.stream = stream;
            this.done = new CountDownLatch(requests.size());
        }

        Run run() throws InterruptedException {
            long t0 = System.nanoTime();
            synchronized (this) {
                for (next = 0; next < Math.min(clients, requests.size()); next++) {
                    arrive(next);
                }
            }
            if (!done.await(30, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the replay did not finish");
            }
            return new Run(
                    w.name(),
                    route,
                    requests.size(),
                    failed.get(),
                    prompt.get(),
                    cached.get(),
                    (System.nanoTime() - t0) / 1e9,
                    Map.of(),
                    0);
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
