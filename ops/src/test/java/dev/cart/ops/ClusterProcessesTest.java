package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.sim.KvEventOptions;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Several proxy processes route as one through a real {@code redis-server}: three proxy JVMs (the
 * {@code cart-proxy} launcher, each with the same {@code cluster} section) in front of four simulated replicas
 * that tokenize the prompt and hash their own blocks (the independent replica: what they cache is not what
 * the router's key calls shared), a multi-turn replay whose every request goes to a proxy drawn at random,
 * as a plain L4 balancer sends it, so a conversation's next turn usually reaches a proxy that did not route
 * the one before.
 *
 * <p>Asserted: the replica-measured hit ratio of the three together (Σ cached over Σ prompt tokens from the
 * answers' usage) is at least 0.95× that of one proxy process on the same requests in the same run (fresh
 * replicas for each); and with Redis killed (SIGKILL) while a second replay is in flight and started again
 * on the same port while it still runs, every request is answered 200. Without route sync the three fall
 * well below the bound (checked by hand, figures in docs/end-to-end.md, "In the suite"), so the first
 * assertion cannot hold by the shared system prompt alone: the conversations' own histories carry most of
 * the tokens.
 */
class ClusterProcessesTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "sim-llama-3.1-8b";
    private static final int REPLICAS = 4;
    private static final int PROXIES = 3;
    /**
     * Clients in the closed loop: each owns eight conversations, so a conversation's next turn is sent after
     * its client's seven other requests, as a user reads an answer before asking again (a route learned by one
     * proxy has a few hundred milliseconds to reach the others, not the client's next breath).
     */
    private static final int CLIENTS = 4;
    /** Small conversations whose histories, not a shared system prompt, carry most of the prompt tokens. */
    private static final Workloads.ChatSpec CHATS = new Workloads.ChatSpec(32, 4, 32, 32, 160, 64, 192);

    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    @Test
    @Timeout(value = 8, unit = TimeUnit.MINUTES)
    void threeProxiesOnOneRedisKeepOneProxysHitRatioAndLoseNoRequestWhenRedisDies() throws Exception {
        Path dir = Files.createDirectories(Tools.opsDir().resolve("target/cluster"));
        Workload workload = Workloads.multiTurn(11, CHATS);

        Result one;
        List<SimulatedReplicaServer> sims = replicas();
        try (ProxyProcess solo = ProxyProcess.start("solo", dir, config("solo", sims, null))) {
            awaitHealthy(solo);
            one = replay(workload, List.of(uri(solo)), i -> {});
        } finally {
            close(sims);
        }
        assertEquals(0, one.failed(), "one proxy: " + one);

        sims = replicas();
        LocalRedis redis = LocalRedis.start(dir);
        List<ProxyProcess> proxies = new ArrayList<>();
        try {
            for (int i = 0; i < PROXIES; i++) {
                proxies.add(ProxyProcess.start("member-" + i, dir, config("member-" + i, sims, redis)));
            }
            List<URI> targets = new ArrayList<>();
            for (ProxyProcess p : proxies) {
                awaitHealthy(p);
                targets.add(uri(p));
            }
            Result three = replay(workload, targets, i -> {});
            System.out.printf(
                    "cluster test: hit ratio one proxy %.3f (%d requests), three through Redis %.3f (%.2fx)%n",
                    one.hitRatio(), one.answered(), three.hitRatio(), three.hitRatio() / one.hitRatio());
            assertEquals(0, three.failed(), "three proxies: " + three);
            assertTrue(
                    three.hitRatio() >= 0.95 * one.hitRatio(),
                    String.format(
                            "three proxies through Redis keep one proxy's hit ratio: %.3f against %.3f (%.2fx)",
                            three.hitRatio(), one.hitRatio(), three.hitRatio() / one.hitRatio()));

            // Redis dies a third of the way through a second replay and comes back at two thirds
            Workload second = Workloads.multiTurn(12, CHATS);
            int total = second.requests().size();
            int redisPort = redis.port;
            LocalRedis[] current = {redis};
            ConcurrentLinkedQueue<Throwable> faultErrors = new ConcurrentLinkedQueue<>();
            AtomicInteger phase = new AtomicInteger();
            Result faulted = replay(second, targets, done -> {
                try {
                    if (done >= total / 3 && phase.compareAndSet(0, 1)) {
                        current[0].kill();
                    } else if (done >= 2 * total / 3 && phase.compareAndSet(1, 2)) {
                        current[0] = LocalRedis.start(dir, redisPort);
                    }
                } catch (IOException | InterruptedException | AssertionError e) {
                    faultErrors.add(e);
                }
            });
            redis = current[0];
            assertEquals(List.of(), List.copyOf(faultErrors), "the fault itself");
            assertEquals(2, phase.get(), "Redis was killed and started again during the replay");
            assertEquals(0, faulted.failed(), "with Redis killed mid-run: " + faulted);
            assertEquals(total, faulted.answered(), "every request answered: " + faulted);
        } finally {
            for (ProxyProcess p : proxies) {
                p.close();
            }
            redis.close();
            close(sims);
        }
    }

    /** What one replay measured: requests answered 200, failed, and the replicas' token counts. */
    record Result(int answered, int failed, long prompt, long cached) {
        double hitRatio() {
            return prompt == 0 ? 0 : (double) cached / prompt;
        }
    }

    /**
     * Sends {@code workload} in a closed loop of {@link #CLIENTS} clients: a user's turns in order, each after
     * the one before has been answered; each request to a proxy drawn from a generator seeded by the request,
     * so every run draws the same. {@code onDone} hears the number of requests finished after each.
     */
    private Result replay(Workload workload, List<URI> proxies, IntConsumer onDone) throws InterruptedException {
        Map<String, List<WorkloadRequest>> bySession = new LinkedHashMap<>();
        for (WorkloadRequest r : workload.requests()) {
            bySession.computeIfAbsent(r.session(), k -> new ArrayList<>()).add(r);
        }
        List<List<WorkloadRequest>> sessions = new ArrayList<>(bySession.values());
        AtomicInteger answered = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicLong prompt = new AtomicLong();
        AtomicLong cached = new AtomicLong();
        List<Thread> clients = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            int client = c;
            Thread t = new Thread(
                    () -> {
                        int rounds =
                                sessions.stream().mapToInt(List::size).max().orElse(0);
                        for (int round = 0; round < rounds; round++) {
                            for (int s = client; s < sessions.size(); s += CLIENTS) {
                                List<WorkloadRequest> turns = sessions.get(s);
                                if (round >= turns.size()) {
                                    continue;
                                }
                                URI proxy =
                                        proxies.get(new SplittableRandom(s * 1_000L + round).nextInt(proxies.size()));
                                JsonNode usage = send(proxy, turns.get(round));
                                if (usage == null) {
                                    failed.incrementAndGet();
                                } else {
                                    answered.incrementAndGet();
                                    prompt.addAndGet(usage.path("prompt_tokens").asLong());
                                    cached.addAndGet(usage.path("prompt_tokens_details")
                                            .path("cached_tokens")
                                            .asLong());
                                }
                                onDone.accept(done.incrementAndGet());
                            }
                        }
                    },
                    "client-" + c);
            t.start();
            clients.add(t);
        }
        for (Thread t : clients) {
            t.join();
        }
        return new Result(answered.get(), failed.get(), prompt.get(), cached.get());
    }

    /** The answer's usage, or null when the request failed (not 200, or no answer). */
    private JsonNode send(URI proxy, WorkloadRequest r) {
        try {
            HttpResponse<byte[]> resp = http.send(
                    HttpRequest.newBuilder(proxy.resolve("/v1/chat/completions"))
                            .timeout(Duration.ofSeconds(60))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofByteArray(r.body(MODEL, false)))
                            .build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            if (resp.statusCode() != 200) {
                System.err.println("cluster test: " + resp.statusCode() + " from " + proxy);
                return null;
            }
            return JSON.readTree(resp.body()).path("usage");
        } catch (IOException e) {
            System.err.println("cluster test: no answer from " + proxy + ": " + e);
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static List<SimulatedReplicaServer> replicas() throws IOException {
        List<SimulatedReplicaServer> out = new ArrayList<>();
        for (int i = 0; i < REPLICAS; i++) {
            out.add(SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                    .name("sim-" + i)
                    .port(0)
                    .model(MODEL)
                    .speedup(50)
                    // real tokens and the replica's own block hashes (its KV events go unread here)
                    .kvEvents(KvEventOptions.defaults())));
        }
        return out;
    }

    private static void close(List<SimulatedReplicaServer> sims) {
        sims.forEach(SimulatedReplicaServer::close);
    }

    private static String config(String name, List<SimulatedReplicaServer> sims, LocalRedis redis) {
        StringBuilder y = new StringBuilder("workers:\n");
        for (SimulatedReplicaServer s : sims) {
            String u = s.baseUri().toString();
            y.append("  - url: \"")
                    .append(u.endsWith("/") ? u.substring(0, u.length() - 1) : u)
                    .append("\"\n");
        }
        y.append("proxy:\n  decision_log: false\n");
        if (redis != null) {
            y.append("cluster:\n  redis_url: \"")
                    .append(redis.uri())
                    .append("\"\n  stream: \"cart:cluster-test\"\n  instance_id: \"")
                    .append(name)
                    .append("\"\n");
        }
        return y.toString();
    }

    /** Waits until the proxy's {@code /health} answers 200 (its replicas probed healthy). */
    private void awaitHealthy(ProxyProcess p) throws InterruptedException {
        p.process.awaitReady("healthy", 60, () -> {
            try {
                return http.send(
                                        HttpRequest.newBuilder(uri(p).resolve("/health"))
                                                .timeout(Duration.ofSeconds(5))
                                                .build(),
                                        HttpResponse.BodyHandlers.discarding())
                                .statusCode()
                        == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        });
    }

    private static URI uri(ProxyProcess p) {
        return URI.create("http://" + p.target());
    }
}
