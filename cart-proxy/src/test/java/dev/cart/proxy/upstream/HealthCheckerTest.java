package dev.cart.proxy.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.proxy.config.ProxyConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * How often the health checker asks a replica for its models, and when it probes a pool: driven by
 * {@link HealthChecker#probeAll()} (one cycle of every replica) and a scheduler that records the delays it is
 * given instead of waiting, against one real HTTP server standing for several workers (base URLs
 * {@code /b/K}).
 */
class HealthCheckerTest {

    /** One HTTP server answering {@code /b/K/health} and {@code /b/K/v1/models}, counting both per K. */
    static final class Pool implements AutoCloseable {
        final HttpServer server;
        final ConcurrentHashMap<Integer, AtomicInteger> health = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Integer, AtomicInteger> models = new ConcurrentHashMap<>();
        volatile int healthStatus = 200;
        volatile List<String> listed = List.of("base");

        Pool() throws IOException {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
            server.setExecutor(Executors.newFixedThreadPool(2, r -> {
                Thread t = new Thread(r, "pool-replica");
                t.setDaemon(true);
                return t;
            }));
            server.createContext("/", this::handle);
            server.start();
        }

        private void handle(HttpExchange ex) throws IOException {
            String[] parts = ex.getRequestURI().getPath().split("/", 4); // "", "b", K, rest
            int k = Integer.parseInt(parts[2]);
            String rest = "/" + parts[3];
            ex.getRequestBody().readAllBytes();
            if (rest.equals("/health")) {
                health.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
                ex.sendResponseHeaders(healthStatus, -1);
            } else if (rest.equals("/v1/models")) {
                models.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
                StringBuilder b = new StringBuilder("{\"object\":\"list\",\"data\":[");
                for (int i = 0; i < listed.size(); i++) {
                    b.append(i == 0 ? "" : ",")
                            .append("{\"id\":\"")
                            .append(listed.get(i))
                            .append("\"}");
                }
                byte[] body = b.append("]}").toString().getBytes(StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("Content-Type", "application/json");
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
            } else {
                ex.sendResponseHeaders(404, -1);
            }
            ex.close();
        }

        String url(int k) {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/b/" + k;
        }

        int healthCalls(int k) {
            AtomicInteger n = health.get(k);
            return n == null ? 0 : n.get();
        }

        int modelsCalls(int k) {
            AtomicInteger n = models.get(k);
            return n == null ? 0 : n.get();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    /** A scheduler that records each delay it is given and runs nothing (a day later at the soonest). */
    static final class RecordingScheduler extends ScheduledThreadPoolExecutor {
        final List<Long> delaysMs = new CopyOnWriteArrayList<>();

        RecordingScheduler() {
            super(1);
            setRemoveOnCancelPolicy(true);
        }

        @Override
        public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
            delaysMs.add(unit.toMillis(delay));
            return super.schedule(command, 1, TimeUnit.DAYS);
        }
    }

    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient client = UpstreamHttpClient.create(Duration.ofSeconds(5));

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private Pool pool() throws IOException {
        Pool p = new Pool();
        open.add(p);
        return p;
    }

    private RecordingScheduler scheduler() {
        RecordingScheduler s = new RecordingScheduler();
        open.add(s::shutdownNow);
        return s;
    }

    private static ManagedReplicaSet set(Pool pool, int n) {
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder().health(new ManagedReplicaSet.HealthConfig(3, 2));
        for (int k = 0; k < n; k++) {
            b.add(ReplicaSpec.of(pool.url(k)));
        }
        return b.build();
    }

    private static Set<String> ids(ManagedReplicaSet set) {
        Set<String> ids = new HashSet<>();
        set.replicas().forEach(m -> ids.add(m.id()));
        return ids;
    }

    private static ProxyConfig.Health health(int intervalSecs, int modelsIntervalSecs) {
        return new ProxyConfig.Health("/health", intervalSecs, 5, 3, 2, modelsIntervalSecs);
    }

    private HealthChecker checker(ManagedReplicaSet set, ProxyConfig.Health config, HealthChecker previous) {
        HealthChecker c = new HealthChecker(set, client, config, scheduler(), ids(set), previous);
        open.add(c);
        return c;
    }

    @Test
    void modelsAreAskedAtTheFirstGoodProbeThenOncePerModelsInterval() throws Exception {
        Pool pool = pool();
        ManagedReplicaSet set = set(pool, 3);
        HealthChecker c = checker(set, health(1, 5), null); // 5 good probes per models request
        for (int i = 0; i < 20; i++) {
            c.probeAll().get();
        }
        for (int k = 0; k < 3; k++) {
            assertEquals(20, pool.healthCalls(k));
            assertEquals(4, pool.modelsCalls(k), "probes 1, 6, 11 and 16 ask the models of worker " + k);
        }
        assertEquals(Set.of("base"), set.replicas().get(0).models());
        assertEquals(5, HealthChecker.probesPerModels(health(2, 9)), "9 s over 2 s, rounded up");
        assertEquals(1, HealthChecker.probesPerModels(health(10, 1)), "at every probe at the least");
    }

    @Test
    void aChangedModelListIsSeenWithinTheModelsInterval() throws Exception {
        Pool pool = pool();
        ManagedReplicaSet set = set(pool, 1);
        ManagedReplicaSet.Member m = set.replicas().get(0);
        HealthChecker c = checker(set, health(10, 40), null); // every 4th good probe
        c.probeAll().get();
        assertEquals(Set.of("base"), m.models());
        pool.listed = List.of("base", "base-sql"); // an adapter loaded
        for (int i = 0; i < 3; i++) {
            c.probeAll().get();
            assertEquals(Set.of("base"), m.models(), "not asked again yet, probe " + (i + 2));
        }
        c.probeAll().get();
        assertEquals(Set.of("base", "base-sql"), m.models(), "seen at the 4th good probe after the last request");
        assertEquals(2, pool.modelsCalls(0));
    }

    @Test
    void aReplicaBackFromAFailedProbeHasItsModelsAskedAtOnce() throws Exception {
        Pool pool = pool();
        ManagedReplicaSet set = set(pool, 1);
        ManagedReplicaSet.Member m = set.replicas().get(0);
        HealthChecker c = checker(set, health(1, 3600), null);
        c.probeAll().get();
        c.probeAll().get();
        assertEquals(1, pool.modelsCalls(0));
        pool.healthStatus = 503; // restarting
        c.probeAll().get();
        assertEquals(1, pool.modelsCalls(0), "a failed probe asks nothing more");
        pool.healthStatus = 200;
        pool.listed = List.of("other");
        c.probeAll().get();
        assertEquals(2, pool.modelsCalls(0), "back: its models are asked at its first good probe");
        assertEquals(Set.of("other"), m.models());
    }

    @Test
    void aReloadKeepsEachKeptReplicasModelsCadence() throws Exception {
        Pool pool = pool();
        ManagedReplicaSet set = set(pool, 2);
        HealthChecker first = checker(set, health(1, 60), null);
        first.probeAll().get();
        first.close();
        // the same pool again (a reload keeps every member): their models were just asked
        HealthChecker next = checker(set, health(1, 60), first);
        for (int i = 0; i < 10; i++) {
            next.probeAll().get();
        }
        assertEquals(1, pool.modelsCalls(0));
        assertEquals(1, pool.modelsCalls(1));
        // a worker whose models were configured before the reload (not discovered) is asked at once
        HealthChecker firstOfOne = new HealthChecker(set, client, health(1, 60), scheduler(), Set.of(), null);
        open.add(firstOfOne);
        firstOfOne.probeAll().get();
        HealthChecker nowDiscovered = checker(set, health(1, 60), firstOfOne);
        nowDiscovered.probeAll().get();
        assertEquals(2, pool.modelsCalls(0));
    }

    @Test
    void unknownReplicasAreProbedAtOnceAndAKeptPoolIsSpreadOverTheInterval() throws Exception {
        Pool pool = pool();
        ManagedReplicaSet set = set(pool, 4);
        RecordingScheduler atStart = scheduler();
        HealthChecker first = new HealthChecker(set, client, health(1, 60), atStart, ids(set), null);
        open.add(first);
        first.start();
        assertEquals(List.of(0L, 0L, 0L, 0L), atStart.delaysMs, "unknown until probed: probed at once");
        first.probeAll().get();
        first.close();

        RecordingScheduler atReload = scheduler();
        HealthChecker next = new HealthChecker(set, client, health(1, 60), atReload, ids(set), first);
        open.add(next);
        next.start();
        assertEquals(
                List.of(0L, 250L, 500L, 750L),
                atReload.delaysMs,
                "a reload of the same pool spreads its probes over the interval instead of all at once");
    }
}
