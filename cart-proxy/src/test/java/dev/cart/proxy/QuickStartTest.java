package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.http.Responses;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The README's quick start, run as written against the demo pool: the shell lines in the README are the
 * ones {@code --demo} prints, and of the two questions under one system prompt the second is a
 * {@code cache_hit} on the replica the first went to, as the decision log and {@code /workers} show.
 */
class QuickStartTest {

    private static final Pattern DECISION =
            Pattern.compile("reason=(\\S+) replica=(\\S+) matched=(\\d+) key_len=(\\d+)");

    @Test
    void theReadmeCommandsAreTheOnesTheDemoPrints() throws Exception {
        Path readme =
                Path.of(System.getProperty("user.dir")).resolve("../README.md").normalize();
        String text = Files.readString(readme);
        String quickStart = text.substring(
                text.indexOf("## The two commands"), text.indexOf("## Running it in front of a real pool"));
        assertTrue(quickStart.contains("mvn -B -ntp -DskipTests package && bin/cache-aware-router --demo"), quickStart);
        for (String line : Demo.quickStartCommands("localhost:6700")) {
            assertTrue(quickStart.contains("\n" + line + "\n"), "README quick start lacks: " + line);
        }
    }

    @Test
    void theSecondQuestionIsACacheHitOnTheFirstOnesReplica() throws Exception {
        HttpClient http =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        try (Demo demo = Demo.start(4);
                LogCapture log = new LogCapture("cart.decision")) {
            ProxyConfig config = ConfigLoader.load(List.of(), false).withWorkers(demo.workers());
            ProxyServer proxy = ProxyHarness.startOn(
                    config.withServer(config.server().withHost("127.0.0.1").withPort(0)),
                    new ProxyServer.Options().healthChecks(false));
            try {
                for (String question : Demo.QUICK_START_QUESTIONS) {
                    HttpResponse<String> r = http.send(
                            HttpRequest.newBuilder(proxy.baseUri().resolve("/v1/chat/completions"))
                                    .header("Content-Type", "application/json")
                                    .POST(HttpRequest.BodyPublishers.ofString(Demo.quickStartBody(question)))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, r.statusCode(), r.body());
                    assertTrue(r.body().contains("chat.completion"), r.body());
                }
                ProxyHarness.await("two decision lines", () -> log.lines().size() >= 2);
                List<String> lines = log.lines();
                assertEquals(2, lines.size(), String.join("\n", lines));
                Matcher first = DECISION.matcher(lines.get(0));
                Matcher second = DECISION.matcher(lines.get(1));
                assertTrue(first.find() && second.find(), String.join("\n", lines));
                System.out.println("quick start:\n" + String.join("\n", lines));
                assertEquals("miss", first.group(1), lines.get(0));
                assertEquals("cache_hit", second.group(1), lines.get(1));
                assertEquals(first.group(2), second.group(2), "the second request follows the first");
                int matched = Integer.parseInt(second.group(3));
                assertTrue(matched >= 128 && matched % 64 == 0, "whole blocks of the system prompt match: " + matched);

                HttpResponse<String> w = http.send(
                        HttpRequest.newBuilder(proxy.baseUri().resolve("/workers"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertTrue(w.body().endsWith("}\n"), "the JSON ends with a newline: " + w.body());
                proxy.routing().health.probeAll().get(); // health checks are off here: one round by hand
                HttpResponse<String> health = http.send(
                        HttpRequest.newBuilder(proxy.baseUri().resolve("/health"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals("{\"status\":\"ok\",\"healthy\":4,\"unknown\":0,\"total\":4}\n", health.body());
                JsonNode workers = Responses.JSON.readTree(w.body());
                assertEquals(2, workers.at("/recent/decisions").asInt(), w.body());
                assertEquals(1, workers.at("/recent/cache_hits").asInt(), w.body());
                for (JsonNode replica : workers.get("workers")) {
                    boolean holder = replica.get("url").asText().equals(first.group(2));
                    assertEquals(
                            holder ? 1.0 : 0.0, replica.get("cache_hit_share").asDouble(), w.body());
                    assertEquals(
                            holder ? 1.0 : 0.0, replica.get("decision_share").asDouble(), w.body());
                }
            } finally {
                proxy.close();
            }
        }
    }
}
