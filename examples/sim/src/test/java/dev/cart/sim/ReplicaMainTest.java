package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The command-line launcher of the simulated replica: flags, errors, and a chat request over real HTTP. */
class ReplicaMainTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static String launchError(String... args) {
        ReplicaMain.LaunchException e = assertThrows(
                ReplicaMain.LaunchException.class,
                () -> ReplicaMain.launch(
                        args, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
        return e.status + " " + e.getMessage();
    }

    @Test
    void startsFromFlagsAndAnswersAChatRequestOverHttp() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (SimulatedReplicaServer server = ReplicaMain.launch(
                new String[] {"--port", "0", "--model", "m-test", "--blocks", "512", "--speedup", "1000", "--name", "r9"
                },
                new PrintStream(out, true, StandardCharsets.UTF_8))) {
            assertNotNull(server);
            String banner = out.toString(StandardCharsets.UTF_8);
            assertTrue(banner.startsWith("sim-replica r9 listening on " + server.baseUri()), banner);
            assertTrue(banner.contains("model m-test, 8,192-token cache"), banner);

            HttpClient http = HttpClient.newBuilder()
                    .connectTimeout(Duration.ofSeconds(10))
                    .build();
            String body = JSON.writeValueAsString(JSON.createObjectNode()
                    .put("model", "m-test")
                    .put("max_tokens", 4)
                    .set(
                            "messages",
                            JSON.createArrayNode()
                                    .add(JSON.createObjectNode()
                                            .put("role", "user")
                                            .put("content", Filler.text(5, 2000)))));
            JsonNode first = chat(http, server.baseUri(), body);
            JsonNode second = chat(http, server.baseUri(), body);
            assertEquals("chat.completion", first.path("object").asText());
            assertEquals("m-test", first.path("model").asText());
            int prompt = first.path("usage").path("prompt_tokens").asInt();
            assertTrue(prompt > 400, "prompt tokens " + prompt);
            assertEquals(
                    0,
                    first.path("usage")
                            .path("prompt_tokens_details")
                            .path("cached_tokens")
                            .asInt());
            assertTrue(
                    second.path("usage")
                                    .path("prompt_tokens_details")
                                    .path("cached_tokens")
                                    .asInt()
                            >= prompt - 16,
                    "the repeat is served from the prefix cache: " + second.path("usage"));

            HttpResponse<String> models = http.send(
                    HttpRequest.newBuilder(URI.create(server.baseUri() + "/v1/models"))
                            .timeout(Duration.ofSeconds(30))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(
                    "m-test",
                    JSON.readTree(models.body()).path("data").get(0).path("id").asText());
        }
    }

    private static JsonNode chat(HttpClient http, URI base, String body) throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                        .timeout(Duration.ofSeconds(60))
                        .header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("r9", r.headers().firstValue("x-sim-replica").orElse(""));
        return JSON.readTree(r.body());
    }

    @Test
    void theNameDefaultsToThePortGiven() throws Exception {
        assertEquals(
                "r-8123", ReplicaMain.parse(new String[] {"--port", "8123"}).name());
        assertEquals(
                "sim-replica", ReplicaMain.parse(new String[] {"--port", "0"}).name());
        assertEquals(
                "x", ReplicaMain.parse(new String[] {"--port=0", "--name=x"}).name());
        assertEquals(
                100 * 16,
                ReplicaMain.parse(new String[] {"--port", "0", "--blocks", "100"})
                        .cacheTokens());
        assertEquals(
                "0.0.0.0",
                ReplicaMain.parse(new String[] {"--host", "0.0.0.0", "--port", "0"})
                        .host());
    }

    @Test
    void helpPrintsUsageAndStartsNothing() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertNull(ReplicaMain.launch(
                new String[] {"--port", "1", "--help"}, new PrintStream(out, true, StandardCharsets.UTF_8)));
        String help = out.toString(StandardCharsets.UTF_8);
        assertTrue(help.startsWith("Usage: sim-replica --port PORT"), help);
        for (String flag : new String[] {"--port", "--host", "--model", "--blocks", "--speedup", "--name"}) {
            assertTrue(help.contains("  " + flag + " "), flag);
        }
    }

    @Test
    void badFlagsGetAClearErrorAndStatus2() {
        assertEquals("2 --port is required (0 picks any free port) (see --help)", launchError("--model", "x"));
        assertEquals("2 unknown option --prot (see --help)", launchError("--prot", "8000"));
        assertEquals("2 --port needs a value (see --help)", launchError("--port"));
        assertEquals("2 --port: not a whole number: http (see --help)", launchError("--port", "http"));
        assertEquals("2 --port: must be in [0, 65535], was 99999 (see --help)", launchError("--port", "99999"));
        assertEquals(
                "2 --blocks: must be in [1, 134217727], was 0 (see --help)",
                launchError("--port", "0", "--blocks", "0"));
        assertEquals("2 --speedup: not a number: fast (see --help)", launchError("--port=0", "--speedup=fast"));
        assertTrue(launchError("--port", "0", "--speedup", "-1").startsWith("2 --speedup: speedup must be positive"));
        assertEquals("2 --model: must not be empty (see --help)", launchError("--port", "0", "--model", " "));
    }

    @Test
    void aPortInUseSaysToPickAnother() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String err = launchError("--port", String.valueOf(taken.getLocalPort()));
            assertEquals(
                    "1 cannot listen on 127.0.0.1:" + taken.getLocalPort()
                            + ": Address already in use: pick another --port",
                    err);
        }
    }
}
