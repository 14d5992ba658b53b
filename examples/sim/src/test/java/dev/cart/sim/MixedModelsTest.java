package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The mixed-model pool: the simulation routes each request only to replicas serving its model, every
 * shipped baseline and cache_aware alike; a replica keeps each model's blocks apart; the simulated
 * replica serves a model set whose adapters load and unload at run time.
 */
class MixedModelsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static final MixedModels.Spec SMALL = new MixedModels.Spec(16, 3, 256, 16, 48, 16, 48);

    @Test
    void everyPolicyKeepsEveryRequestOnAReplicaServingItsModel() {
        Report.Settings s = Report.Settings.parse(new String[] {"--seeds", "1", "--threads", "1"});
        s.replicas = MixedModels.POOL.size();
        // check() inside run() throws if a request reached a replica not serving its model or was lost
        List<MixedModelReport.SeedRuns> runs = MixedModelReport.run(s, SMALL);
        assertEquals(1, runs.size());
        MixedModelReport.SeedRuns r = runs.get(0);
        assertEquals(3, r.runs().size());
        for (int v = 0; v < 3; v++) {
            assertEquals(SMALL.users() * SMALL.rounds(), r.runs().get(v).completed());
            assertEquals(
                    java.util.Set.of(MixedModels.LLAMA, MixedModels.LLAMA_SQL, MixedModels.QWEN),
                    r.modelHits().get(v).keySet());
        }
        String md = MixedModelReport.render(s, runs, 1.0);
        assertTrue(md.startsWith(MixedModelReport.BEGIN) && md.endsWith(MixedModelReport.END + "\n"), md);
    }

    @Test
    void theCheckCatchesARequestOnAReplicaNotServingItsModel() {
        Workload w = MixedModels.workload(1, SMALL);
        PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults());
        // every replica serving any model: the least-loaded policy spreads the Qwen users over Llama replicas
        RunResult r = Simulation.builder()
                .replicas(MixedModels.POOL.size())
                .policy("least_loaded", Map.of())
                .build()
                .run(p);
        assertThrows(IllegalStateException.class, () -> MixedModelReport.check(p, r));
    }

    @Test
    void aModelNoReplicaServesIsNotRouted() {
        Workload w = MixedModels.workload(1, SMALL);
        PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults());
        RunResult r = Simulation.builder()
                .replicas(2)
                .replicaModels(List.of(List.of(MixedModels.LLAMA), List.of(MixedModels.LLAMA)))
                .policy("cache_aware", Map.of())
                .build()
                .run(p);
        int notLlama = 0;
        for (String m : p.models) {
            notLlama += m.equals(MixedModels.LLAMA) ? 0 : 1;
        }
        assertEquals(notLlama, r.noReplica());
        assertEquals(notLlama, r.reasons().get(dev.cart.core.Reason.MODEL_NOT_SERVED));
    }

    @Test
    void aReplicaKeepsEachModelsBlocksApart() {
        long[] blocks = {1, 2, 3};
        long[] a = PreparedWorkload.salted(blocks, "a");
        long[] b = PreparedWorkload.salted(blocks, "b");
        for (int i = 0; i < 3; i++) {
            assertTrue(a[i] != b[i] && a[i] != blocks[i]);
        }
        assertEquals(a[1], PreparedWorkload.salted(blocks, "a")[1]);
    }

    @Test
    void theSectionReplacesItselfAndIsKeptByTheWholeReport() {
        String section = MixedModelReport.BEGIN + "\nv1\n" + MixedModelReport.END + "\n";
        String doc = MixedModelReport.withSection("# report\n\ntext\n", section);
        assertEquals("# report\n\ntext\n\n" + section, doc);
        String next = MixedModelReport.withSection(doc, section.replace("v1", "v2"));
        assertEquals("# report\n\ntext\n\n" + section.replace("v1", "v2"), next);
    }

    @Test
    void theSimulatedReplicaServesItsModelsAndAdaptersLoadedAtRunTime() throws Exception {
        try (SimulatedReplicaServer s = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                .port(0)
                .model("base")
                .adapters(List.of("sql"))
                .strictModels(true)
                .speedup(200)
                .outputTokens(2))) {
            HttpClient http = HttpClient.newHttpClient();
            assertEquals(List.of("base", "sql"), ids(http, s));
            JsonNode list =
                    JSON.readTree(get(http, s.baseUri().resolve("/v1/models")).body());
            assertEquals("base", list.get("data").get(1).get("parent").asText());
            assertEquals(200, chat(http, s, "sql").statusCode());
            assertEquals(200, chat(http, s, "base").statusCode());
            s.unloadAdapter("sql");
            assertEquals(List.of("base"), ids(http, s));
            HttpResponse<String> gone = chat(http, s, "sql");
            assertEquals(404, gone.statusCode());
            assertEquals(
                    "model_not_found",
                    JSON.readTree(gone.body()).get("error").get("code").asText());
            s.loadAdapter("python");
            assertEquals(List.of("base", "python"), ids(http, s));
            assertEquals(200, chat(http, s, "python").statusCode());
            // vLLM's run-time endpoints do the same over HTTP
            assertEquals(
                    200,
                    post(http, s, "/v1/load_lora_adapter", "{\"lora_name\":\"sql\",\"lora_path\":\"/a\"}")
                            .statusCode());
            assertEquals(
                    200,
                    post(http, s, "/v1/unload_lora_adapter", "{\"lora_name\":\"python\"}")
                            .statusCode());
            assertEquals(List.of("base", "sql"), ids(http, s));
            assertEquals(400, post(http, s, "/v1/load_lora_adapter", "{}").statusCode());
        }
    }

    @Test
    void theCommandLineLoadsAdaptersAndMakesModelsStrict() throws Exception {
        SimulatedReplicaServer.Options o = ReplicaMain.parse(
                new String[] {"--port", "0", "--model", "base", "--adapters", "sql, python", "--strict-models", "true"
                });
        try (SimulatedReplicaServer s =
                SimulatedReplicaServer.start(o.speedup(200).outputTokens(2))) {
            HttpClient http = HttpClient.newHttpClient();
            assertEquals(List.of("base", "sql", "python"), ids(http, s));
            assertEquals(404, chat(http, s, "other").statusCode());
        }
    }

    private static List<String> ids(HttpClient http, SimulatedReplicaServer s) throws Exception {
        List<String> out = new ArrayList<>();
        JSON.readTree(get(http, s.baseUri().resolve("/v1/models")).body())
                .get("data")
                .forEach(m -> out.add(m.get("id").asText()));
        return out;
    }

    private static HttpResponse<String> post(HttpClient http, SimulatedReplicaServer s, String path, String body)
            throws Exception {
        return http.send(
                HttpRequest.newBuilder(s.baseUri().resolve(path))
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(HttpClient http, URI uri) throws Exception {
        return http.send(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> chat(HttpClient http, SimulatedReplicaServer s, String model) throws Exception {
        return http.send(
                HttpRequest.newBuilder(s.baseUri().resolve("/v1/chat/completions"))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + model
                                + "\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
