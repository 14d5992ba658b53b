package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.upstream.HealthChecker;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A pool of a few hundred workers (base URLs of two loopback servers) probed every second by the proxy's own
 * health checks: the proxy's threads do not grow with the pool, at start or at a reload of the same pool.
 * Waits for states (every worker probed healthy, every worker probed again after the reload), never for a
 * time; the slack allows for the JVM's and the proxy's own threads.
 */
class LargePoolTest {

    private static final int SERVERS = 2;
    private static final int PATHS = 150;
    /** Threads the proxy may add, whatever the pool: event loops, scheduler, maintenance, log, HTTP client. */
    private static final int SLACK = 40;

    @Test
    void aPoolOfThreeHundredWorkersAndAReloadOfItAddNoThreadPerWorker() throws Exception {
        AtomicLong probes = new AtomicLong();
        List<HttpServer> servers = new ArrayList<>();
        ExecutorService serverThreads = Executors.newFixedThreadPool(2);
        Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
        ProxyServer proxy = null;
        try {
            List<String> urls = new ArrayList<>();
            for (int s = 0; s < SERVERS; s++) {
                HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
                server.setExecutor(serverThreads);
                server.createContext("/", ex -> {
                    ex.getRequestBody().readAllBytes();
                    byte[] body = ex.getRequestURI().getPath().endsWith("/v1/models")
                            ? "{\"object\":\"list\",\"data\":[{\"id\":\"m\"}]}".getBytes(StandardCharsets.UTF_8)
                            : new byte[0];
                    if (body.length == 0) {
                        probes.incrementAndGet();
                    }
                    ex.sendResponseHeaders(200, body.length == 0 ? -1 : body.length);
                    ex.getResponseBody().write(body);
                    ex.close();
                });
                server.start();
                servers.add(server);
                for (int k = 0; k < PATHS; k++) {
                    urls.add("http://127.0.0.1:" + server.getAddress().getPort() + "/b/" + k);
                }
            }
            proxy = ProxyServer.start(ConfigLoader.parse(yaml(urls)), new ProxyServer.Options().healthChecks(true));
            ProxyServer p = proxy;
            int workers = urls.size();
            ProxyHarness.await(
                    "every worker probed healthy",
                    () -> p.routing().health.count(HealthChecker.State.HEALTHY) == workers);
            int atStart = newThreads(before);
            assertTrue(atStart <= SLACK, "the proxy started " + atStart + " threads for " + workers + " workers");

            Collections.reverse(urls); // the same pool, an accepted reload: a new replica set and health checker
            ProxyConfig fresh = ConfigLoader.parse(yaml(urls));
            assertTrue(proxy.reload(fresh).changed());
            long probesAtReload = probes.get();
            ProxyHarness.await(
                    "every worker probed twice since the reload",
                    () -> probes.get() >= probesAtReload + 2L * workers
                            && p.routing().health.count(HealthChecker.State.HEALTHY) == workers);
            int afterReload = newThreads(before);
            assertTrue(
                    afterReload <= SLACK,
                    "after a reload of " + workers + " workers the proxy has " + afterReload + " threads of its own");
        } finally {
            if (proxy != null) {
                proxy.close();
            }
            for (HttpServer s : servers) {
                s.stop(0);
            }
            serverThreads.shutdownNow();
        }
    }

    /** Threads alive now that were not before the test started. */
    private static int newThreads(Set<Thread> before) {
        int n = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && t.isAlive()) {
                n++;
            }
        }
        return n;
    }

    private static String yaml(List<String> urls) {
        StringBuilder b = new StringBuilder("server:\n  host: 127.0.0.1\n  port: 0\nhealth:\n  interval_secs: 1\n");
        b.append("workers:\n");
        for (String u : urls) {
            b.append("  - url: \"").append(u).append("\"\n");
        }
        return b.toString();
    }
}
