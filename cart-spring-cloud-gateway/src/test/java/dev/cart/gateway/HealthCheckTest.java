package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The README's health-check setup, as it stands there, on a service of three instances one of which is a dead
 * port, with no retry: every request is answered, by the two live instances only.
 */
class HealthCheckTest {

    @Test
    void theReadmeHealthCheckKeepsRoutingToTheLiveInstances(@TempDir Path dir) throws Exception {
        String block = ReadmeBlocks.after("**Health checks.**", "yaml");
        assertTrue(block.contains("health-check"), block);
        URI dead = Backends.deadPort();
        try (Backends.Replica a = new Backends.Replica("a");
                Backends.Replica b = new Backends.Replica("b")) {
            ConfigurableApplicationContext gateway = Backends.gateway(List.of(
                    ReadmeBlocks.asConfigLocation(block, dir),
                    "cart.services=llm",
                    "spring.cloud.discovery.client.simple.instances.llm[0].uri=" + dead,
                    "spring.cloud.discovery.client.simple.instances.llm[1].uri=" + a.uri(),
                    "spring.cloud.discovery.client.simple.instances.llm[2].uri=" + b.uri(),
                    "spring.cloud.gateway.server.webflux.routes[0].id=llm",
                    "spring.cloud.gateway.server.webflux.routes[0].uri=lb://llm",
                    "spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/v1/**"));
            try {
                CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
                int port = Backends.port(gateway);
                Set<String> replicas = new HashSet<>();
                int requests = 16;
                for (int i = 0; i < requests; i++) {
                    HttpResponse<String> r =
                            Backends.post(port, "/v1/chat/completions", Backends.chat("Tenant " + i + " handbook. "));
                    assertEquals(200, r.statusCode(), r.body());
                    replicas.add(r.headers().firstValue("x-replica").orElse("?"));
                }
                assertEquals(requests, a.requests.get() + b.requests.get());
                assertEquals(Set.of("a", "b"), replicas, "both live instances take requests");
                Backends.await("nothing in flight", () -> routing.inFlight("llm") == 0);
            } finally {
                gateway.close();
            }
        }
    }
}
