package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A replica that dies in the middle of a stream: the client gets an error event in its API's shape before the
 * connection closes, so the official SDKs raise an error instead of ending the stream as if it were whole.
 */
class StreamCutTest {

    private static final String CUT = "closed the connection in the middle of the stream";

    /** Kills {@code r} once it has sent its first chunk, from another thread (the test's thread is reading). */
    private static void killAfterFirstChunk(ScriptedReplica r) {
        r.hangAfterFirstChunk = true;
        Thread t = new Thread(() -> {
            try {
                if (r.firstChunkSent.await(30, TimeUnit.SECONDS)) {
                    r.kill();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        t.setDaemon(true);
        t.start();
    }

    /** Every message of {@code t} and its causes, as one string. */
    private static String messages(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append(" | ");
        }
        return b.toString();
    }

    @Test
    void theOpenAiSdkRaisesTheErrorOfAStreamCutByItsReplica() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            killAfterFirstChunk(h.replica(0));
            OpenAIClient client = OpenAIOkHttpClient.builder()
                    .baseUrl(h.proxy.baseUri() + "/v1")
                    .apiKey("sk-test")
                    .maxRetries(0)
                    .build();
            StringBuilder streamed = new StringBuilder();
            try {
                ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
                        .model("fake")
                        .addUserMessage("Say hello")
                        .build();
                Exception e = assertThrows(Exception.class, () -> {
                    try (var stream = client.chat().completions().createStreaming(params)) {
                        stream.stream()
                                .forEach((ChatCompletionChunk chunk) -> chunk.choices()
                                        .forEach(c -> c.delta().content().ifPresent(streamed::append)));
                    }
                });
                assertTrue(messages(e).contains(CUT), messages(e));
            } finally {
                client.close();
            }
            assertTrue(streamed.toString().startsWith("Hello"), "the first chunk arrived: " + streamed);
            assertFalse(streamed.toString().contains(" from r0"), streamed.toString());
        }
    }

    @Test
    void theAnthropicSdkRaisesTheErrorOfAStreamCutByItsReplica() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            killAfterFirstChunk(h.replica(0));
            AnthropicClient client = AnthropicOkHttpClient.builder()
                    .baseUrl(h.proxy.baseUri().toString())
                    .apiKey("sk-ant-test")
                    .maxRetries(0)
                    .build();
            List<RawMessageStreamEvent> events = new ArrayList<>();
            try {
                MessageCreateParams params = MessageCreateParams.builder()
                        .model("fake")
                        .maxTokens(64)
                        .addUserMessage("Say hello")
                        .build();
                Exception e = assertThrows(Exception.class, () -> {
                    try (StreamResponse<RawMessageStreamEvent> stream =
                            client.messages().createStreaming(params)) {
                        stream.stream().forEach(events::add);
                    }
                });
                assertTrue(messages(e).contains(CUT), messages(e));
            } finally {
                client.close();
            }
            assertTrue(events.stream().anyMatch(RawMessageStreamEvent::isMessageStart), events.toString());
            assertTrue(events.stream().noneMatch(RawMessageStreamEvent::isMessageStop), events.toString());
        }
    }

    @Test
    void theStreamEndsWithTheErrorEventAndIsNotFramedComplete() throws Exception {
        streamEndsWithTheErrorEvent("text/event-stream");
    }

    /** A media type is case-insensitive: a stream named in capitals is still a stream, cut as one. */
    @Test
    void aStreamWhoseMediaTypeIsWrittenInCapitalsIsCutAsAStream() throws Exception {
        streamEndsWithTheErrorEvent("Text/Event-Stream; charset=utf-8");
    }

    private static void streamEndsWithTheErrorEvent(String mediaType) throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            h.replica(0).streamContentType = mediaType;
            killAfterFirstChunk(h.replica(0));
            try (java.net.Socket s = h.raw(post(ProxyHarness.chat("Say hello", true)))) {
                String raw = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(raw.startsWith("HTTP/1.1 200 "), raw);
                String event = "data: {\"error\":{\"message\":\"the replica "
                        + h.replica(0).url() + " " + CUT
                        + "; the answer is incomplete\",\"type\":\"server_error\",\"code\":\"upstream_cut\"}}\n\n";
                assertTrue(raw.contains(event), raw);
                assertFalse(raw.contains("[DONE]"), raw);
                assertFalse(raw.endsWith("0\r\n\r\n"), "not framed as a complete answer: " + raw);
            }
        }
    }

    private static String post(String json) {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                + body.length + "\r\n\r\n" + json;
    }
}
