package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.models.messages.MessageCreateParams;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.upstream.HealthChecker;
import dev.cart.sim.SimulatedReplicaServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The proxy over simulated vLLM replicas serving different models, adapters loaded and unloaded at run
 * time, driven through the official OpenAI and Anthropic SDKs. Health cycles are run by the test
 * ({@link HealthChecker#probeAll()}), so "within one cycle" is exact and nothing sleeps; with
 * {@code health.models_interval_secs} equal to {@code interval_secs}, every cycle asks the models.
 */
class SimulatedModelsTest {

    private final List<AutoCloseable> open = new ArrayList<>();
    private ProxyServer proxy;

    @AfterEach
    void closeAll() throws Exception {
        if (proxy != null) {
            ManagedReplicaSet set = proxy.routing().replicas;
            ProxyHarness.await("no request left in flight", () -> set.totalInFlight() == 0);
            proxy.close();
        }
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private SimulatedReplicaServer sim(String name, String model, List<String> adapters) throws Exception {
        SimulatedReplicaServer s = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .name(name)
                .port(0)
                .model(model)
                .adapters(adapters)
                .strictModels(true)
                .speedup(200)
                .outputTokens(4));
        open.add(s);
        return s;
    }

    private void startProxy(SimulatedReplicaServer... sims) throws Exception {
        StringBuilder b = new StringBuilder(
                "server:\n  host: 127.0.0.1\n  port: 0\nhealth:\n  interval_secs: 10\n  models_interval_secs: 10\nworkers:\n");
        for (SimulatedReplicaServer s : sims) {
            b.append("  - url: ").append(s.baseUri()).append('\n');
        }
        proxy = ProxyServer.start(ConfigLoader.parse(b.toString()), new ProxyServer.Options().healthChecks(false));
    }

    private void healthCycle() throws Exception {
        proxy.routing().health.probeAll().get();
    }

    private OpenAIClient openAi() {
        OpenAIClient c = OpenAIOkHttpClient.builder()
                .baseUrl(proxy.baseUri() + "/v1")
                .apiKey("sk-test")
                .maxRetries(0)
                .build();
        open.add(c::close);
        return c;
    }

    private static void ask(OpenAIClient client, String model, int n) {
        for (int i = 0; i < n; i++) {
            var answer = client.chat()
                    .completions()
                    .create(ChatCompletionCreateParams.builder()
                            .model(model)
                            .addUserMessage("question " + i + " for " + model)
                            .maxCompletionTokens(4)
                            .build());
            assertEquals(model, answer.model());
        }
    }

    @Test
    void requestsReachOnlyReplicasServingTheirModelAndAnUnloadedAdapterStopsWithinOneCycle() throws Exception {
        SimulatedReplicaServer a = sim("a", "llama", List.of("llama-sql"));
        SimulatedReplicaServer b = sim("b", "llama", List.of("llama-sql"));
        SimulatedReplicaServer c = sim("c", "qwen", List.of());
        startProxy(a, b, c);
        healthCycle();
        assertEquals(
                Set.of("llama", "llama-sql"),
                proxy.routing()
                        .replicas
                        .member(a.baseUri().toString())
                        .orElseThrow()
                        .models());
        OpenAIClient client = openAi();
        ask(client, "llama-sql", 6);
        ask(client, "llama", 4);
        assertEquals(0, c.requestCount(), "the qwen replica got no llama request");
        assertEquals(10, a.requestCount() + b.requestCount());
        ask(client, "qwen", 3);
        assertEquals(3, c.requestCount());

        a.unloadAdapter("llama-sql");
        healthCycle();
        long before = a.requestCount();
        ask(client, "llama-sql", 6); // every one would be a 404 from replica a
        assertEquals(before, a.requestCount(), "replica a got a request for the adapter it unloaded");

        a.loadAdapter("llama-sql");
        b.unloadAdapter("llama-sql");
        healthCycle();
        long onB = b.requestCount();
        ask(client, "llama-sql", 4);
        assertEquals(onB, b.requestCount());

        // the pool's /v1/models: the union, each id once, the adapter with its parent
        var models = client.models().list();
        List<String> ids = new ArrayList<>();
        models.data().forEach(m -> ids.add(m.id()));
        assertEquals(List.of("llama", "llama-sql", "qwen"), ids);
    }

    @Test
    void anUnknownModelIsANotFoundErrorInBothSdks() throws Exception {
        SimulatedReplicaServer a = sim("a", "llama", List.of("llama-sql"));
        SimulatedReplicaServer c = sim("c", "qwen", List.of());
        startProxy(a, c);
        healthCycle();
        com.openai.errors.NotFoundException openAi = assertThrows(
                com.openai.errors.NotFoundException.class,
                () -> openAi().chat()
                        .completions()
                        .create(ChatCompletionCreateParams.builder()
                                .model("gpt-unknown")
                                .addUserMessage("hello")
                                .build()));
        assertEquals(404, openAi.statusCode());
        assertTrue(openAi.getMessage().contains("gpt-unknown"), openAi.getMessage());

        AnthropicClient anthropic = AnthropicOkHttpClient.builder()
                .baseUrl(proxy.baseUri().toString())
                .apiKey("sk-ant-test")
                .maxRetries(0)
                .build();
        open.add(anthropic::close);
        com.anthropic.errors.NotFoundException claude = assertThrows(
                com.anthropic.errors.NotFoundException.class,
                () -> anthropic
                        .messages()
                        .create(MessageCreateParams.builder()
                                .model("claude-unknown")
                                .maxTokens(8)
                                .addUserMessage("hello")
                                .build()));
        assertEquals(404, claude.statusCode());
        assertTrue(claude.getMessage().contains("claude-unknown"), claude.getMessage());
        assertEquals(0, a.requestCount() + c.requestCount(), "no replica saw the unknown models");
    }
}
