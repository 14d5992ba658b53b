package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The README's {@code Retry} example, as it stands there, on a service of two replicas one of which is a dead
 * port: every request is answered by the live replica, the attempts on the dead one are closed as its failures,
 * and CART's lease bookkeeping leaks nothing (nothing in flight; one closed lease per attempt).
 */
class RetryExampleTest {

    /** The registry the gateway's CART metrics go to. */
    @Configuration(proxyBeanMethods = false)
    static class Metrics {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @Test
    void theReadmeRetryFilterSendsRequestsForADeadReplicaToTheLiveOne(@TempDir Path dir) throws Exception {
        String block = ReadmeBlocks.after("**Retry on connect failure only.**", "yaml");
        assertTrue(block.contains("name: Retry"), block);
        URI dead = Backends.deadPort();
        try (Backends.Replica live = new Backends.Replica("live")) {
            ConfigurableApplicationContext gateway = Backends.gateway(List.of(
                    ReadmeBlocks.asConfigLocation(block, dir),
                    "spring.main.sources=" + Metrics.class.getName(),
                    "cart.services=llm",
                    // the dead replica first: where the loads are equal, it is the one chosen
                    "spring.cloud.discovery.client.simple.instances.llm[0].uri=" + dead,
                    "spring.cloud.discovery.client.simple.instances.llm[1].uri=" + live.uri()));
            try {
                CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
                MeterRegistry registry = gateway.getBean(MeterRegistry.class);
                int port = Backends.port(gateway);
                int requests = 12;
                for (int i = 0; i < requests; i++) {
                    HttpResponse<String> r = Backends.post(
                            port, "/v1/chat/completions", Backends.chat("Document " + i + " of the archive. "));
                    assertEquals(200, r.statusCode(), r.body());
                    assertEquals("live", r.headers().firstValue("x-replica").orElse(""));
                }
                assertEquals(requests, live.requests.get());
                Backends.await("nothing in flight", () -> routing.inFlight("llm") == 0);
                assertEquals(
                        Map.of(),
                        Map.copyOf(routing.inFlightByReplica("llm")).entrySet().stream()
                                .filter(e -> e.getValue() != 0)
                                .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)),
                        "no replica holds a slot");
                double deadFailures = count(registry, "replica", dead.toString(), "outcome", "failure");
                assertTrue(deadFailures >= 1, "the dead replica was tried (and the retry saved the request)");
                Backends.await(
                        "one closed lease per attempt: the answers and the dead replica's failures",
                        () -> count(registry) == requests + deadFailures);
                assertEquals(requests, count(registry, "replica", live.uri().toString(), "outcome", "success"));
            } finally {
                gateway.close();
            }
        }
    }

    /**
     * The same block with replicas that had the request and failed it, by a 500 or by closing the connection
     * without an answer: nothing is sent again (the filter's defaults would have resent both), the client gets
     * the failure, and the leases are closed as failures.
     */
    @Test
    void theReadmeRetryFilterNeverResendsARequestAReplicaHad(@TempDir Path dir) throws Exception {
        String block = ReadmeBlocks.after("**Retry on connect failure only.**", "yaml");
        try (Backends.Replica a = new Backends.Replica("a");
                Backends.Replica b = new Backends.Replica("b")) {
            ConfigurableApplicationContext gateway = Backends.gateway(List.of(
                    ReadmeBlocks.asConfigLocation(block, dir),
                    "spring.main.sources=" + Metrics.class.getName(),
                    "cart.services=llm",
                    "spring.cloud.discovery.client.simple.instances.llm[0].uri=" + a.uri(),
                    "spring.cloud.discovery.client.simple.instances.llm[1].uri=" + b.uri()));
            try {
                CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
                MeterRegistry registry = gateway.getBean(MeterRegistry.class);
                int port = Backends.port(gateway);
                int sent = 0;
                for (Backends.Mode mode : List.of(Backends.Mode.ERROR_500, Backends.Mode.CLOSE)) {
                    a.mode = mode;
                    b.mode = mode;
                    for (int i = 0; i < 2; i++) {
                        HttpResponse<String> r = Backends.post(
                                port, "/v1/chat/completions", Backends.chat(mode + " request " + i + ". "));
                        sent++;
                        assertTrue(r.statusCode() >= 500, mode + ": " + r.statusCode() + " " + r.body());
                        assertEquals(sent, a.requests.get() + b.requests.get(), mode + ": sent once, not again");
                    }
                }
                int total = sent;
                Backends.await("nothing in flight", () -> routing.inFlight("llm") == 0);
                Backends.await(
                        "every attempt closed as a failure", () -> count(registry, "outcome", "failure") == total);
            } finally {
                gateway.close();
            }
        }
    }

    private static double count(MeterRegistry registry, String... tags) {
        double total = 0;
        for (Counter c : registry.find("cart.upstream.requests")
                .tags("service", "llm")
                .tags(tags)
                .counters()) {
            total += c.count();
        }
        return total;
    }
}
