package dev.cart.examples.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.CacheFeedback;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.RoutingListener;
import dev.cart.sim.SimulatedReplicaServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The sample end to end, over HTTP, in front of simulated vLLM replicas on loopback. */
class SampleProxyTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final List<SimulatedReplicaServer> replicas = new ArrayList<>();
    private final List<RouteDecision> decisions = new CopyOnWriteArrayList<>();
    private final List<CacheFeedback> feedback = new CopyOnWriteArrayList<>();
    private final HttpClient http =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private SampleProxy proxy;

    @BeforeEach
    void start() throws Exception {
        List<String> urls = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            SimulatedReplicaServer r = SimulatedReplicaServer.start(
                    SimulatedReplicaServer.Options.defaults().name("sim-" + i).speedup(200));
            replicas.add(r);
            urls.add(r.baseUri().toString().replaceAll("/$", ""));
        }
        proxy = SampleProxy.start(0, urls, new RoutingListener() {
            @Override
            public void onDecision(RouteDecision decision) {
                decisions.add(decision);
            }

            @Override
            public void onCacheFeedback(RouteDecision decision, CacheFeedback f) {
                feedback.add(f);
            }
        });
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        replicas.forEach(SimulatedReplicaServer::close);
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.port() + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static ObjectNode chat(ArrayNode messages, boolean stream) {
        ObjectNode o = JSON.createObjectNode().put("model", "sim-llama-3.1-8b").put("stream", stream);
        o.set("messages", messages);
        if (stream) {
            o.putObject("stream_options").put("include_usage", true);
        }
        return o;
    }

    /** The assistant's text of an answer, JSON or streamed. */
    private static String reply(HttpResponse<String> r) throws Exception {
        if (!r.body().startsWith("data:")) {
            return JSON.readTree(r.body()).at("/choices/0/message/content").asText();
        }
        StringBuilder text = new StringBuilder();
        for (String line : r.body().split("\n")) {
            if (line.startsWith("data: {")) {
                JsonNode delta = JSON.readTree(line.substring(6)).at("/choices/0/delta/content");
                text.append(delta.isTextual() ? delta.asText() : "");
            }
        }
        return text.toString();
    }

    /**
     * Two turns of several conversations, streamed and not: each answer is relayed whole, the second turn goes to
     * the replica of the first and matches past the whole first prompt (the first answer was learned), the usage the
     * replicas report reaches the router as cache feedback, and no slot is left held.
     */
    @Test
    void aConversationsSecondTurnFollowsItsLearnedAnswer() throws Exception {
        String system = "You are the support assistant of an online bookshop. ".repeat(40);
        for (int c = 0; c < 4; c++) {
            boolean stream = c % 2 == 1;
            ArrayNode messages = JSON.createArrayNode();
            messages.addObject().put("role", "system").put("content", system + " Conversation " + c + ".");
            messages.addObject().put("role", "user").put("content", "Where is my order number " + c + "?");
            int before = decisions.size();
            HttpResponse<String> first = post("/v1/chat/completions", JSON.writeValueAsString(chat(messages, stream)));
            assertEquals(200, first.statusCode(), first.body());
            if (stream) {
                assertTrue(first.body().contains("data: [DONE]"), "the whole stream was relayed: " + first.body());
            }
            String answer = reply(first);
            assertTrue(!answer.isEmpty(), first.body());
            RouteDecision d1 = decisions.get(before);

            messages.addObject().put("role", "assistant").put("content", answer);
            messages.addObject().put("role", "user").put("content", "And when will it arrive?");
            HttpResponse<String> second = post("/v1/chat/completions", JSON.writeValueAsString(chat(messages, stream)));
            assertEquals(200, second.statusCode(), second.body());
            RouteDecision d2 = decisions.get(decisions.size() - 1);
            assertEquals(d1.replica(), d2.replica(), "the second turn goes where the first was served");
            assertTrue(
                    d2.matchedLength() > d1.keyLength(),
                    "the second turn matched its first prompt and the learned answer: " + d2.matchedLength() + " of "
                            + d2.keyLength() + ", the first prompt " + d1.keyLength());
        }
        assertTrue(feedback.size() >= 4, "the usage the replicas reported reached the router: " + feedback);
        assertEquals(0, proxy.replicas().totalInFlight(), "every lease closed");
    }

    @Test
    void badInputGetsTheApisOwnErrorShape() throws Exception {
        HttpResponse<String> openAi = post("/v1/chat/completions", "{\"model\":\"m\",\"messages\":\"not an array\"}");
        assertEquals(400, openAi.statusCode(), openAi.body());
        JsonNode e = JSON.readTree(openAi.body()).get("error");
        assertNotNull(e, openAi.body());
        assertEquals("invalid_request_error", e.get("type").asText());

        HttpResponse<String> anthropic = post("/v1/messages", "{");
        assertEquals(400, anthropic.statusCode(), anthropic.body());
        assertEquals("error", JSON.readTree(anthropic.body()).get("type").asText(), anthropic.body());

        HttpResponse<String> other = post("/v1/embeddings", "{}");
        assertEquals(404, other.statusCode(), other.body());
        assertEquals(0, proxy.replicas().totalInFlight());
    }
}
