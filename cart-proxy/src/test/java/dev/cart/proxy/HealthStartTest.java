package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.proxy.config.ConfigLoader;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Health at start and after a reload: a replica is unknown until its first probe completes, and {@code /health}
 * never says ok while no replica has been probed healthy.
 */
class HealthStartTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body());
    }

    @Test
    void healthSaysStartingUntilTheFirstProbesAnswer() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            HttpResponse<String> starting = h.get("/health");
            assertEquals(503, starting.statusCode(), starting.body());
            JsonNode s = json(starting);
            assertEquals("starting", s.get("status").asText());
            assertEquals(0, s.get("healthy").asInt());
            assertEquals(2, s.get("unknown").asInt());
            assertEquals(2, s.get("total").asInt());
            JsonNode workers = json(h.get("/workers"));
            assertEquals(0, workers.get("healthy").asInt());
            for (JsonNode w : workers.get("workers")) {
                assertEquals("unknown", w.get("health").asText());
                assertFalse(w.get("healthy").asBoolean());
            }
            PromText before = PromText.parse(h.get("/metrics").body());
            assertEquals(0, before.value("cart_replicas_healthy"));
            assertEquals(
                    0,
                    before.value("cart_replica_healthy", "replica", h.replica(0).url()));

            h.probe();
            HttpResponse<String> ok = h.get("/health");
            assertEquals(200, ok.statusCode(), ok.body());
            assertEquals("ok", json(ok).get("status").asText());
            assertEquals(2, json(ok).get("healthy").asInt());
            assertEquals(0, json(ok).get("unknown").asInt());
            PromText after = PromText.parse(h.get("/metrics").body());
            assertEquals(2, after.value("cart_replicas_healthy"));
            assertEquals(
                    1,
                    after.value("cart_replica_healthy", "replica", h.replica(0).url()));

            h.replica(1).close();
            h.probe();
            h.probe();
            h.probe(); // health.failure_threshold: 3
            HttpResponse<String> degraded = h.get("/health");
            assertEquals(200, degraded.statusCode(), degraded.body());
            assertEquals("degraded", json(degraded).get("status").asText());
            assertEquals(1, json(degraded).get("healthy").asInt());
        }
    }

    @Test
    void aReplicaThatHasNeverAnsweredAProbeIsNotHealthy() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            h.replica(0).close();
            h.probe(); // one failure: below health.failure_threshold, so the member still reads healthy
            assertTrue(h.member(0).isHealthy(), "the core's member starts healthy");
            HttpResponse<String> r = h.get("/health");
            assertEquals(503, r.statusCode(), r.body());
            assertEquals("unavailable", json(r).get("status").asText());
            assertEquals(
                    "unhealthy",
                    json(h.get("/workers")).get("workers").get(0).get("health").asText());
        }
    }

    @Test
    void aDeadWorkerAddedByAReloadStartsUnknownNotHealthy() throws Exception {
        int dead;
        try (ServerSocket s = new ServerSocket(0)) {
            dead = s.getLocalPort();
        }
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            h.probe();
            assertEquals("ok", json(h.get("/health")).get("status").asText());
            String deadUrl = "http://127.0.0.1:" + dead;
            ProxyServer.ReloadResult r =
                    h.proxy.reload(ConfigLoader.parse(h.yaml("") + "  - url: \"" + deadUrl + "\"\n"));
            assertTrue(r.accepted() && r.changed(), r.message());
            h.seenSets.add(h.proxy.routing().replicas);

            HttpResponse<String> health = h.get("/health");
            assertEquals(200, health.statusCode(), health.body());
            JsonNode body = json(health);
            assertEquals("degraded", body.get("status").asText());
            assertEquals(1, body.get("healthy").asInt(), "the worker that stayed keeps its probes' word");
            assertEquals(1, body.get("unknown").asInt());
            assertEquals(2, body.get("total").asInt());
            JsonNode workers = json(h.get("/workers")).get("workers");
            for (JsonNode w : workers) {
                String expected = w.get("url").asText().equals(deadUrl) ? "unknown" : "healthy";
                assertEquals(expected, w.get("health").asText(), w.toString());
            }
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(0, m.value("cart_replica_healthy", "replica", deadUrl));
            assertEquals(1, m.value("cart_replicas_healthy"));

            h.probe();
            for (JsonNode w : json(h.get("/workers")).get("workers")) {
                String expected = w.get("url").asText().equals(deadUrl) ? "unhealthy" : "healthy";
                assertEquals(expected, w.get("health").asText(), w.toString());
            }
        }
    }

    @Test
    void aRefusedConnectionIsSaidInPlainWords() throws Exception {
        int dead;
        try (ServerSocket s = new ServerSocket(0)) {
            dead = s.getLocalPort();
        }
        ProxyHarness h = new ProxyHarness();
        try (h;
                LogCapture warnings = new LogCapture(dev.cart.proxy.upstream.Forwarder.class.getName())) {
            String url = "http://127.0.0.1:" + dead;
            h.startProxy(
                    ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: \"" + url + "\"\n"),
                    h.options());
            h.seenSets.add(h.proxy.routing().replicas);
            HttpResponse<String> r = h.post("/v1/chat/completions", ProxyHarness.chat("hi", false));
            assertEquals(502, r.statusCode(), r.body());
            assertTrue(r.body().contains("replica " + url + " refused the connection (connection refused)"), r.body());
            assertFalse(r.body().contains("Exception"), r.body());
            List<String> lines = warnings.lines();
            assertTrue(
                    lines.stream()
                            .anyMatch(
                                    l -> l.contains("replica " + url + " refused the connection (connection refused)")),
                    lines.toString());
            assertTrue(lines.stream().noneMatch(l -> l.contains("Exception")), lines.toString());
        }
    }

    @Test
    void anUnknownHostIsSaidInPlainWords() throws Exception {
        ProxyHarness h = new ProxyHarness();
        try (h) {
            h.startProxy(
                    ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\n"
                            + "workers:\n  - url: \"http://nosuchhost.invalid:8000\"\n"),
                    h.options());
            h.seenSets.add(h.proxy.routing().replicas);
            HttpResponse<String> r = h.post("/v1/chat/completions", ProxyHarness.chat("hi", false));
            assertEquals(502, r.statusCode(), r.body());
            assertTrue(
                    r.body()
                            .contains("replica http://nosuchhost.invalid:8000 could not be reached: could not resolve "
                                    + "host 'nosuchhost.invalid'"),
                    r.body());
            assertFalse(r.body().contains("Exception"), r.body());
        }
    }
}
