package dev.cart.ops;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Client traffic for the live check, over real HTTP to the proxies: chat conversations of many tenants,
 * each under its own system prompt, so that a tenant's first question is a miss and its next ones are
 * cache hits; a tenant's questions alternate between the proxies, so the second proxy hits on a route it
 * learned from the first through Redis. Every fifth request streams (with usage), every seventh uses the
 * Anthropic Messages API. {@link #oddRequests} adds what a pool also sees: a malformed body (400), an
 * unknown model (404), a request line over the limit (414), {@code GET /v1/models}.
 *
 * <p>Deterministic: no random choices, the tenants and questions follow a counter. The steady traffic runs
 * on its own threads until {@link #close}; the statuses received are counted by class.
 */
final class Replay implements AutoCloseable {

    static final String MODEL = "demo";
    /** Questions per tenant: the first is a miss, the others hit. */
    static final int TURNS = 6;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final List<URI> proxies;
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private final Map<String, AtomicLong> statuses = new ConcurrentHashMap<>();
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> workers = new ArrayList<>();

    Replay(List<URI> proxies) {
        this.proxies = List.copyOf(proxies);
    }

    /** Starts {@code threads} clients sending the steady traffic, each pausing {@code pauseMillis} between requests. */
    void startSteady(int threads, long pauseMillis) {
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(
                    () -> {
                        while (running.get()) {
                            steadyRequest(sequence.getAndIncrement());
                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(pauseMillis));
                        }
                    },
                    "replay-" + i);
            t.setDaemon(true);
            t.start();
            workers.add(t);
        }
    }

    /** Request {@code n} of the steady traffic. */
    private void steadyRequest(long n) {
        long tenant = n / TURNS;
        long turn = n % TURNS;
        URI proxy = proxies.get((int) (turn % proxies.size()));
        String question = "Question " + turn + " of tenant " + tenant + ": how do I rotate my API key?";
        if (n % 7 == 3) {
            messages(proxy, MODEL, system(tenant), question);
        } else {
            chat(proxy, MODEL, system(tenant), question, n % 5 == 4);
        }
    }

    /** The system prompt of a tenant: several 64-character blocks, the first already its own. */
    static String system(long tenant) {
        return "You are the support assistant of tenant " + tenant + " of Acme Cloud. Answer in two short "
                + "paragraphs, link the documentation page you used, never reveal internal ticket numbers or "
                + "customer names, and say so when a question is outside the product. Prefer the command line "
                + "over the console, name the regions a feature exists in, and end with one follow-up question.";
    }

    /** A chat completion; {@code stream} asks for server-sent events with usage in the last one. */
    int chat(URI proxy, String model, String system, String user, boolean stream) {
        ObjectNode body = JSON.createObjectNode().put("model", model).put("max_tokens", 16);
        body.putArray("messages")
                .add(JSON.createObjectNode().put("role", "system").put("content", system))
                .add(JSON.createObjectNode().put("role", "user").put("content", user));
        if (stream) {
            body.put("stream", true);
            body.putObject("stream_options").put("include_usage", true);
        }
        return post(proxy, "/v1/chat/completions", body.toString(), Map.of());
    }

    /** An Anthropic Messages request. */
    int messages(URI proxy, String model, String system, String user) {
        ObjectNode body = JSON.createObjectNode()
                .put("model", model)
                .put("max_tokens", 16)
                .put("system", system);
        body.putArray("messages")
                .add(JSON.createObjectNode().put("role", "user").put("content", user));
        return post(proxy, "/v1/messages", body.toString(), Map.of("anthropic-version", "2023-06-01"));
    }

    /** What else a pool sees: a malformed body, an unknown model, an over-long request line, the model list. */
    void oddRequests(URI proxy) {
        post(proxy, "/v1/chat/completions", "{\"model\": \"demo\", \"messages\": [", Map.of());
        chat(proxy, "no-such-model", system(-1), "Which model is this?", false);
        send(HttpRequest.newBuilder(proxy.resolve("/v1/models?pad=" + "x".repeat(9_000)))
                .GET());
        send(HttpRequest.newBuilder(proxy.resolve("/v1/models")).GET());
    }

    private int post(URI proxy, String path, String body, Map<String, String> headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(proxy.resolve(path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
        headers.forEach(b::header);
        return send(b);
    }

    /** Sends and reads the whole answer (a stream to its end); returns the status, 0 when none came. */
    private int send(HttpRequest.Builder request) {
        int status;
        try {
            HttpResponse<String> r = http.send(
                    request.timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            status = r.statusCode();
        } catch (IOException e) {
            status = 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            status = 0;
        }
        statuses.computeIfAbsent(status == 0 ? "none" : status / 100 + "xx", k -> new AtomicLong())
                .incrementAndGet();
        return status;
    }

    /** The statuses received so far by class ("2xx", ..., "none"). */
    Map<String, Long> statuses() {
        Map<String, Long> out = new TreeMap<>();
        statuses.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        for (Thread t : workers) {
            t.join(TimeUnit.SECONDS.toMillis(40));
        }
    }
}
