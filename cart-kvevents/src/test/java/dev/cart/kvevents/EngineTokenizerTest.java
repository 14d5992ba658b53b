package dev.cart.kvevents;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The engine tokenize client against a real HTTP server on loopback. */
class EngineTokenizerTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void postsTheMessagesAndReadsTheTokensAndFailuresCountPerReplica() throws Exception {
        AtomicReference<String> mode = new AtomicReference<>("ok");
        AtomicReference<JsonNode> seen = new AtomicReference<>();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        server.createContext("/tokenize", ex -> {
            seen.set(JSON.readTree(ex.getRequestBody()));
            byte[] body;
            int status = 200;
            switch (mode.get()) {
                case "ok" ->
                    body = "{\"count\":3,\"max_model_len\":8192,\"tokens\":[128000,9906,0],\"token_strs\":null}"
                            .getBytes(StandardCharsets.UTF_8);
                case "garbage" -> body = "{\"count\":3}".getBytes(StandardCharsets.UTF_8);
                case "slow" -> {
                    try {
                        Thread.sleep(4_000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    body = "{}".getBytes(StandardCharsets.UTF_8);
                }
                default -> {
                    status = 500;
                    body = "{\"error\":{}}".getBytes(StandardCharsets.UTF_8);
                }
            }
            ex.sendResponseHeaders(status, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        server.start();
        String base = "http://127.0.0.1:" + server.getAddress().getPort();
        try {
            KvIndex index = KvIndex.builder().build();
            index.feed(KvStream.of(base, "tcp://unused:1", null, "m"), null);
            EngineTokenizer tok = EngineTokenizer.builder(index)
                    .timeout(Duration.ofMillis(1500))
                    .build();
            TokenizeRequest req = TokenizeRequest.of(
                    TokenizeRequest.Api.CHAT,
                    ("{\"model\":\"m\",\"cache_salt\":\"s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                                    + "\"tools\":[{\"type\":\"function\"}]}")
                            .getBytes(StandardCharsets.UTF_8));
            assertEquals("s", req.salt());
            PromptTokens ok = tok.tokenize(req, List.of(base));
            assertTrue(ok.ok(), ok.failure());
            assertArrayEquals(new int[] {128000, 9906, 0}, ok.tokens());
            JsonNode posted = seen.get();
            assertEquals("m", posted.get("model").asText());
            assertEquals("hi", posted.get("messages").get(0).get("content").asText());
            assertTrue(posted.has("tools"));
            assertFalse(posted.has("stream")); // only what the template needs

            for (String failing : new String[] {"garbage", "error", "slow"}) {
                mode.set(failing);
                PromptTokens f = tok.tokenize(req, List.of(base));
                assertFalse(f.ok(), failing);
            }
            assertEquals(ReplicaMode.APPROXIMATE, index.mode(base));
            assertEquals("tokenization failing", index.status(base).reason());
            mode.set("ok");
            assertTrue(tok.tokenize(req, List.of(base)).ok());
            assertEquals(0, index.entry(base).tokenizeFailures);
        } finally {
            server.stop(0);
        }
    }

    @Test
    void requestsThatCannotBeTokenizedAreRefusedClearly() {
        assertThrows(
                IllegalArgumentException.class,
                () -> TokenizeRequest.of(TokenizeRequest.Api.CHAT, "[1]".getBytes(StandardCharsets.UTF_8)));
        assertThrows(
                IllegalArgumentException.class,
                () -> TokenizeRequest.of(
                        TokenizeRequest.Api.COMPLETIONS, "{\"prompt\":[1,2]}".getBytes(StandardCharsets.UTF_8)));
        TokenizeRequest m = TokenizeRequest.of(
                TokenizeRequest.Api.MESSAGES,
                "{\"model\":\"c\",\"system\":\"be brief\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
                        .getBytes(StandardCharsets.UTF_8));
        assertTrue(new String(m.body(), StandardCharsets.UTF_8).contains("\"role\":\"system\""));
    }
}
