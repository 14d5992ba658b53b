package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.CompletionUsage;
import dev.cart.sim.SimulatedReplicaServer.Fault;
import dev.cart.sim.SimulatedReplicaServer.Options;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP replica on loopback: its API shapes, the OpenAI SDK as a client, and every fault. */
class SimulatedReplicaServerTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String LONG = Filler.text(99, 3000);

    private SimulatedReplicaServer server;
    private HttpClient http;

    @BeforeEach
    void start() throws IOException {
        server = SimulatedReplicaServer.start(
                Options.defaults().name("t").speedup(200).outputTokens(8));
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private URI uri(String path) {
        return URI.create(server.baseUri() + path);
    }

    private HttpResponse<String> post(String path, String body) throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(uri(path))
                        .timeout(Duration.ofSeconds(20))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(uri(path))
                        .timeout(Duration.ofSeconds(20))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static String chatBody(String content, int maxTokens, boolean stream) {
        return "{\"model\":\"m\",\"max_tokens\":" + maxTokens + ",\"stream\":" + stream
                + ",\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":"
                + JSON.valueToTree(content) + "}]}";
    }

    private OpenAIClient sdk() {
        return OpenAIOkHttpClient.builder()
                .baseUrl(server.baseUri() + "/v1")
                .apiKey("test-key")
                .maxRetries(0)
                .timeout(Duration.ofSeconds(20))
                .build();
    }

    @Test
    void theOpenAiSdkParsesACompletionAndItsUsage() {
        OpenAIClient client = sdk();
        ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
                .model("sim")
                .addSystemMessage(LONG)
                .addUserMessage("first question")
                .maxCompletionTokens(12)
                .build();
        ChatCompletion first = client.chat().completions().create(params);
        first.validate();
        assertEquals(1, first.choices().size());
        assertTrue(first.choices().get(0).message().content().orElseThrow().length() > 0);
        assertEquals(
                ChatCompletion.Choice.FinishReason.LENGTH,
                first.choices().get(0).finishReason());
        CompletionUsage u1 = first.usage().orElseThrow();
        assertEquals(12, u1.completionTokens());
        assertTrue(u1.promptTokens() > 750, "3000 characters of system prompt are about 750 tokens");
        assertEquals(0, u1.promptTokensDetails().orElseThrow().cachedTokens().orElseThrow());

        ChatCompletion second = client.chat()
                .completions()
                .create(params.toBuilder()
                        .messages(List.of())
                        .addSystemMessage(LONG)
                        .addUserMessage("another question")
                        .build());
        long cached = second.usage()
                .orElseThrow()
                .promptTokensDetails()
                .orElseThrow()
                .cachedTokens()
                .orElseThrow();
        assertTrue(cached >= 700 && cached % 16 == 0, "the shared system prompt is served from cache: " + cached);
    }

    @Test
    void theOpenAiSdkParsesAStreamedCompletionAndItsUsage() {
        OpenAIClient client = sdk();
        ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
                .model("sim")
                .addUserMessage(LONG)
                .maxCompletionTokens(10)
                .streamOptions(
                        ChatCompletionStreamOptions.builder().includeUsage(true).build())
                .build();
        StringBuilder text = new StringBuilder();
        List<ChatCompletionChunk> chunks = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream =
                client.chat().completions().createStreaming(params)) {
            stream.stream().forEach(c -> {
                c.validate();
                chunks.add(c);
                for (ChatCompletionChunk.Choice ch : c.choices()) {
                    ch.delta().content().ifPresent(text::append);
                }
            });
        }
        assertEquals(10, text.toString().split(" ").length, "one word per generated token");
        ChatCompletionChunk last = chunks.get(chunks.size() - 1);
        assertTrue(last.choices().isEmpty());
        CompletionUsage u = last.usage().orElseThrow();
        assertEquals(10, u.completionTokens());
        assertTrue(u.promptTokens() > 750);
        assertTrue(u.promptTokensDetails().orElseThrow().cachedTokens().isPresent());
        assertTrue(chunks.stream()
                .anyMatch(c -> !c.choices().isEmpty()
                        && c.choices().get(0).finishReason().isPresent()));
    }

    @Test
    void completionsAndModelsAndHealth() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"hello there\",\"max_tokens\":5}");
        assertEquals(200, r.statusCode());
        JsonNode n = JSON.readTree(r.body());
        assertEquals("text_completion", n.path("object").asText());
        assertEquals("length", n.path("choices").get(0).path("finish_reason").asText());
        assertEquals(5, n.path("usage").path("completion_tokens").asInt());
        assertTrue(n.path("usage").path("prompt_tokens_details").has("cached_tokens"));

        HttpResponse<String> noMax = post("/v1/completions", "{\"prompt\":\"hello there\"}");
        JsonNode m = JSON.readTree(noMax.body());
        assertEquals(8, m.path("usage").path("completion_tokens").asInt(), "the configured default length");
        assertEquals("stop", m.path("choices").get(0).path("finish_reason").asText());

        JsonNode models = JSON.readTree(get("/v1/models").body());
        assertEquals("list", models.path("object").asText());
        assertEquals("sim-llama-3.1-8b", models.path("data").get(0).path("id").asText());
        assertEquals(200, get("/health").statusCode());
        assertEquals(404, get("/nope").statusCode());
        assertEquals(2, server.requestCount(), "inference requests only");
    }

    @Test
    void aReplicaWithBasePathsAnswersUnderEachAndCountsProbes() throws Exception {
        server.close();
        server = SimulatedReplicaServer.start(Options.defaults().name("t").basePaths(3));
        assertEquals(200, get("/b/0/health").statusCode());
        assertEquals(200, get("/b/2/health").statusCode());
        assertEquals(200, get("/health").statusCode());
        assertEquals(404, get("/b/3/health").statusCode(), "only /b/0 to /b/2");
        assertEquals(
                "sim-llama-3.1-8b",
                JSON.readTree(get("/b/1/v1/models").body())
                        .path("data")
                        .get(0)
                        .path("id")
                        .asText());
        JsonNode counts = JSON.readTree(get("/sim/counts").body());
        assertEquals(3, counts.path("health").asInt(), "the three /health requests of its base URLs and root");
        assertEquals(1, counts.path("models").asInt());
    }

    @Test
    void anthropicMessagesWholeAndStreamed() throws Exception {
        String body = "{\"model\":\"claude-x\",\"max_tokens\":6,\"system\":" + JSON.valueToTree(LONG)
                + ",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}";
        JsonNode first = JSON.readTree(post("/v1/messages", body).body());
        assertEquals("message", first.path("type").asText());
        assertEquals("assistant", first.path("role").asText());
        assertEquals("claude-x", first.path("model").asText());
        assertEquals("text", first.path("content").get(0).path("type").asText());
        assertEquals("max_tokens", first.path("stop_reason").asText());
        assertEquals(6, first.path("usage").path("output_tokens").asInt());
        assertEquals(0, first.path("usage").path("cache_read_input_tokens").asInt());

        String streamed = body.replace("{\"model\"", "{\"stream\":true,\"model\"");
        HttpResponse<Stream<String>> r = http.send(
                HttpRequest.newBuilder(uri("/v1/messages"))
                        .POST(HttpRequest.BodyPublishers.ofString(streamed))
                        .build(),
                HttpResponse.BodyHandlers.ofLines());
        assertEquals("text/event-stream", r.headers().firstValue("Content-Type").orElse(""));
        List<String> events = new ArrayList<>();
        JsonNode start = null;
        JsonNode delta = null;
        for (Iterator<String> it = r.body().iterator(); it.hasNext(); ) {
            String line = it.next();
            if (line.startsWith("event: ")) {
                events.add(line.substring(7));
            } else if (line.startsWith("data: ")) {
                JsonNode d = JSON.readTree(line.substring(6));
                if (d.path("type").asText().equals("message_start")) {
                    start = d;
                } else if (d.path("type").asText().equals("message_delta")) {
                    delta = d;
                }
            }
        }
        assertEquals(List.of("message_start", "content_block_start", "ping"), events.subList(0, 3));
        assertEquals(
                List.of("content_block_stop", "message_delta", "message_stop"),
                events.subList(events.size() - 3, events.size()));
        assertEquals(6, events.stream().filter("content_block_delta"::equals).count());
        int cached = start.path("message")
                .path("usage")
                .path("cache_read_input_tokens")
                .asInt();
        assertTrue(cached > 700, "the system prompt is cached from the first call: " + cached);
        assertEquals(6, delta.path("usage").path("output_tokens").asInt());
        assertEquals("max_tokens", delta.path("delta").path("stop_reason").asText());
    }

    @Test
    void badRequestsGetOpenAiStyleErrors() throws Exception {
        HttpResponse<String> r = post("/v1/chat/completions", "{not json");
        assertEquals(400, r.statusCode());
        JsonNode e = JSON.readTree(r.body()).path("error");
        assertEquals("invalid_request_error", e.path("type").asText());
        assertEquals("invalid_json", e.path("code").asText());
        assertFalse(e.path("message").asText().isEmpty());

        JsonNode missing = JSON.readTree(
                        post("/v1/chat/completions", "{\"model\":\"m\"}").body())
                .path("error");
        assertEquals("missing_field", missing.path("code").asText());

        JsonNode anthropic = JSON.readTree(post("/v1/messages", "[1,2").body());
        assertEquals("error", anthropic.path("type").asText());
        assertEquals(
                "invalid_request_error", anthropic.path("error").path("type").asText());
        assertEquals("invalid_json", anthropic.path("error").path("code").asText());

        assertEquals(405, get("/v1/chat/completions").statusCode());
    }

    @Test
    void errorFaultsAnswerWithTheirStatus() throws Exception {
        server.setFault(Fault.ERROR_500);
        HttpResponse<String> r = post("/v1/chat/completions", chatBody("hi", 4, false));
        assertEquals(500, r.statusCode());
        assertEquals(
                "server_error",
                JSON.readTree(r.body()).path("error").path("type").asText());
        assertEquals(200, get("/health").statusCode(), "a failing replica can still look alive");

        server.setFault(Fault.ERROR_503);
        assertEquals(503, post("/v1/completions", "{\"prompt\":\"x\"}").statusCode());
        assertEquals(503, get("/health").statusCode());

        server.setFault(Fault.NONE);
        assertEquals(200, post("/v1/chat/completions", chatBody("hi", 4, false)).statusCode());
        assertEquals(Fault.NONE, server.fault());
        assertEquals(3, server.requestCount());
    }

    @Test
    void resetCutsAWholeResponse() {
        server.setFault(Fault.RESET);
        assertThrows(IOException.class, () -> post("/v1/chat/completions", chatBody("hi", 8, false)));
    }

    @Test
    void resetCutsAStreamInTheMiddle() throws Exception {
        server.setFault(Fault.RESET);
        String body = chatBody("hi", 8, true);
        byte[] raw;
        try (Socket socket = new Socket(server.baseUri().getHost(), server.port())) {
            socket.setSoTimeout(20_000);
            socket.getOutputStream()
                    .write(("POST /v1/chat/completions HTTP/1.1\r\nHost: replica\r\n"
                                    + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n"
                                    + body)
                            .getBytes(StandardCharsets.UTF_8));
            raw = socket.getInputStream().readAllBytes(); // until the server drops the connection
        }
        String got = new String(raw, StandardCharsets.UTF_8);
        assertTrue(got.startsWith("HTTP/1.1 200"), "the stream starts normally");
        assertTrue(got.contains("chat.completion.chunk"), "some chunks arrive before the cut");
        assertFalse(got.contains("[DONE]"), "the stream never finishes");
        assertFalse(got.endsWith("0\r\n\r\n"), "no terminating chunk: the connection was cut");
    }

    @Test
    void hangNeverAnswers() throws Exception {
        server.setFault(Fault.HANG);
        HttpRequest req = HttpRequest.newBuilder(uri("/v1/chat/completions"))
                .timeout(Duration.ofMillis(300))
                .POST(HttpRequest.BodyPublishers.ofString(chatBody("hi", 4, false)))
                .build();
        assertThrows(HttpTimeoutException.class, () -> http.send(req, HttpResponse.BodyHandlers.ofString()));
        HttpRequest health = HttpRequest.newBuilder(uri("/health"))
                .timeout(Duration.ofMillis(300))
                .GET()
                .build();
        assertThrows(HttpTimeoutException.class, () -> http.send(health, HttpResponse.BodyHandlers.ofString()));
        server.setFault(Fault.NONE);
        assertEquals(
                200,
                post("/v1/chat/completions", chatBody("hi", 4, false)).statusCode(),
                "a hanging request holds one thread, not the server");
    }

    @Test
    void slowAnswersInFullButStretched() throws Exception {
        server.setFault(Fault.SLOW);
        HttpResponse<String> r = post("/v1/chat/completions", chatBody(LONG, 4, true));
        assertEquals(200, r.statusCode());
        assertEquals("slow", r.headers().firstValue("x-sim-fault").orElse(""));
        assertTrue(r.body().contains("data: [DONE]"), "a slow answer is still a whole answer");
        assertEquals(4 + 1, r.body().split("\"content\":\"").length - 1, "role chunk and four tokens");
        // each event is delivered factor times as long after the request arrived as the engine produced it
        assertEquals(1_000 + 10 * 250, ReplicaHandler.stretched(1_000, 1_250, 10));
        assertEquals(1_000, ReplicaHandler.stretched(1_000, 1_000, 10));
    }
}
