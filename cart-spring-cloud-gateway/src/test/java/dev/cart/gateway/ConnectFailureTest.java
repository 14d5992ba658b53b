package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.ConnectTimeoutException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A replica the gateway cannot connect to, with no {@code Retry} filter to save the request: the client gets an
 * API-style 502 (a refused connection) or 504 (a connect timeout) naming the replica, in OpenAI's error shape or
 * Anthropic's on {@code /v1/messages}; never the gateway's default 500 body, never an exception's class name; and
 * the lease is closed as the replica's failure, nothing left in flight.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConnectFailureTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private ConfigurableApplicationContext gateway;
    private CartGatewayRouting routing;
    private MeterRegistry registry;
    private int port;
    private URI dead;
    private URI unresponsive;
    private ServerSocket full;
    private final List<Socket> queued = new ArrayList<>();

    /** The registry the gateway's CART metrics go to. */
    @Configuration(proxyBeanMethods = false)
    static class Metrics {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @BeforeAll
    void start() throws Exception {
        dead = Backends.deadPort();
        unresponsive = fullBacklog();
        gateway = Backends.gateway(List.of(
                "spring.main.sources=" + Metrics.class.getName(),
                "cart.services=llm,llm-slow",
                "spring.cloud.discovery.client.simple.instances.llm[0].uri=" + dead,
                "spring.cloud.discovery.client.simple.instances.llm-slow[0].uri=" + unresponsive,
                "spring.cloud.gateway.server.webflux.httpclient.connect-timeout=500",
                "spring.cloud.gateway.server.webflux.routes[0].id=llm",
                "spring.cloud.gateway.server.webflux.routes[0].uri=lb://llm",
                "spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/v1/**",
                "spring.cloud.gateway.server.webflux.routes[1].id=llm-slow",
                "spring.cloud.gateway.server.webflux.routes[1].uri=lb://llm-slow",
                "spring.cloud.gateway.server.webflux.routes[1].predicates[0]=Path=/slow/v1/**",
                "spring.cloud.gateway.server.webflux.routes[1].filters[0]=StripPrefix=1"));
        routing = gateway.getBean(CartGatewayRouting.class);
        registry = gateway.getBean(MeterRegistry.class);
        port = Backends.port(gateway);
    }

    /**
     * A loopback port that takes no more connections: a listening socket that never accepts, its accept queue
     * filled, so the kernel drops the next connection's SYN and connecting times out.
     */
    private URI fullBacklog() throws IOException {
        full = new ServerSocket();
        full.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
        for (int i = 0; i < 8; i++) {
            Socket s = new Socket();
            try {
                s.connect(full.getLocalSocketAddress(), 200);
                queued.add(s);
            } catch (IOException timedOut) {
                s.close();
                break; // the queue is full
            }
        }
        return URI.create("http://127.0.0.1:" + full.getLocalPort());
    }

    @AfterAll
    void stop() throws IOException {
        if (gateway != null) {
            gateway.close();
        }
        for (Socket s : queued) {
            s.close();
        }
        full.close();
    }

    @Test
    void aRefusedConnectionGetsAnOpenAiStyle502NamingTheReplica() throws Exception {
        double failures = failures("llm");
        double rejected = rejected("llm");
        HttpResponse<String> r = Backends.post(port, "/v1/chat/completions", Backends.chat("Refused. "));
        assertEquals(502, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertEquals("server_error", error.path("type").asText(), r.body());
        assertEquals("replica_unreachable", error.path("code").asText(), r.body());
        assertTrue(error.has("param"), r.body());
        assertEquals(
                "could not connect to replica " + dead + " of llm",
                error.path("message").asText());
        plainWords(r.body());
        Backends.await("nothing in flight", () -> routing.inFlight("llm") == 0);
        Backends.await("the lease closed as the replica's failure", () -> failures("llm") == failures + 1);
        assertEquals(rejected + 1, rejected("llm"), 0.0, "counted once as answered by the gateway");
    }

    @Test
    void aRefusedConnectionOnMessagesGetsAnthropicsErrorShape() throws Exception {
        HttpResponse<String> r = Backends.post(
                port,
                "/v1/messages",
                "{\"model\":\"m\",\"max_tokens\":4,\"system\":\"" + "Anthropic. ".repeat(20)
                        + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertEquals(502, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertEquals("error", body.path("type").asText(), r.body());
        assertEquals("api_error", body.path("error").path("type").asText(), r.body());
        assertTrue(body.path("error").path("message").asText().contains(dead.toString()), r.body());
        plainWords(r.body());
        Backends.await("nothing in flight", () -> routing.inFlight("llm") == 0);
    }

    @Test
    void aConnectTimeoutGets504() throws Exception {
        double failures = failures("llm-slow");
        HttpResponse<String> r = Backends.post(port, "/slow/v1/chat/completions", Backends.chat("Slow. "));
        assertEquals(504, r.statusCode(), r.body());
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertEquals("replica_connect_timeout", error.path("code").asText(), r.body());
        assertEquals(
                "connecting to replica " + unresponsive + " of llm-slow timed out",
                error.path("message").asText());
        plainWords(r.body());
        Backends.await("nothing in flight", () -> routing.inFlight("llm-slow") == 0);
        Backends.await("the lease closed as the replica's failure", () -> failures("llm-slow") == failures + 1);
    }

    @Test
    void failuresAreToldApartByTheirCauseChain() {
        assertEquals(
                CartConnectFailureFilter.Failure.UNREACHABLE,
                CartConnectFailureFilter.Failure.of(new IllegalStateException(new ConnectException("refused"))));
        assertEquals(
                CartConnectFailureFilter.Failure.UNRESOLVED,
                CartConnectFailureFilter.Failure.of(new UnknownHostException("gpu-9")));
        assertEquals(
                CartConnectFailureFilter.Failure.CONNECT_TIMEOUT,
                CartConnectFailureFilter.Failure.of(new ConnectTimeoutException("timed out")));
        assertNull(CartConnectFailureFilter.Failure.of(new IOException("connection reset")));
        assertNull(CartConnectFailureFilter.Failure.of(new IllegalStateException("bug")));
    }

    /** No class name, no stack trace, not the gateway's default error body. */
    private static void plainWords(String body) {
        assertFalse(body.contains("Exception"), body);
        assertFalse(body.contains("io.netty"), body);
        assertFalse(body.contains("\"timestamp\""), body);
        assertFalse(body.contains("\"trace\""), body);
    }

    private double rejected(String service) {
        var c = registry.find("cart.requests.rejected")
                .tags("service", service, "cause", "replica_unreachable")
                .counter();
        return c == null ? 0 : c.count();
    }

    private double failures(String service) {
        return registry
                .find("cart.upstream.requests")
                .tags("service", service, "outcome", "failure")
                .counters()
                .stream()
                .mapToDouble(c -> c.count())
                .sum();
    }
}
