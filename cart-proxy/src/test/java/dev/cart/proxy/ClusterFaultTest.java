package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.sync.RouteEvent;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.redis.RedisServerProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two clustered proxies under steady load (four client threads spread over both) while their Redis is
 * killed, restarted empty, frozen (SIGSTOP: every command unanswered, as under {@code DEBUG SLEEP}) and
 * write-paused ({@code CLIENT PAUSE WRITE}). Routing reads local memory only, so in every phase requests
 * keep completing while Redis is away or silent (asserted by state: a number of answers arrives while
 * Redis is still down or frozen, whatever the machine's speed); no request fails; in-flight returns to 0
 * on both; and once Redis is back the proxies share routes again: a turn 2 sent to the other proxy lands
 * where turn 1 went, counted there as a hit on a route learned elsewhere.
 */
class ClusterFaultTest {

    private static final int CLIENTS = 4;
    /** Answers each proxy must give in a phase (while Redis is down, frozen or write-paused). */
    private static final int PER_PHASE = 15;

    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    /** The load: client threads, each sending to the two proxies in turn, counting answers and failures. */
    private final class Load implements AutoCloseable {
        final ProxyServer[] proxies;
        final AtomicLong[] answered = {new AtomicLong(), new AtomicLong()};
        final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        final List<Thread> threads = new ArrayList<>();
        volatile boolean stop;

        Load(ProxyServer one, ProxyServer two) {
            this.proxies = new ProxyServer[] {one, two};
            for (int c = 0; c < CLIENTS; c++) {
                SplittableRandom random = new SplittableRandom(c);
                int first = c % 2;
                Thread t = new Thread(() -> run(random, first), "load-" + c);
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
        }

        private void run(SplittableRandom random, int first) {
            for (long n = first; !stop; n++) {
                int p = (int) (n % 2);
                int user = random.nextInt(40);
                String body = random.nextBoolean() ? ClusterProxyTest.turn1(user) : ClusterProxyTest.turn2(user);
                try {
                    HttpResponse<String> r = post(proxies[p], body);
                    if (r.statusCode() != 200) {
                        failures.add("proxy " + p + ": HTTP " + r.statusCode() + " " + r.body());
                    }
                } catch (Exception e) {
                    failures.add("proxy " + p + ": " + e);
                }
                answered[p].incrementAndGet();
            }
        }

        /** Waits until each proxy has given {@code n} more answers. */
        void awaitAnswers(String phase, int n) {
            long a = answered[0].get() + n;
            long b = answered[1].get() + n;
            await(
                    phase + ": " + n + " more answers from each proxy",
                    () -> answered[0].get() >= a && answered[1].get() >= b);
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            for (Thread t : threads) {
                t.join(60_000);
            }
        }
    }

    @Test
    void redisKilledRestartedFrozenAndPausedUnderLoadFailsNoRequestAndTheProxiesConvergeAgain() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        List<ScriptedReplica> replicas = new ArrayList<>();
        for (String n : List.of("a", "b", "c")) {
            ScriptedReplica r = ScriptedReplica.start(n);
            replicas.add(r);
            open.add(r);
        }
        ProxyServer one = proxy(replicas, redis.uri(), "one");
        ProxyServer two = proxy(replicas, redis.uri(), "two");
        await("both connected", () -> connected(one) && connected(two));

        Load load = new Load(one, two);
        open.add(load);
        load.awaitAnswers("Redis up", PER_PHASE);

        redis.kill();
        await("both see Redis gone", () -> !connected(one) && !connected(two));
        load.awaitAnswers("Redis killed", PER_PHASE);
        assertTrue(!connected(one) && !connected(two), "Redis still down while those were answered");

        redis.restart(); // empty, as after a crash without persistence
        await("both reconnected", () -> connected(one) && connected(two));
        load.awaitAnswers("Redis restarted", PER_PHASE);

        redis.pause();
        try {
            load.awaitAnswers("Redis frozen", PER_PHASE);
        } finally {
            redis.resume();
        }

        RedisClient admin = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> c = admin.connect()) {
            // CLIENT PAUSE ... WRITE (Lettuce's clientPause has no mode): writes held, reads served, and
            // the UNPAUSE below is not held
            String paused = c.sync()
                    .dispatch(
                            CommandType.CLIENT,
                            new StatusOutput<>(StringCodec.UTF8),
                            new CommandArgs<>(StringCodec.UTF8)
                                    .add("PAUSE")
                                    .add(600_000)
                                    .add("WRITE"));
            assertEquals("OK", paused);
            try {
                load.awaitAnswers("Redis write-paused", PER_PHASE);
            } finally {
                c.sync()
                        .dispatch(
                                CommandType.CLIENT,
                                new StatusOutput<>(StringCodec.UTF8),
                                new CommandArgs<>(StringCodec.UTF8).add("UNPAUSE"));
            }
        } finally {
            admin.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }

        load.close();
        assertEquals(List.of(), List.copyOf(load.failures), "no request failed because of Redis");
        for (ProxyServer p : List.of(one, two)) {
            await("in-flight back to 0", () -> p.routing().replicas.totalInFlight() == 0);
        }
        await("both connected again", () -> connected(one) && connected(two));

        // converged: routes learned on one after the faults reach two, and turn 2 follows turn 1
        int conversations = 6;
        List<String> first = new ArrayList<>();
        for (int u = 100; u < 100 + conversations; u++) {
            HttpResponse<String> r = post(one, ClusterProxyTest.turn1(u));
            assertEquals(200, r.statusCode(), r.body());
            first.add(r.headers().firstValue("x-routed-peer").orElseThrow());
        }
        await("in-flight back to 0 on one", () -> one.routing().replicas.totalInFlight() == 0);
        // a marker written after those routes: once two has read it, it has read them (one stream, in order)
        long unknownBefore = two.routing().router.remoteApplyStats().unknownReplica();
        var sync = one.cluster().sync();
        sync.publish(new RouteEvent.ReplicaRemoved(sync.originId(), System.currentTimeMillis(), "marker"));
        await(
                "two read one's marker",
                () -> two.routing().router.remoteApplyStats().unknownReplica() > unknownBefore);
        double elsewhere = metricValue(two, "cart_cluster_hits_learned_elsewhere_total");
        for (int i = 0; i < conversations; i++) {
            HttpResponse<String> r = post(two, ClusterProxyTest.turn2(100 + i));
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(
                    first.get(i),
                    r.headers().firstValue("x-routed-peer").orElseThrow(),
                    "turn 2 of conversation " + i + " on the other proxy");
        }
        assertEquals(elsewhere + conversations, metricValue(two, "cart_cluster_hits_learned_elsewhere_total"));
        assertEquals(0.0, metricValue(one, "cart_cluster_entries_malformed_total"));
        assertEquals(0.0, metricValue(two, "cart_cluster_entries_malformed_total"));
        for (ProxyServer p : List.of(one, two)) {
            await("in-flight back to 0", () -> p.routing().replicas.totalInFlight() == 0);
        }
    }

    private ProxyServer proxy(List<ScriptedReplica> replicas, String redisUrl, String id) throws Exception {
        ProxyServer p = ProxyServer.start(
                ConfigLoader.parse(ClusterProxyTest.clusterConfig(replicas, redisUrl, "cart:faults", id)),
                new ProxyServer.Options().healthChecks(false));
        open.add(p);
        return p;
    }

    private HttpResponse<String> post(ProxyServer p, String body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/v1/chat/completions"))
                        .timeout(Duration.ofSeconds(60))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private boolean connected(ProxyServer p) {
        return metricValue(p, "cart_cluster_connected") == 1.0;
    }

    /** One sample's value from the proxy's /metrics (NaN when absent). */
    private double metricValue(ProxyServer p, String name) {
        try {
            String text = http.send(
                            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/metrics"))
                                    .GET()
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
            for (String line : text.split("\n")) {
                if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                    return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return Double.NaN;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
