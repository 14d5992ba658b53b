package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.config.ConfigException;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ModelsCache;
import dev.cart.proxy.http.Responses;
import dev.cart.proxy.observe.ModelLabels;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.upstream.ModelDiscovery;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Pools whose replicas serve different models: configured ({@code workers[].models}) or learned from each
 * replica's {@code GET /v1/models} on the health cycle; requests reach only replicas serving their model;
 * a model nobody serves is a 404 in the caller's API shape; {@code /v1/models} is the pool's union; the
 * per-model metrics keep a bounded label set.
 */
class ModelsTest {

    private static String chat(String model, String content) {
        return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}";
    }

    private static String messages(String model) {
        return "{\"model\":\"" + model + "\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    }

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        return Responses.JSON.readTree(r.body());
    }

    /** Sends {@code n} distinct chat requests for {@code model}; all must succeed. */
    private static void send(ProxyHarness h, String model, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            HttpResponse<String> r = h.post("/v1/chat/completions", chat(model, model + " question " + i));
            assertEquals(200, r.statusCode(), r.body());
        }
    }

    private static List<String> ids(JsonNode list) {
        List<String> out = new ArrayList<>();
        list.get("data").forEach(e -> out.add(e.get("id").asText()));
        return out;
    }

    @Test
    void configuredModelsAreParsedAndBadListsRefused() throws Exception {
        ProxyConfig c = ConfigLoader.parse(
                "workers:\n  - url: http://a:1\n    models: [llama, llama-sql, llama]\n  - url: http://b:1\n");
        assertEquals(List.of("llama", "llama-sql"), c.workers().get(0).models());
        assertEquals(List.of(), c.workers().get(1).models());
        assertEquals(List.of("llama", "llama-sql"), c.workers().get(0).spec().models());
        ConfigException empty = assertThrows(
                ConfigException.class, () -> ConfigLoader.parse("workers:\n  - url: http://a:1\n    models: []\n"));
        assertTrue(empty.getMessage().contains("workers[0].models: must name at least one model"), empty.getMessage());
        ConfigException notAString = assertThrows(
                ConfigException.class, () -> ConfigLoader.parse("workers:\n  - url: http://a:1\n    models: [a, 7]\n"));
        assertTrue(notAString.getMessage().contains("workers[0].models[1]"), notAString.getMessage());
        ProxyConfig any = ConfigLoader.parse("workers:\n  - url: http://a:1\n    models: [\"*\"]\n");
        assertTrue(any.workers().get(0).modelsConfigured(), "not discovered");
        assertEquals(List.of(), any.workers().get(0).spec().models(), "any model");
        ConfigException starAndMore = assertThrows(
                ConfigException.class,
                () -> ConfigLoader.parse("workers:\n  - url: http://a:1\n    models: [\"*\", a]\n"));
        assertTrue(starAndMore.getMessage().contains("only entry"), starAndMore.getMessage());
        ConfigException scalar = assertThrows(
                ConfigException.class, () -> ConfigLoader.parse("workers:\n  - url: http://a:1\n    models: llama\n"));
        assertTrue(scalar.getMessage().contains("must be a list of model names"), scalar.getMessage());
    }

    @Test
    void requestsReachOnlyReplicasServingTheirModelAndAnUnknownModelIsA404() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "models: [small]", "models: [large, large-sql]")) {
            send(h, "small", 6);
            assertEquals(6, h.replica(0).count());
            assertEquals(0, h.replica(1).count());
            send(h, "large-sql", 4);
            send(h, "large", 4);
            assertEquals(6, h.replica(0).count());
            assertEquals(8, h.replica(1).count());

            HttpResponse<String> unknown = h.post("/v1/chat/completions", chat("gpt-9", "hello"));
            assertEquals(404, unknown.statusCode());
            JsonNode err = json(unknown).get("error");
            assertEquals("model_not_found", err.get("code").asText());
            assertEquals("invalid_request_error", err.get("type").asText());
            assertEquals("model", err.get("param").asText());
            assertTrue(err.get("message").asText().contains("'gpt-9'"), err.toString());

            HttpResponse<String> anthropic = h.post("/v1/messages", messages("claude-9"));
            assertEquals(404, anthropic.statusCode());
            JsonNode a = json(anthropic);
            assertEquals("error", a.get("type").asText());
            assertEquals("not_found_error", a.get("error").get("type").asText());
            assertTrue(a.get("error").get("message").asText().contains("'claude-9'"));
            assertEquals(14, h.replica(0).count() + h.replica(1).count(), "a 404 reaches no replica");

            // a request naming no model goes anywhere, as before
            HttpResponse<String> none =
                    h.post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"no model\"}]}");
            assertEquals(200, none.statusCode());
        }
    }

    @Test
    void aServedModelWhoseReplicasAreAllDownIsA503NotA404() throws Exception {
        String yaml = "health:\n  failure_threshold: 1\n  success_threshold: 1\n";
        try (ProxyHarness h = ProxyHarness.start(2, yaml, "models: [small]", "models: [large]")) {
            h.replica(0).healthy = false;
            h.probe();
            HttpResponse<String> down = h.post("/v1/chat/completions", chat("small", "hello"));
            assertEquals(503, down.statusCode());
            assertEquals(
                    "no_replica_available", json(down).get("error").get("code").asText());
            assertEquals(0, h.replica(1).count(), "the replica of another model does not take it");
            assertEquals(
                    404, h.post("/v1/chat/completions", chat("medium", "hello")).statusCode());
        }
    }

    @Test
    void modelsAreLearnedFromEachReplicaAndAnUnloadedAdapterStopsWithinOneCycle() throws Exception {
        // models asked at every cycle (their interval is the probes'): see HealthCheckerTest for the cadence
        try (ProxyHarness h = ProxyHarness.start(3, "health:\n  interval_secs: 10\n  models_interval_secs: 10\n")) {
            h.replica(0).modelsAnswer = h.replica(0).modelsList(List.of("base", "base-sql"));
            h.replica(1).modelsAnswer = h.replica(1).modelsList(List.of("base", "base-sql"));
            h.replica(2).modelsAnswer = h.replica(2).modelsList(List.of("base"));
            // before any cycle, every replica serves any model: nothing is refused
            assertEquals(Set.of(), h.member(0).models());
            h.probe();
            assertEquals(Set.of("base", "base-sql"), h.member(0).models());
            assertEquals(Set.of("base"), h.member(2).models());
            send(h, "base-sql", 8);
            assertEquals(0, h.replica(2).count(), "the replica without the adapter got none of its requests");
            assertEquals(8, h.replica(0).count() + h.replica(1).count());

            // the adapter is unloaded from replica 0 at run time: after one cycle it gets none of its requests
            h.replica(0).modelsAnswer = h.replica(0).modelsList(List.of("base"));
            h.probe();
            int before0 = h.replica(0).count();
            int before1 = h.replica(1).count();
            send(h, "base-sql", 6);
            assertEquals(before0, h.replica(0).count());
            assertEquals(before1 + 6, h.replica(1).count());

            // unloaded everywhere: a 404, not a replica's own error
            h.replica(1).modelsAnswer = h.replica(1).modelsList(List.of("base"));
            h.probe();
            assertEquals(
                    404, h.post("/v1/chat/completions", chat("base-sql", "x")).statusCode());
            // loaded again on replica 2: found again within one cycle
            h.replica(2).modelsAnswer = h.replica(2).modelsList(List.of("base", "base-sql"));
            h.probe();
            send(h, "base-sql", 2);
            assertEquals(2, h.replica(2).count());

            // a replica whose /v1/models fails or is not a list keeps what it had
            h.replica(0).modelsAnswer = null;
            h.replica(1).modelsAnswer = "<html>busy</html>";
            h.probe();
            assertEquals(Set.of("base"), h.member(0).models());
            assertEquals(Set.of("base"), h.member(1).models());
            assertTrue(h.replica(0).discoveryCalls.get() >= 5);
        }
    }

    @Test
    void aReplicaThatNeverListedItsModelsServesAnyAndConfiguredModelsWinOverDiscovery() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "models: [small]")) {
            h.replica(0).modelsAnswer = h.replica(0).modelsList(List.of("large"));
            h.replica(1).modelsAnswer = null;
            h.probe();
            assertEquals(Set.of("small"), h.member(0).models(), "configured, so not discovered");
            assertEquals(0, h.replica(0).discoveryCalls.get());
            assertEquals(1, h.replica(1).discoveryCalls.get());
            assertEquals(Set.of(), h.member(1).models(), "never answered: any model");
            send(h, "whatever", 3);
            assertEquals(3, h.replica(1).count());
        }
    }

    @Test
    void aWorkerConfiguredToServeAnyModelIsNotAskedForItsModels() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "", "models: [\"*\"]")) {
            h.probe();
            assertEquals(0, h.replica(0).discoveryCalls.get());
            assertEquals(Set.of(), h.member(0).models());
            send(h, "default", 2); // SGLang, say, answers whatever model a request names
        }
    }

    @Test
    void aReloadThatChangesOnlyAWorkersModelsKeepsItsRoutesAndTakesTheNewList() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "models: [small]", "models: [large]")) {
            var before = h.member(0);
            ProxyConfig fresh = ConfigLoader.parse(h.yaml("", "models: [small, tiny]", "models: [large]"));
            assertTrue(h.proxy.reload(fresh).changed());
            assertTrue(before == h.member(0), "the same member: slots, circuit and routes kept");
            assertEquals(Set.of("small", "tiny"), h.member(0).models());
            send(h, "tiny", 2);
            assertEquals(2, h.replica(0).count());
        }
    }

    @Test
    void v1ModelsIsTheDeduplicatedUnionOfThePool() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(3, "")) {
            h.replica(0).modelsAnswer = h.replica(0).modelsList(List.of("base", "base-sql"));
            h.replica(1).modelsAnswer = h.replica(1).modelsList(List.of("base", "other"));
            h.replica(2).modelsAnswer = h.replica(2).modelsList(List.of("other"));
            HttpResponse<String> r = h.get("/v1/models");
            assertEquals(200, r.statusCode());
            JsonNode list = json(r);
            assertEquals("list", list.get("object").asText());
            assertEquals(List.of("base", "base-sql", "other"), ids(list));
            assertEquals("r0", list.get("data").get(0).get("owned_by").asText(), "the first replica's entry wins");
            assertEquals(r.body(), h.get("/v1/models").body());
            assertEquals(1, h.replica(2).modelsCalls.get(), "the union is cached");

            // one replica failing: the union of the others is answered but not cached
            h.clock.advance(ModelsCache.TTL);
            h.replica(2).forcedStatus = 500;
            assertEquals(List.of("base", "base-sql", "other"), ids(json(h.get("/v1/models"))));
            h.replica(2).forcedStatus = 0; // (a forced answer is not counted in modelsCalls)
            h.get("/v1/models");
            assertEquals(2, h.replica(2).modelsCalls.get(), "a partial union was not cached");
            h.get("/v1/models");
            assertEquals(2, h.replica(2).modelsCalls.get(), "a whole one is");
        }
    }

    @Test
    void modelsOnlyAReplicaListsBecomeMetricLabelsAndWorkersShowThem() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "models: [small]", "models: [large]")) {
            send(h, "small", 2);
            send(h, "large", 1);
            h.post("/v1/chat/completions", chat("made-up-1", "x"));
            h.post("/v1/chat/completions", chat("made-up-2", "x"));
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(2, m.sum("cart_model_decisions_total", "model", "small"));
            assertEquals(1, m.sum("cart_model_decisions_total", "model", "large"));
            assertEquals(2, m.value("cart_model_decisions_total", "model", "other", "reason", "model_not_served"));
            assertEquals(0, m.sum("cart_model_decisions_total", "model", "made-up-1"));

            JsonNode w = json(h.get("/workers"));
            assertEquals("small", w.get("workers").get(0).get("models").get(0).asText());
            assertEquals("large", w.get("workers").get(1).get("models").get(0).asText());
            assertEquals(2, w.get("models").get("small").get("decisions").asInt());
            assertEquals(1, w.get("models").get("large").get("decisions").asInt());
            assertTrue(w.get("models").get("made-up-1") == null);
        }
    }

    @Test
    void discoveryReadsTheIdsOfAnOpenAiModelList() {
        byte[] vllm = ("{\"object\":\"list\",\"data\":[{\"id\":\"base\",\"parent\":null},"
                        + "{\"id\":\"sql\",\"parent\":\"base\"},{\"id\":\"base\"},{\"id\":\" \"},{\"id\":7},{}]}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(List.of("base", "sql"), ModelDiscovery.modelIds(vllm));
        assertEquals(List.of(), ModelDiscovery.modelIds("[1,2]".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        assertEquals(
                List.of(), ModelDiscovery.modelIds("{\"data\":{}}".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        assertEquals(List.of(), ModelDiscovery.modelIds("not json".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        StringBuilder many = new StringBuilder("{\"data\":[");
        for (int i = 0; i < ProxyConfig.Worker.MAX_MODELS + 5; i++) {
            many.append(i == 0 ? "" : ",").append("{\"id\":\"m").append(i).append("\"}");
        }
        byte[] big = many.append("]}").toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(ProxyConfig.Worker.MAX_MODELS, ModelDiscovery.modelIds(big).size());
    }

    @Test
    void theModelLabelSetIsBounded() {
        ModelLabels labels = new ModelLabels();
        var set = dev.cart.core.ManagedReplicaSet.builder();
        List<String> many = new ArrayList<>();
        for (int i = 0; i < ModelLabels.MAX_LABELS + 10; i++) {
            many.add("m" + i);
        }
        var built = set.add(new dev.cart.core.ReplicaSpec("a", 1, 0, many)).build();
        for (String m : many) {
            labels.label(m, built);
        }
        assertEquals(ModelLabels.MAX_LABELS, labels.snapshot().size());
        assertEquals("m0", labels.label("m0", built));
        assertEquals(ProxyMetrics.OTHER, labels.label("m" + (ModelLabels.MAX_LABELS + 1), built));
        assertEquals(ProxyMetrics.NONE, labels.label(null, built));
    }
}
