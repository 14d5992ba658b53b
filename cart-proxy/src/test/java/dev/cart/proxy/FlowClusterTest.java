package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.flow.FlowControl;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import dev.cart.redis.RedisServerProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Flow control with several instances ({@code cluster} and {@code flow} on, one real {@code redis-server}),
 * the semantics docs/flow-control.md#several-instances promises: each proxy queues its own requests against
 * its own admission cap ({@code max_load} counts the proxy's own requests), while the shared load view
 * steers every choice; a slot freed on one proxy admits a request queued on that proxy; nothing leaks on
 * either. Replicas hold each request until the test lets it go, so every step waits for a state.
 */
class FlowClusterTest {

    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient http =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private ProxyServer proxy(List<ScriptedReplica> replicas, String redisUrl, String id) throws Exception {
        StringBuilder yaml = new StringBuilder("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n");
        for (ScriptedReplica r : replicas) {
            yaml.append("  - url: ").append(r.url()).append("\n    max_load: 1\n");
        }
        yaml.append("flow:\n  enabled: true\n  max_wait_ms: 60000\n  reserve_ratio: 0\n");
        yaml.append("cluster:\n  redis_url: \"")
                .append(redisUrl)
                .append("\"\n  stream: \"cart:flow\"\n  instance_id: ")
                .append(id)
                .append('\n');
        ProxyServer p =
                ProxyServer.start(ConfigLoader.parse(yaml.toString()), new ProxyServer.Options().healthChecks(false));
        open.add(p);
        return p;
    }

    private CompletableFuture<HttpResponse<String>> send(ProxyServer p, String content) {
        return http.sendAsync(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/v1/chat/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(ProxyHarness.chat(content, false)))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The other proxies' in-flight count on {@code replica} as {@code p}'s shared load view has it. */
    private long remoteInFlight(ProxyServer p, ScriptedReplica replica) {
        try {
            String body = http.send(
                            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/workers"))
                                    .GET()
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
            for (JsonNode w : Responses.JSON.readTree(body).get("workers")) {
                if (w.get("url").asText().equals(replica.url())) {
                    return w.get("remote_in_flight").asLong();
                }
            }
            throw new AssertionError("no worker " + replica.url() + " in " + body);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static FlowControl flow(ProxyServer p) {
        return p.routing().flow.control();
    }

    private static Semaphore hold(ScriptedReplica r) {
        Semaphore s = new Semaphore(0);
        r.permits = s;
        return s;
    }

    @Test
    void eachProxyQueuesAgainstItsOwnCapWhileTheSharedViewSteers() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        ScriptedReplica r0 = ScriptedReplica.start("r0");
        ScriptedReplica r1 = ScriptedReplica.start("r1");
        open.add(r0);
        open.add(r1);
        Semaphore p0 = hold(r0);
        Semaphore p1 = hold(r1);
        List<ScriptedReplica> replicas = List.of(r0, r1);
        ProxyServer a = proxy(replicas, redis.uri(), "a");
        ProxyServer b = proxy(replicas, redis.uri(), "b");

        // A's request takes one replica's only slot (A's cap)
        CompletableFuture<HttpResponse<String>> a1 = send(a, "first request, sent to proxy a");
        await("a1 at a replica", () -> r0.count() + r1.count() == 1);
        ScriptedReplica x = r0.count() == 1 ? r0 : r1;
        ScriptedReplica y = x == r0 ? r1 : r0;
        Semaphore px = x == r0 ? p0 : p1;
        Semaphore py = x == r0 ? p1 : p0;
        await("b's view of a's request", () -> remoteInFlight(b, x) == 1);

        // the shared view steers B's miss to the replica nobody holds
        CompletableFuture<HttpResponse<String>> b1 = send(b, "second request, sent to proxy b");
        await("b1 at the other replica", () -> y.count() == 1);
        assertEquals(1, x.count());

        // B's cap counts B's own requests: x holds A's request, yet B admits one there at once
        CompletableFuture<HttpResponse<String>> b2 = send(b, "third request, sent to proxy b");
        await("b2 at the replica a's request holds", () -> x.count() == 2);
        assertEquals(0, flow(b).depth("fake"));

        // both replicas at B's cap: B's next request waits in B's queue; A's queue is empty
        CompletableFuture<HttpResponse<String>> b3 = send(b, "fourth request, sent to proxy b");
        await("b3 queued on b", () -> flow(b).depth("fake") == 1);
        assertEquals(0, flow(a).depth("fake"));
        assertEquals(3, r0.count() + r1.count());

        // b1 ends on y: the slot B frees admits B's waiting request, to y (x is at B's cap)
        py.release();
        await("b3 admitted to y", () -> y.count() == 2);
        assertEquals(0, flow(b).depth("fake"));
        assertEquals(2, x.count());

        // A still has a slot of its own on y, which B's request holds: A's request is admitted at once
        CompletableFuture<HttpResponse<String>> a2 = send(a, "fifth request, sent to proxy a");
        await("a2 at y", () -> y.count() == 3);
        assertEquals(0, flow(a).depth("fake"));

        px.release(2);
        py.release(2);
        for (CompletableFuture<HttpResponse<String>> f : List.of(a1, a2, b1, b2, b3)) {
            HttpResponse<String> r = f.get();
            assertEquals(200, r.statusCode(), r.body());
        }
        assertNotSame(x, y);
        for (ProxyServer p : List.of(a, b)) {
            await("in-flight back to 0", () -> p.routing().replicas.totalInFlight() == 0);
        }
        await(
                "the shared view empties",
                () -> remoteInFlight(a, x) + remoteInFlight(a, y) == 0
                        && remoteInFlight(b, x) + remoteInFlight(b, y) == 0);
        assertEquals(1.0, PromText.parse(metrics(b)).sum("cart_flow_queued_total"));
        assertEquals(0.0, PromText.parse(metrics(a)).sum("cart_flow_queued_total"));
    }

    private String metrics(ProxyServer p) throws Exception {
        return http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.port() + "/metrics"))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }
}
