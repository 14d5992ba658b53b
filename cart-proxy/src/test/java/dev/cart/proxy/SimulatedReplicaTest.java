package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.http.Responses;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.SimulatedReplicaServer.Fault;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The proxy in front of cart-sim's simulated replicas: demo mode and fault behaviour. */
class SimulatedReplicaTest {

    private final List<AutoCloseable> open = new ArrayList<>();
    private final List<Duration> sleeps = new CopyOnWriteArrayList<>();
    private final HttpClient http =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private ProxyServer proxy;

    @AfterEach
    void closeAll() throws Exception {
        if (proxy != null) {
            ManagedReplicaSet set = proxy.routing().replicas;
            ProxyHarness.await("no request left in flight", () -> set.totalInFlight() == 0);
            proxy.close();
        }
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private SimulatedReplicaServer sim(String name, Fault fault) throws IOException {
        SimulatedReplicaServer s = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .name(name)
                .port(0)
                .model("demo")
                .speedup(200)
                .outputTokens(8)
                .fault(fault));
        open.add(s);
        return s;
    }

    private void startProxy(String yaml, SimulatedReplicaServer... sims) throws Exception {
        StringBuilder b = new StringBuilder(yaml).append("\nserver:\n  host: 127.0.0.1\n  port: 0\nworkers:\n");
        for (int i = 0; i < sims.length; i++) {
            b.append("  - url: ")
                    .append(sims[i].baseUri())
                    .append("\n    load_penalty: ")
                    .append(i * 10)
                    .append('\n');
        }
        proxy = ProxyHarness.startOn(
                ConfigLoader.parse(b.toString()),
                new ProxyServer.Options().backoffs(sleeps::add).healthChecks(false));
    }

    private HttpResponse<String> chat(boolean stream) throws Exception {
        return http.send(
                HttpRequest.newBuilder(proxy.baseUri().resolve("/v1/chat/completions"))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"demo\",\"stream\":" + stream
                                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void demoModeStreamsAnAnswer() throws Exception {
        Demo demo = Demo.start(4);
        open.add(demo);
        assertEquals(4, demo.workers().size());
        ProxyConfig config = ConfigLoader.load(List.of(), false).withWorkers(demo.workers());
        proxy = ProxyHarness.startOn(
                config.withServer(config.server().withHost("127.0.0.1").withPort(0)), new ProxyServer.Options());
        HttpResponse<String> r = chat(true);
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
        assertTrue(r.body().startsWith("data: "), r.body());
        assertTrue(r.body().contains("chat.completion.chunk"), r.body());
        assertTrue(r.body().trim().endsWith("data: [DONE]"), r.body());
        HttpResponse<String> workers = http.send(
                HttpRequest.newBuilder(proxy.baseUri().resolve("/workers")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(4, Responses.JSON.readTree(workers.body()).get("workers").size());
    }

    @Test
    void a503FromASimulatedReplicaIsRetriedElsewhere() throws Exception {
        SimulatedReplicaServer failing = sim("failing", Fault.ERROR_503);
        SimulatedReplicaServer good = sim("good", Fault.NONE);
        startProxy("", failing, good);
        HttpResponse<String> r = chat(true);
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.body().contains("[DONE]"));
        assertEquals(1, failing.requestCount());
        assertEquals(1, good.requestCount());
        assertEquals(1, sleeps.size());
    }

    @Test
    void aResetMidStreamBreaksTheClientStreamAndCountsAsAFailure() throws Exception {
        SimulatedReplicaServer resetting = sim("resetting", Fault.RESET);
        startProxy("circuit_breaker:\n  failure_threshold: 1\n", resetting);
        HttpResponse<InputStream> r = http.send(
                HttpRequest.newBuilder(proxy.baseUri().resolve("/v1/chat/completions"))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"demo\",\"stream\":true,\"messages\":"
                                + "[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        boolean complete;
        try (InputStream in = r.body()) {
            complete = new String(in.readAllBytes(), StandardCharsets.UTF_8).contains("[DONE]");
        } catch (IOException e) {
            complete = false;
        }
        assertTrue(!complete || r.statusCode() >= 500, "a reset replica never yields a complete answer");
        ManagedReplicaSet.Member m = proxy.routing().replicas.replicas().get(0);
        ProxyHarness.await(
                "circuit opened by the failure", () -> m.circuitState() == dev.cart.core.CircuitBreaker.State.OPEN);
    }

    @Test
    void aHangingSimulatedReplicaTimesOutWith504() throws Exception {
        SimulatedReplicaServer hanging = sim("hanging", Fault.HANG);
        startProxy("proxy:\n  request_timeout_secs: 1\n", hanging);
        HttpResponse<String> r = chat(false);
        assertEquals(504, r.statusCode(), r.body());
        assertTrue(r.body().contains("upstream_timeout"));
    }
}
