package dev.cart.examples.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.helpers.MessageAccumulator;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.HttpResponseFor;
import com.openai.errors.InternalServerException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import dev.cart.gateway.CartGatewayRouting;
import dev.cart.gateway.CartPromptFilter;
import dev.cart.sim.SimulatedReplicaServer;
import dev.cart.sim.SimulatedReplicaServer.Fault;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.context.annotation.Import;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.PooledDataBuffer;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The example gateway, started on a free port with its demo replicas (simulated vLLM servers over HTTP on
 * loopback) behind {@code lb://llm}, driven by the official OpenAI and Anthropic Java SDKs: everything real, from
 * the SDK's HTTP client through Spring Cloud Gateway and CART to the replicas.
 */
@SpringBootTest(
        classes = GatewayExample.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "demo.replicas=4",
            "cart.max-body-bytes=1000000",
            // the example's CART route, plus one with the gateway's Retry filter (POST retried on 5xx)
            "spring.cloud.gateway.server.webflux.routes[0].id=llm",
            "spring.cloud.gateway.server.webflux.routes[0].uri=lb://llm",
            "spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/v1/**",
            "spring.cloud.gateway.server.webflux.routes[1].id=llm-retry",
            "spring.cloud.gateway.server.webflux.routes[1].uri=lb://llm",
            "spring.cloud.gateway.server.webflux.routes[1].predicates[0]=Path=/retry/v1/**",
            "spring.cloud.gateway.server.webflux.routes[1].filters[0]=StripPrefix=1",
            "spring.cloud.gateway.server.webflux.routes[1].filters[1].name=Retry",
            "spring.cloud.gateway.server.webflux.routes[1].filters[1].args.retries=2",
            "spring.cloud.gateway.server.webflux.routes[1].filters[1].args.methods=POST",
            "spring.cloud.gateway.server.webflux.routes[1].filters[1].args.series=SERVER_ERROR",
            // and a CART service without any instance
            "cart.services=llm,llm-empty",
            "spring.cloud.gateway.server.webflux.routes[2].id=llm-empty",
            "spring.cloud.gateway.server.webflux.routes[2].uri=lb://llm-empty",
            "spring.cloud.gateway.server.webflux.routes[2].predicates[0]=Path=/empty/v1/**",
            "spring.cloud.gateway.server.webflux.routes[2].filters[0]=StripPrefix=1",
            // and a route whose body another filter caches before CART reads it (CachingFilter below)
            "spring.cloud.gateway.server.webflux.routes[3].id=" + GatewayExampleTest.CACHED_ROUTE,
            "spring.cloud.gateway.server.webflux.routes[3].uri=lb://llm",
            "spring.cloud.gateway.server.webflux.routes[3].predicates[0]=Path=/cached/v1/**",
            "spring.cloud.gateway.server.webflux.routes[3].filters[0]=StripPrefix=1"
        })
