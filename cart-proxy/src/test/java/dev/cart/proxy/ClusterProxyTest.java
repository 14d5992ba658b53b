package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import dev.cart.redis.RedisServerProcess;
import io.lettuce.core.RedisClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two proxies with a {@code cluster} section and one real {@code redis-server} (password set): the second
 * turn of a conversation sent to the other proxy goes where the first turn went, as a hit on a route the
 * other proxy learned; its metrics say so; {@code /workers} shows the other proxy's load; the password
 * appears in no log line.
 */
class ClusterProxyTest {

    private static final String PASSWORD = "s3cret-cluster-pass";
    private static final String SYSTEM = "You are the support assistant of a bicycle shop. Answer briefly. ";

    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private ProxyServer proxy(List<ScriptedReplica> replicas, String redisUrl, String id) throws Exception {
        ProxyServer p = ProxyServer.start(
                ConfigLoader.parse(clusterConfig(replicas, redisUrl, "cart:test", id)),
                new ProxyServer.Options().healthChecks(false));
        open.add(p);
        return p;
    }

    /** A proxy's configuration: the scripted replicas, the routed-peer header, and a cluster section. */
    static String clusterConfig(List<ScriptedReplica> replicas, String redisUrl, String stream, String id) {
        StringBuilder yaml = new StringBuilder("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n");
        for (ScriptedReplica r : replicas) {
            yaml.append("  - url: ").append(r.url()).append('\n');
        }
        yaml.append("proxy:\n  add_routed_peer_header: true\n");
        yaml.append("cluster:\n  redis_url: \"")
                .append(redisUrl)
                .append("\"\n  stream: \"")
                .append(stream)
                .append("\"\n  instance_id: ")
                .append(id)
                .append('\n');
        return yaml.toString();
    }

    private HttpResponse<String> post(ProxyServer p, String body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/v1/chat/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode get(ProxyServer p, String path) throws Exception {
        String body = http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + path))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        return Responses.JSON.readTree(body);
    }

    private String metrics(ProxyServer p) throws Exception {
        return http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/metrics"))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** Turn 1 of user {@code user}'s conversation (also ClusterFaultTest's). */
    static String turn1(int user) {
        return "{\"model\":\"fake\",\"messages\":[{\"role\":\"system\",\"content\":\"" + SYSTEM.repeat(6)
                + "\"},{\"role\":\"user\",\"content\":\"" + question(user) + "\"}]}";
    }

    /** Turn 2 of the same conversation: turn 1, an answer and a follow-up. */
    static String turn2(int user) {
        return "{\"model\":\"fake\",\"messages\":[{\"role\":\"system\",\"content\":\"" + SYSTEM.repeat(6)
                + "\"},{\"role\":\"user\",\"content\":\"" + question(user)
                + "\"},{\"role\":\"assistant\",\"content\":\"Check the chain first.\"},"
                + "{\"role\":\"user\",\"content\":\"And then the cassette?\"}]}";
    }

    private static String question(int user) {
        return ("Customer " + user + " says the gears slip on steep climbs after a wheel change. ").repeat(4);
    }

    @Test
    void turnTwoSentToTheOtherProxyHitsWhereTurnOneWent() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        RedisClient admin = RedisClient.create(redis.uri());
        admin.connect().sync().configSet("requirepass", PASSWORD);
        admin.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        String url = "redis://:" + PASSWORD + "@127.0.0.1:" + redis.port();
        List<ScriptedReplica> replicas = new ArrayList<>();
        for (String n : List.of("a", "b", "c", "d")) {
            ScriptedReplica r = ScriptedReplica.start(n);
            replicas.add(r);
            open.add(r);
        }
        try (LogCapture log = new LogCapture(org.slf4j.Logger.ROOT_LOGGER_NAME)) {
            ProxyServer one = proxy(replicas, url, "one");
            ProxyServer two = proxy(replicas, url, "two");
            await(
                    "both connected",
                    () -> metricValue(one, "cart_cluster_connected") == 1.0
                            && metricValue(two, "cart_cluster_connected") == 1.0);
            int conversations = 8;
            List<String> first = new ArrayList<>();
            for (int u = 0; u < conversations; u++) {
                HttpResponse<String> r = post(one, turn1(u));
                assertEquals(200, r.statusCode(), r.body());
                first.add(r.headers().firstValue("x-routed-peer").orElseThrow());
            }
            await(
                    "proxy two applied proxy one's routes",
                    () -> two.routing().router.remoteApplyStats().applied() >= conversations);
            for (int u = 0; u < conversations; u++) {
                HttpResponse<String> r = post(two, turn2(u));
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(
                        first.get(u),
                        r.headers().firstValue("x-routed-peer").orElseThrow(),
                        "turn 2 of conversation " + u + " on the other proxy");
            }
            assertEquals(conversations, metricValue(two, "cart_cluster_hits_learned_elsewhere_total"));
            assertTrue(metricValue(two, "cart_cluster_events_applied_total") >= conversations);
            assertTrue(metricValue(one, "cart_cluster_events_published_total") >= conversations);
            assertEquals(0.0, metricValue(one, "cart_cluster_events_dropped_total"));
            await(
                    "peers seen",
                    () -> metricValue(one, "cart_cluster_peers") == 1.0
                            && metricValue(two, "cart_cluster_peers") == 1.0);
            JsonNode workers = get(two, "/workers").get("workers");
            for (JsonNode w : workers) {
                assertEquals(0, w.get("remote_in_flight").asLong(), "nothing in flight anywhere now: " + w);
            }
            assertEquals(
                    0,
                    one.routing().replicas.totalInFlight()
                            + two.routing().replicas.totalInFlight());
            for (String line : log.lines()) {
                assertFalse(line.contains(PASSWORD), "a log line carries the Redis password: " + line);
            }
        }
    }

    @Test
    void withRedisUnreachableEveryRequestIsAnsweredAndNothingIsLeftInFlight() throws Exception {
        String url = "redis://:" + PASSWORD + "@127.0.0.1:" + RedisServerProcess.freePort(); // nothing listens
        List<ScriptedReplica> replicas = new ArrayList<>();
        for (String n : List.of("a", "b")) {
            ScriptedReplica r = ScriptedReplica.start(n);
            replicas.add(r);
            open.add(r);
        }
        try (LogCapture log = new LogCapture(org.slf4j.Logger.ROOT_LOGGER_NAME)) {
            ProxyServer one = proxy(replicas, url, "one");
            for (int u = 0; u < 10; u++) {
                HttpResponse<String> r = post(one, turn1(u));
                assertEquals(200, r.statusCode(), r.body());
            }
            assertEquals(0, one.routing().replicas.totalInFlight());
            assertEquals(0.0, metricValue(one, "cart_cluster_connected"));
            assertTrue(metricValue(one, "cart_cluster_events_buffered") > 0, "events wait for Redis");
            for (String line : log.lines()) {
                assertFalse(line.contains(PASSWORD), "a log line carries the Redis password: " + line);
            }
        }
    }

    /** One sample's value from the proxy's /metrics (NaN when absent). */
    private double metricValue(ProxyServer p, String name) {
        try {
            for (String line : metrics(p).split("\n")) {
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
