package dev.cart.examples.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.gateway.CartGatewayRouting;
import dev.cart.sim.SimulatedReplicaServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The {@code application.yaml} block of the README's "Inside Spring Cloud Gateway" section, read from the README
 * itself and used as the example application's only configuration (its two replica URIs pointed at simulated
 * replicas): the gateway starts, balances {@code lb://llm} with CART, and a repeated prompt goes back to the
 * replica that holds it.
 */
class ReadmeConfigurationTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theReadmeBlockIsAWorkingConfiguration(@TempDir Path dir) throws Exception {
        String yaml = readmeBlock();
        List<SimulatedReplicaServer> replicas = new ArrayList<>();
        ConfigurableApplicationContext gateway = null;
        try {
            for (String uri : List.of("http://gpu-0:8000", "http://gpu-1:8000")) {
                assertTrue(yaml.contains(uri), "the README block lists " + uri);
                SimulatedReplicaServer r = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("readme-" + replicas.size())
                        .model("m"));
                replicas.add(r);
                yaml = yaml.replace(uri, r.baseUri().toString());
            }
            Path config = Files.writeString(dir.resolve("application.yaml"), yaml);
            gateway = SpringApplication.run(
                    GatewayExample.class,
                    "--spring.config.location=file:" + config,
                    "--server.port=0",
                    "--spring.main.banner-mode=off");
            CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
            int port = Integer.parseInt(gateway.getEnvironment().getProperty("local.server.port"));
            HttpClient http = HttpClient.newHttpClient();
            String body = "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":\""
                    + "You answer questions about the README of a router. ".repeat(20)
                    + "\"},{\"role\":\"user\",\"content\":\"Which lines configure it?\"}]}";
            HttpRequest request = HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                    .timeout(Duration.ofMinutes(1))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body))
                    .build();
            HttpResponse<String> first = http.send(request, HttpResponse.BodyHandlers.ofString());
            assertEquals(200, first.statusCode(), first.body());
            GatewayExampleTest.await("the first lease closed", () -> routing.inFlight("llm") == 0);
            HttpResponse<String> second = http.send(request, HttpResponse.BodyHandlers.ofString());
            assertEquals(200, second.statusCode(), second.body());
            assertEquals(
                    first.headers().firstValue("x-sim-replica").orElseThrow(),
                    second.headers().firstValue("x-sim-replica").orElseThrow(),
                    "the repeated prompt went back to its replica");
            JsonNode usage = JSON.readTree(second.body()).path("usage");
            assertTrue(
                    usage.path("prompt_tokens_details").path("cached_tokens").asLong() > 0,
                    "the replica's cache served the repeated prompt: " + usage);
            GatewayExampleTest.await("nothing left in flight", () -> routing.inFlight("llm") == 0);
        } finally {
            if (gateway != null) {
                gateway.close();
            }
            replicas.forEach(SimulatedReplicaServer::close);
        }
    }

    /** The first {@code yaml} block after the "Inside Spring Cloud Gateway" heading of the repository's README. */
    static String readmeBlock() throws Exception {
        Path readme = Path.of("../../README.md");
        String text = Files.readString(readme);
        int section = text.indexOf("## Inside Spring Cloud Gateway");
        assertTrue(section >= 0, "the README has the section");
        int start = text.indexOf("```yaml\n", section);
        int end = text.indexOf("```", start + 8);
        assertTrue(start >= 0 && end > start, "the section has a yaml block");
        String block = text.substring(start + 8, end);
        assertTrue(block.lines().count() <= 10, "ten lines at most:\n" + block);
        return block;
    }
}
