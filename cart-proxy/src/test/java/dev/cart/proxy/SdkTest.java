package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.helpers.MessageAccumulator;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import org.junit.jupiter.api.Test;

/** The official OpenAI and Anthropic Java SDKs, pointed at the proxy, complete their calls. */
class SdkTest {

    @Test
    void openAiSdkChatCompletionsStreamingAndNot() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            OpenAIClient client = OpenAIOkHttpClient.builder()
                    .baseUrl(h.proxy.baseUri() + "/v1")
                    .apiKey("sk-test")
                    .maxRetries(0)
                    .build();
            try {
                ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
                        .model("fake")
                        .addSystemMessage("You are terse.")
                        .addUserMessage("Say hello")
                        .build();
                ChatCompletion completion = client.chat().completions().create(params);
                String text = completion.choices().get(0).message().content().orElse("");
                assertTrue(text.startsWith("Hello from r"), text);

                StringBuilder streamed = new StringBuilder();
                try (var stream = client.chat().completions().createStreaming(params)) {
                    stream.stream()
                            .forEach((ChatCompletionChunk chunk) -> chunk.choices()
                                    .forEach(c -> c.delta().content().ifPresent(streamed::append)));
                }
                assertTrue(streamed.toString().startsWith("Hello from r"), streamed.toString());
                assertTrue(streamed.toString().contains(" 2"), streamed.toString());
                assertEquals(2, h.replica(0).count() + h.replica(1).count());
            } finally {
                client.close();
            }
        }
    }

    @Test
    void anthropicSdkMessagesStreamingAndNot() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            AnthropicClient client = AnthropicOkHttpClient.builder()
                    .baseUrl(h.proxy.baseUri().toString())
                    .apiKey("sk-ant-test")
                    .maxRetries(0)
                    .build();
            try {
                MessageCreateParams params = MessageCreateParams.builder()
                        .model("fake")
                        .maxTokens(64)
                        .system("You are terse.")
                        .addUserMessage("Say hello")
                        .build();
                Message message = client.messages().create(params);
                String text = message.content().get(0).text().orElseThrow().text();
                assertTrue(text.startsWith("Hello from r"), text);

                MessageAccumulator acc = MessageAccumulator.create();
                try (StreamResponse<RawMessageStreamEvent> stream =
                        client.messages().createStreaming(params)) {
                    stream.stream().forEach(acc::accumulate);
                }
                String streamed =
                        acc.message().content().get(0).text().orElseThrow().text();
                assertTrue(streamed.startsWith("Hello from r"), streamed);
                assertEquals(2, h.replica(0).count() + h.replica(1).count());
                ScriptedReplica served = h.replica(0).count() > 0 ? h.replica(0) : h.replica(1);
                String credential = served.last().headers().getFirst("X-api-key") != null
                        ? served.last().headers().getFirst("X-api-key")
                        : served.last().headers().getFirst("Authorization");
                assertTrue(credential != null && credential.endsWith("sk-ant-test"), "credentials pass through");
            } finally {
                client.close();
            }
        }
    }
}
