package dev.cart.examples.gateway;

import static dev.cart.examples.gateway.GatewayExampleTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.gateway.CartGatewayRouting;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.SimulatedReplicaServer.Fault;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;

/**
 * The example gateway with the admission queue on ({@code cart.flow.enabled}), over one demo replica with one
 * slot: a request that finds the slot taken waits (no thread parked) and is served when it frees; one that
 * cannot be served by its deadline gets 429 with {@code Retry-After} and an error in its API's shape; a
 * client that disconnects while queued leaves the queue at once; a bad flow header is a 400. The slot is held
 * by a request to a replica told to hang, released by closing that request's connection.
 */
@SpringBootTest(
        classes = GatewayExample.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "demo.replicas=1",
            "cart.max-load=1",
            "cart.flow.enabled=true",
            // long enough that only a cancellation, not the queue's own limit, takes a request out in these tests
            "cart.flow.max-wait-ms=600000",
            "cart.services=llm",
            "spring.cloud.gateway.server.webflux.routes[0].id=llm",
            "spring.cloud.gateway.server.webflux.routes[0].uri=lb://llm",
            "spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/v1/**"
        })
@ActiveProfiles("demo")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayFlowTest {

    private static final String SERVICE = "llm";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = "{\"model\":\"demo\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\","
            + "\"content\":\"" + "Queue politely. ".repeat(10) + "\"}]}";
    private static final String MESSAGES = "{\"model\":\"demo\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\","
            + "\"content\":\"" + "Queue politely. ".repeat(10) + "\"}]}";

    @LocalServerPort
    int port;

    @Autowired
    CartGatewayRouting routing;

    @Autowired
    DemoReplicas demo;

    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void nothingLeft() {
        replica().setFault(Fault.NONE);
        await("nothing queued", () -> routing.queued(SERVICE) == 0);
        await("nothing in flight", () -> routing.inFlight(SERVICE) == 0);
    }

    private SimulatedReplicaServer replica() {
        return demo.servers().get(0);
    }

    /**
     * Takes the only slot with a request the replica never answers (it hangs until the fault is lifted for
     * later requests and the socket closes, which frees the slot).
     */
    private Socket holdTheSlot() throws IOException {
        replica().setFault(Fault.HANG);
        long before = replica().requestCount();
        Socket s = send("/v1/chat/completions", CHAT, "");
        await("the slot taken", () -> routing.inFlight(SERVICE) == 1);
        await("the replica hangs on it", () -> replica().requestCount() > before);
        return s;
    }

    /** Sends a request on a raw connection and leaves it open (closing it resets the connection). */
    private Socket send(String path, String body, String extraHeaders) throws IOException {
        Socket socket = new Socket("127.0.0.1", port);
        socket.setSoLinger(true, 0); // the close resets the connection, as a client that went away would
        socket.getOutputStream()
                .write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                                + extraHeaders + "Content-Length: " + body.length() + "\r\n\r\n" + body)
                        .getBytes(StandardCharsets.UTF_8));
        socket.getOutputStream().flush();
        return socket;
    }

    private CompletableFuture<HttpResponse<String>> post(String path, String body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer sk-flow-test")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i + 1 < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aRequestFindingNoRoomWaitsAndIsServedWhenTheSlotFrees() throws Exception {
        Socket holder = holdTheSlot();
        CompletableFuture<HttpResponse<String>> waiting = post("/v1/chat/completions", CHAT);
        await("the request queued", () -> routing.queued(SERVICE) == 1);
        assertFalse(waiting.isDone(), "it waits instead of getting a 503");
        replica().setFault(Fault.NONE); // the next request is answered
        holder.close(); // the holder's client goes away: its lease closes and the slot goes to the queue
        HttpResponse<String> r = waiting.get(30, TimeUnit.SECONDS);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(0, routing.queued(SERVICE));
    }

    @Test
    void aRequestThatCannotBeServedByItsDeadlineGets429WithRetryAfterInItsApisShape() throws Exception {
        Socket holder = holdTheSlot();
        try {
            HttpResponse<String> openai = post("/v1/chat/completions", CHAT, "x-cart-deadline-ms", "200")
                    .get(30, TimeUnit.SECONDS);
            assertEquals(429, openai.statusCode(), openai.body());
            long retryAfter =
                    Long.parseLong(openai.headers().firstValue("Retry-After").orElseThrow());
            assertTrue(retryAfter >= 1 && retryAfter <= 60, "Retry-After " + retryAfter);
            JsonNode e = JSON.readTree(openai.body()).path("error");
            assertEquals("rate_limit_error", e.path("type").asText(), openai.body());
            assertTrue(
                    e.path("code").asText().equals("expired")
                            || e.path("code").asText().equals("deadline"),
                    openai.body());
            assertFalse(e.path("message").asText().isBlank());

            HttpResponse<String> anthropic = post(
                            "/v1/messages", MESSAGES, "x-cart-deadline-ms", "200", "anthropic-version", "2023-06-01")
                    .get(30, TimeUnit.SECONDS);
            assertEquals(429, anthropic.statusCode(), anthropic.body());
            assertTrue(anthropic.headers().firstValue("Retry-After").isPresent());
            JsonNode a = JSON.readTree(anthropic.body());
            assertEquals("error", a.path("type").asText(), anthropic.body());
            assertEquals("rate_limit_error", a.path("error").path("type").asText(), anthropic.body());
            assertFalse(a.path("error").path("message").asText().isBlank());
        } finally {
            holder.close();
        }
    }

    @Test
    void aClientThatDisconnectsWhileQueuedLeavesTheQueueAtOnce() throws Exception {
        Socket holder = holdTheSlot();
        Socket waiting = send("/v1/chat/completions", CHAT, "");
        await("the request queued", () -> routing.queued(SERVICE) == 1);
        waiting.close();
        // the queue's limit is ten minutes: only the cancellation takes it out
        await("the request left the queue", () -> routing.queued(SERVICE) == 0);
        assertEquals(1, routing.inFlight(SERVICE), "the holder still has its slot; the leaver never got one");
        replica().setFault(Fault.NONE);
        holder.close();
        await("the slot free", () -> routing.inFlight(SERVICE) == 0);
        HttpResponse<String> next = post("/v1/chat/completions", CHAT).get(30, TimeUnit.SECONDS);
        assertEquals(200, next.statusCode(), "the slot was not lost: " + next.body());
    }

    @Test
    void theQueueShowsInTheGatewaysMetrics() throws Exception {
        double queuedBefore = metric("cart_flow_queued_total", "band=\"1\"");
        double shedBefore = metric("cart_flow_shed_total", "band=\"1\"");
        double waitedBefore = metric("cart_flow_wait_seconds_count", "");
        Socket holder = holdTheSlot();
        CompletableFuture<HttpResponse<String>> waiting = post("/v1/chat/completions", CHAT);
        await("the request queued", () -> routing.queued(SERVICE) == 1);
        assertEquals(1.0, metric("cart_flow_queue_depth", "band=\"1\""), "the depth gauge reads the queue");
        assertEquals(0.0, metric("cart_flow_queue_depth", "band=\"0\""));
        HttpResponse<String> shed =
                post("/v1/chat/completions", CHAT, "x-cart-deadline-ms", "200").get(30, TimeUnit.SECONDS);
        assertEquals(429, shed.statusCode(), shed.body());
        replica().setFault(Fault.NONE);
        holder.close();
        assertEquals(200, waiting.get(30, TimeUnit.SECONDS).statusCode());
        // shed at once by the expected wait ("deadline"), or after waiting in the queue until its deadline
        // passed ("expired", when the queue has seen no slot free yet to estimate a wait from): then it queued too
        String code = JSON.readTree(shed.body()).path("error").path("code").asText();
        assertTrue(code.equals("deadline") || code.equals("expired"), shed.body());
        double shedQueued = code.equals("expired") ? 1 : 0;
        assertEquals(queuedBefore + 1 + shedQueued, metric("cart_flow_queued_total", "band=\"1\""));
        assertEquals(shedBefore + 1, metric("cart_flow_shed_total", "band=\"1\""));
        assertEquals(waitedBefore + 1, metric("cart_flow_wait_seconds_count", ""));
        assertEquals(0.0, metric("cart_flow_queue_depth", ""));
        String text = prometheus();
        assertTrue(text.contains("cart_flow_admitted_cost_total{service=\"llm\",tenant=\"t-"), text);
        assertFalse(text.contains("sk-flow-test"), "never a key");
    }

    private String prometheus() throws Exception {
        return http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** The sum of {@code name}'s series of this service whose labels contain {@code label}. */
    private double metric(String name, String label) throws Exception {
        double sum = 0;
        for (String line : prometheus().split("\n")) {
            if (line.startsWith(name + "{") && line.contains("service=\"" + SERVICE + "\"") && line.contains(label)) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    @Test
    void anUnusableDeadlineHeaderIs400NamingIt() throws Exception {
        HttpResponse<String> r =
                post("/v1/chat/completions", CHAT, "x-cart-deadline-ms", "soon").get(30, TimeUnit.SECONDS);
        assertEquals(400, r.statusCode(), r.body());
        JsonNode e = JSON.readTree(r.body()).path("error");
        assertEquals("invalid_request_error", e.path("type").asText());
        assertTrue(e.path("message").asText().contains("x-cart-deadline-ms"), r.body());
    }
}