@Import(GatewayExampleTest.CachingFilter.class)
@ActiveProfiles("demo")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayExampleTest {

    private static final String SERVICE = "llm";
    static final String CACHED_ROUTE = "llm-cached";

    /**
     * On {@link #CACHED_ROUTE}, caches the request body with the gateway's own {@code cacheRequestBody} before CART's
     * filter runs, as a route with a body-reading filter of its own does, and keeps each buffer it cached.
     */
    static final class CachingFilter implements GlobalFilter, Ordered {
        final Queue<DataBuffer> cached = new ConcurrentLinkedQueue<>();

        @Override
        public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
            Route route = exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_ROUTE_ATTR);
            if (route == null || !CACHED_ROUTE.equals(route.getId())) {
                return chain.filter(exchange);
            }
            return ServerWebExchangeUtils.cacheRequestBody(exchange, request -> {
                cached.add(exchange.getAttribute(ServerWebExchangeUtils.CACHED_REQUEST_BODY_ATTR));
                return chain.filter(exchange.mutate().request(request).build());
            });
        }

        @Override
        public int getOrder() {
            return CartPromptFilter.ORDER - 10;
        }
    }

    @LocalServerPort
    int port;

    @Autowired
    CartGatewayRouting routing;

    @Autowired
    DemoReplicas demo;

    @Autowired
    MeterRegistry registry;

    @Autowired
    CachingFilter cachingFilter;

    private OpenAIClient openai;

    @BeforeAll
    void client() {
        openai = OpenAIOkHttpClient.builder()
                .baseUrl("http://127.0.0.1:" + port + "/v1")
                .apiKey("sk-test")
                .maxRetries(0)
                .build();
    }

    @AfterAll
    void closeClient() {
        openai.close();
    }

    @AfterEach
    void nothingLeftInFlight() {
        for (SimulatedReplicaServer s : demo.servers()) {
            s.setFault(Fault.NONE);
        }
        await("in-flight back to 0", () -> routing.inFlight(SERVICE) == 0);
    }

    @Test
    void chatCompletionNotStreamed() {
        ChatCompletion c = openai.chat().completions().create(chat("You are terse. ".repeat(20), "Say hello", 16));
        assertFalse(c.choices().get(0).message().content().orElse("").isBlank());
        assertTrue(c.usage().isPresent());
    }

    @Test
    void chatCompletionStreamedWithUsageReadForFeedback() {
        double promptTokensBefore = sum("cart.cache.prompt.tokens");
        ChatCompletionCreateParams params = chat("You summarise news. ".repeat(30), "Summarise today", 16).toBuilder()
                .streamOptions(
                        ChatCompletionStreamOptions.builder().includeUsage(true).build())
                .build();
        StringBuilder text = new StringBuilder();
        long[] usagePrompt = {-1};
        try (var stream = openai.chat().completions().createStreaming(params)) {
            stream.stream().forEach((ChatCompletionChunk chunk) -> {
                chunk.choices().forEach(ch -> ch.delta().content().ifPresent(text::append));
                chunk.usage().ifPresent(u -> usagePrompt[0] = u.promptTokens());
            });
        }
        assertFalse(text.toString().isBlank());
        assertTrue(usagePrompt[0] > 0, "the stream carried usage");
        // the lease got the usage the stream's last chunk carried: prompt tokens counted by the feedback metric
        await("feedback recorded", () -> sum("cart.cache.prompt.tokens") >= promptTokensBefore + usagePrompt[0]);
    }

    @Test
    void completions() {
        Completion c = openai.completions()
                .create(CompletionCreateParams.builder()
                        .model(CompletionCreateParams.Model.of(DemoReplicas.MODEL))
                        .prompt("Once upon a time in a land far away, ".repeat(10))
                        .maxTokens(8)
                        .build());
        assertFalse(c.choices().get(0).text().isBlank());
    }

    @Test
    void anthropicMessagesStreamedAndNot() {
        AnthropicClient anthropic = AnthropicOkHttpClient.builder()
                .baseUrl("http://127.0.0.1:" + port)
                .apiKey("sk-ant-test")
                .maxRetries(0)
                .build();
        try {
            MessageCreateParams params = MessageCreateParams.builder()
                    .model(DemoReplicas.MODEL)
                    .maxTokens(16)
                    .system("You are a careful reviewer. ".repeat(20))
                    .addUserMessage("Review this")
                    .build();
            Message m = anthropic.messages().create(params);
            assertFalse(m.content().get(0).text().orElseThrow().text().isBlank());
            MessageAccumulator acc = MessageAccumulator.create();
            try (StreamResponse<RawMessageStreamEvent> stream =
                    anthropic.messages().createStreaming(params)) {
                stream.stream().forEach(acc::accumulate);
            }
            assertFalse(
                    acc.message().content().get(0).text().orElseThrow().text().isBlank());
        } finally {
            anthropic.close();
        }
    }

    @Test
    void repeatedPromptsStickToOneReplicaAndHitItsCache() {
        String system = "You are the support assistant of an online bookshop. ".repeat(30);
        Set<String> replicas = new HashSet<>();
        long cached = 0;
        for (int i = 0; i < 5; i++) {
            try (HttpResponseFor<ChatCompletion> r = openai.chat()
                    .completions()
                    .withRawResponse()
                    .create(chat(system, "Where is my order " + i + "?", 4))) {
                replicas.add(r.headers().values("x-sim-replica").get(0));
                if (i > 0) {
                    cached += r.parse()
                            .usage()
                            .orElseThrow()
                            .promptTokensDetails()
                            .orElseThrow()
                            .cachedTokens()
                            .orElse(0L);
                }
            }
        }
        assertEquals(1, replicas.size(), "a repeated prefix goes to the replica holding it: " + replicas);
        assertTrue(cached > 0, "the replica served the shared prefix from its cache");
    }

    @Test
    void differentPromptsSpreadOverReplicas() {
        Set<String> replicas = new HashSet<>();
        for (int i = 0; i < 16; i++) {
            String system = ("Persona " + i + ": you answer questions about topic " + i + ". ").repeat(20);
            try (HttpResponseFor<ChatCompletion> r =
                    openai.chat().completions().withRawResponse().create(chat(system, "Hi", 2))) {
                replicas.add(r.headers().values("x-sim-replica").get(0));
            }
        }
        assertTrue(replicas.size() >= 2, "unrelated prompts are spread: " + replicas);
    }

    @Test
    void badJsonGetsAnOpenAiStyle400AndNeverReachesAReplica() throws Exception {
        long before = requestsAtReplicas();
        HttpResponse<String> r = post("/v1/chat/completions", "{\"model\":\"demo\",\"messages\":[{\"role\":");
        assertEquals(400, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
        assertTrue(r.body().contains("\"type\":\"invalid_request_error\""), r.body());
        assertTrue(r.body().contains("\"code\":\"invalid_json\""), r.body());
        HttpResponse<String> wrongType =
                post("/v1/messages", "{\"model\":\"demo\",\"max_tokens\":1,\"messages\":\"x\"}");
        assertEquals(400, wrongType.statusCode());
        assertTrue(wrongType.body().contains("\"param\":\"messages\""), wrongType.body());
        assertEquals(before, requestsAtReplicas());
    }

    @Test
    void aBodyAnotherFilterCachedIsRoutedByItsKeyAndReleasedAtTheEnd() throws Exception {
        String system = "You review pull requests of a payments service. ".repeat(20);
        String body = "{\"model\":\"" + DemoReplicas.MODEL + "\",\"max_tokens\":4,\"messages\":[{\"role\":\"system\","
                + "\"content\":\"" + system + "\"},{\"role\":\"user\",\"content\":\"Review this\"}]}";
        Set<String> replicas = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> r = post("/cached/v1/chat/completions", body);
            assertEquals(200, r.statusCode(), r.body());
            replicas.add(r.headers().firstValue("x-sim-replica").orElseThrow());
        }
        assertEquals(1, replicas.size(), "the key was read from the cached body: the prompt sticks " + replicas);
        assertEquals(3, cachingFilter.cached.size());
        // the buffer the other filter cached is released when each exchange ends, whoever read it
        for (DataBuffer b : cachingFilter.cached) {
            if (b instanceof PooledDataBuffer pooled) {
                await("the cached body released", () -> !pooled.isAllocated());
            }
        }
    }

    @Test
    void tooLargeBodyGets413() throws Exception {
        String big = "{\"model\":\"demo\",\"prompt\":\"" + "x".repeat(1_100_000) + "\"}";
        HttpResponse<String> r = post("/v1/completions", big);
        assertEquals(413, r.statusCode());
        assertTrue(r.body().contains("\"code\":\"body_too_large\""), r.body());
    }

    @Test
    void noReplicaGetsAnOpenAiStyle503WithRetryAfter() throws Exception {
        HttpResponse<String> r = post(
                "/empty/v1/chat/completions",
                "{\"model\":\"demo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertEquals(503, r.statusCode(), r.body());
        assertEquals("1", r.headers().firstValue("retry-after").orElse(""));
        assertTrue(r.body().contains("\"code\":\"no_replica\""), r.body());
        assertEquals(
                1.0,
                registry.find("cart.requests.rejected")
                        .tags("service", "llm-empty", "cause", "no_replica")
                        .counter()
                        .count());
    }

    /**
     * The example's graceful-shutdown settings are in force (the drain itself is tested in the module's
     * GracefulShutdownTest), and the readiness probe the README points Kubernetes at answers while it runs.
     */
    @Test
    void gracefulShutdownIsConfiguredAndReadinessIsExposed(@Autowired org.springframework.core.env.Environment env)
            throws Exception {
        assertEquals("graceful", env.getProperty("server.shutdown"));
        assertEquals("30s", env.getProperty("spring.lifecycle.timeout-per-shutdown-phase"));
        HttpResponse<String> r = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health/readiness"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.body().contains("\"UP\""), r.body());
    }

    @Test
    void metricsShowInActuatorPrometheus() throws Exception {
        openai.chat().completions().create(chat("Metrics please. ".repeat(10), "hi", 2));
        HttpResponse<String> r = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        assertTrue(r.body().contains("cart_decisions_total{"), "decisions exported");
        assertTrue(r.body().contains("cart_requests_in_flight{service=\"llm\"}"), "in-flight gauge exported");
        assertTrue(r.body().contains("cart_upstream_requests_total{"), "lease outcomes exported");
    }

    @Test
    void clientLeavingMidStreamReleasesItsReplicaAndClosesTheLeaseAsCancelled() throws Exception {
        for (SimulatedReplicaServer s : demo.servers()) {
            s.setFault(Fault.SLOW); // a long answer, so the client leaves while it is still streaming
        }
        double cancelledBefore = sum("cart.upstream.requests", "outcome", "cancelled");
        double failedBefore = sum("cart.upstream.requests", "outcome", "failure");
        String body = "{\"model\":\"demo\",\"stream\":true,\"max_tokens\":2000,\"messages\":["
                + "{\"role\":\"user\",\"content\":\"" + "Write a long story. ".repeat(10) + "\"}]}";
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoLinger(true, 0); // the close resets the connection, as a client that crashed would
            socket.getOutputStream()
                    .write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                                    + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n"
                                    + body)
                            .getBytes(StandardCharsets.UTF_8));
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.startsWith("data: {")) {
                    break; // the first chunk of the answer arrived
                }
            }
            assertEquals(1, routing.inFlight(SERVICE), "the streaming request holds its slot");
        }
        await("in-flight back to 0 after the client left", () -> routing.inFlight(SERVICE) == 0);
        await(
                "the lease closed as cancelled",
                () -> sum("cart.upstream.requests", "outcome", "cancelled") > cancelledBefore);
        assertEquals(failedBefore, sum("cart.upstream.requests", "outcome", "failure"), "the replica is not blamed");
    }

    @Test
    void aRetryAfterA5xxExcludesTheFailedReplicaAndReleasesBothSlots() throws Exception {
        String body = "{\"model\":\"demo\",\"max_tokens\":2,\"messages\":[{\"role\":\"system\",\"content\":\""
                + "You retry politely. ".repeat(30) + "\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
        HttpResponse<String> first = post("/v1/chat/completions", body);
        assertEquals(200, first.statusCode());
        String holder = first.headers().firstValue("x-sim-replica").orElseThrow();
        SimulatedReplicaServer failing = demo.servers().stream()
                .filter(s -> s.name().equals(holder))
                .findFirst()
                .orElseThrow();
        failing.setFault(Fault.ERROR_500);
        double failedBefore = sum("cart.upstream.requests", "outcome", "failure");
        long before = failing.requestCount();

        HttpResponse<String> retried = post("/retry/v1/chat/completions", body);

        assertEquals(200, retried.statusCode(), retried.body());
        assertEquals(before + 1, failing.requestCount(), "the holder was tried first (its cache hit)");
        assertFalse(
                holder.equals(retried.headers().firstValue("x-sim-replica").orElse(holder)),
                "the retry went to another replica");
        await("in-flight back to 0", () -> routing.inFlight(SERVICE) == 0);
        assertEquals(failedBefore + 1, sum("cart.upstream.requests", "outcome", "failure"));
    }

    @Test
    void concurrentExchangesSomeAbandonedLeaveNothingInFlight() throws Exception {
        double closedBefore = sum("cart.upstream.requests");
        HttpClient http = HttpClient.newHttpClient();
        List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> answers = new java.util.ArrayList<>();
        for (int i = 0; i < 24; i++) {
            String body = "{\"model\":\"demo\",\"stream\":" + (i % 2 == 0) + ",\"max_tokens\":8,\"messages\":["
                    + "{\"role\":\"system\",\"content\":\"" + ("Tenant " + i % 3 + " rules. ").repeat(30) + "\"},"
                    + "{\"role\":\"user\",\"content\":\"question " + i + "\"}]}";
            answers.add(http.sendAsync(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                            .header("content-type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        int abandoned = 8;
        for (int i = 0; i < abandoned; i++) { // clients that leave as soon as the answer starts
            String body = "{\"model\":\"demo\",\"stream\":true,\"max_tokens\":400,\"messages\":[{\"role\":\"user\","
                    + "\"content\":\"" + "Leaving early. ".repeat(20) + i + "\"}]}";
            try (Socket socket = new Socket("127.0.0.1", port)) {
                socket.setSoLinger(true, 0);
                socket.getOutputStream()
                        .write(
                                ("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                                                + "Content-Length: " + body.length() + "\r\n\r\n" + body)
                                        .getBytes(StandardCharsets.UTF_8));
                BufferedReader in =
                        new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.startsWith("data: {")) {
                        break;
                    }
                }
            }
        }
        for (var a : answers) {
            try {
                assertEquals(
                        200, a.get(60, java.util.concurrent.TimeUnit.SECONDS).statusCode());
            } catch (java.util.concurrent.TimeoutException e) {
                Thread.getAllStackTraces().forEach((t, stack) -> { // what every thread was doing, for the report
                    System.err.println("THREAD " + t.getName() + " " + t.getState());
                    for (StackTraceElement f : stack) {
                        System.err.println("    at " + f);
                    }
                });
                fail("an answer did not come in 60 s; in flight " + routing.inFlightByReplica(SERVICE)
                        + ", requests at the replicas " + requestsAtReplicas() + ", answered "
                        + answers.stream()
                                .filter(java.util.concurrent.CompletableFuture::isDone)
                                .count() + " of 24");
            }
        }
        await("in-flight back to 0", () -> routing.inFlight(SERVICE) == 0);
        await("every lease closed", () -> sum("cart.upstream.requests") == closedBefore + 24 + abandoned);
    }

    @Test
    void replicaErrorsCloseLeasesAsFailed() {
        double failedBefore = sum("cart.upstream.requests", "outcome", "failure");
        for (SimulatedReplicaServer s : demo.servers()) {
            s.setFault(Fault.ERROR_500);
        }
        assertThrows(
                InternalServerException.class,
                () -> openai.chat().completions().create(chat("Errors ahead. ".repeat(10), "hi", 2)));
        await("in-flight back to 0", () -> routing.inFlight(SERVICE) == 0);
        assertEquals(failedBefore + 1, sum("cart.upstream.requests", "outcome", "failure"));
    }

    @Test
    void replicaResettingMidStreamClosesLeaseAsFailed() {
        double failedBefore = sum("cart.upstream.requests", "outcome", "failure");
        for (SimulatedReplicaServer s : demo.servers()) {
            s.setFault(Fault.RESET);
        }
        try (var stream = openai.chat().completions().createStreaming(chat("Resets ahead. ".repeat(10), "hi", 64))) {
            stream.stream().forEach(chunk -> {});
            fail("a stream cut by the replica must not end as complete");
        } catch (RuntimeException expected) {
            // the SDK reports the cut stream
        }
        await("in-flight back to 0", () -> routing.inFlight(SERVICE) == 0);
        await(
                "the lease closed as failed",
                () -> sum("cart.upstream.requests", "outcome", "failure") == failedBefore + 1);
    }

    // ---- helpers ----

    private static ChatCompletionCreateParams chat(String system, String user, long maxTokens) {
        return ChatCompletionCreateParams.builder()
                .model(DemoReplicas.MODEL)
                .addSystemMessage(system)
                .addUserMessage(user)
                .maxCompletionTokens(maxTokens)
                .build();
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                                .header("content-type", "application/json")
                                .timeout(Duration.ofSeconds(60))
                                .POST(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
    }

    private long requestsAtReplicas() {
        long n = 0;
        for (SimulatedReplicaServer s : demo.servers()) {
            n += s.requestCount();
        }
        return n;
    }

    private double sum(String counter, String... tags) {
        double total = 0;
        List<Counter> counters = List.copyOf(
                registry.find(counter).tags("service", SERVICE).tags(tags).counters());
        for (Counter c : counters) {
            total += c.count();
        }
        return total;
    }

    /** Polls {@code condition} until it holds, for at most 30 seconds. */
    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for: " + what);
            }
            LockSupport.parkNanos(2_000_000); // poll interval of a bounded wait on a condition
        }
        assertNotNull(what);
    }
}
