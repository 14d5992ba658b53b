package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigLoader;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The counters of events that dashboards and alerts take rates of exist on a fresh proxy's {@code /metrics}
 * at 0, for every label value known at start (each fixed cause, result and transition, and each worker), so a
 * {@code rate()} reads 0 rather than nothing; a worker a reload adds gets its own at 0.
 */
class CountersFromStartTest {

    private static final List<String> RETRY_CAUSES = List.of("connect_error", "io_error", "invalid_answer", "status");
    private static final List<List<String>> CIRCUIT = List.of(
            List.of("closed", "open"),
            List.of("open", "half_open"),
            List.of("half_open", "closed"),
            List.of("half_open", "open"));

    @Test
    void everyEventCounterReadsZeroOnAFreshProxy() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            PromText m = PromText.parse(h.get("/metrics").body());
            for (String result : List.of("applied", "unchanged", "rejected", "superseded")) {
                assertZero(m, "cart_reloads_total", "result", result);
            }
            for (String cause : List.of("concurrency", "buffered_bodies", "request_line", "headers", "draining")) {
                assertZero(m, "cart_requests_rejected_total", "cause", cause);
            }
            assertZero(m, "cart_upstream_stale_connections_total");
            assertZero(m, "cart_decision_lines_dropped_total"); // the process's: no test drops a line
            for (ScriptedReplica r : h.replicas) {
                assertReplicaZero(m, r.url());
            }
        }
    }

    @Test
    void aWorkerAddedByAReloadGetsItsCountersAtZero() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            String added = "http://127.0.0.1:9"; // never asked: no request is sent
            ProxyServer.ReloadResult r =
                    h.proxy.reload(ConfigLoader.parse(h.yaml("") + "  - url: \"" + added + "\"\n"));
            assertTrue(r.accepted() && r.changed(), r.message());
            h.seenSets.add(h.proxy.routing().replicas);
            PromText m = PromText.parse(h.get("/metrics").body());
            assertReplicaZero(m, added);
            assertEquals(1, m.value("cart_reloads_total", "result", "applied"));
        }
    }

    private static void assertReplicaZero(PromText m, String replica) {
        for (String cause : RETRY_CAUSES) {
            assertZero(m, "cart_retries_total", "replica", replica, "cause", cause);
        }
        for (List<String> t : CIRCUIT) {
            assertZero(m, "cart_circuit_transitions_total", "replica", replica, "from", t.get(0), "to", t.get(1));
        }
        assertZero(m, "cart_health_transitions_total", "replica", replica, "to", "healthy");
        assertZero(m, "cart_health_transitions_total", "replica", replica, "to", "unhealthy");
        assertZero(m, "cart_response_parse_failures_total", "replica", replica);
    }

    /** The series of {@code name} with exactly these labels is present and reads 0. */
    private static void assertZero(PromText m, String name, String... kv) {
        Map<String, String> want = new TreeMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            want.put(kv[i], kv[i + 1]);
        }
        PromText.Sample found = m.named(name).stream()
                .filter(s -> s.labels().equals(want))
                .findFirst()
                .orElse(null);
        assertTrue(found != null, name + want + " is not exported; " + m.named(name));
        assertEquals(0.0, found.value(), name + want);
    }
}
