package dev.cart.proxy;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.cart.proxy.http.Responses;
import dev.cart.proxy.upstream.ModelDiscovery;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small in-process replica on loopback for the proxy's integration tests. Speaks just enough of the
 * OpenAI and Anthropic APIs for the official SDKs (chat completions, completions, messages, streaming,
 * models), answers {@code /health}, echoes anything else, and can be told to fail, hang, or pause a
 * stream on a latch the test controls. Every answer names the replica, so a test sees who served it.
 */
final class ScriptedReplica implements AutoCloseable {

    record Recorded(String method, String path, String query, Headers headers, byte[] body) {
        String bodyText() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    final String name;
    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-replica");
        t.setDaemon(true);
        return t;
    });
    final List<Recorded> requests = new CopyOnWriteArrayList<>();
    final AtomicInteger healthProbes = new AtomicInteger();
    final AtomicInteger modelsCalls = new AtomicInteger();
    /** {@code GET /v1/models} requests of the proxy's model discovery (not in {@link #requests}). */
    final AtomicInteger discoveryCalls = new AtomicInteger();
    /** The {@code /v1/models} body (null: a 500 to discovery, the default list to clients). */
    volatile String modelsAnswer;

    /** When non-zero, every request except /health is answered with this status and a JSON error. */
    volatile int forcedStatus;

    volatile boolean healthy = true;
    /** When set, a stream sends its first chunk and then waits for this latch before the rest. */
    volatile CountDownLatch gate;
    /** Counted down when a stream has sent its first chunk. */
    volatile CountDownLatch firstChunkSent = new CountDownLatch(1);
    /** When true, requests get no answer at all until {@link #release} is counted down. */
    volatile boolean hangBeforeHeaders;
    /** When true, streams send one chunk and then wait for {@link #release}. */
    volatile boolean hangAfterFirstChunk;

    final CountDownLatch release = new CountDownLatch(1);
    /**
     * When set, each request (after it is recorded, before it is answered) waits for a permit of this
     * semaphore: a test lets requests finish one by one ({@code permits.release()}).
     */
    volatile java.util.concurrent.Semaphore permits;
    /** Content chunks per stream. */
    volatile int streamChunks = 3;
    /** Set when writing to the proxy failed (the proxy cancelled the upstream request). */
    volatile boolean writeFailed;
    /** Extra response headers on every answer. */
    final Headers extraResponseHeaders = new Headers();
    /** The answer's text; null for "Hello from NAME" (streamed in pieces). */
    volatile String reply;
    /** When set, chat answers carry this JSON as the assistant message's tool_calls. */
    volatile String toolCalls;
    /** Prompt tokens every answer reports. */
    volatile long usagePrompt = 5;
    /** Cached prompt tokens every answer reports; -1 leaves the field out. */
    volatile long usageCached = -1;
    /** The media type streams are sent with. */
    volatile String streamContentType = "text/event-stream";
    /** Every byte of the last streamed body, exactly as written. */
    volatile byte[] lastStream = new byte[0];

    private final ThreadLocal<java.io.ByteArrayOutputStream> streamed = new ThreadLocal<>();

    private ScriptedReplica(String name) throws IOException {
        this.name = name;
        this.modelsAnswer = modelsList(List.of("fake"));
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
    }

    static ScriptedReplica start(String name) throws IOException {
        return new ScriptedReplica(name);
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** Requests other than health probes. */
    int count() {
        return requests.size();
    }

    Recorded last() {
        return requests.get(requests.size() - 1);
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getRawPath();
            byte[] body = ex.getRequestBody().readAllBytes();
            if (path.equals("/health")) {
                healthProbes.incrementAndGet();
                send(ex, healthy ? 200 : 503, "application/json", "{\"status\":\"" + (healthy ? "ok" : "down") + "\"}");
                return;
            }
            if (path.equals("/v1/models")
                    && ModelDiscovery.USER_AGENT.equals(ex.getRequestHeaders().getFirst("User-Agent"))) {
                discoveryCalls.incrementAndGet();
                String listed = modelsAnswer;
                if (listed == null) {
                    send(ex, 500, "text/plain", "models unavailable");
                } else {
                    send(ex, 200, "application/json", listed);
                }
                return;
            }
            Headers copy = new Headers();
            copy.putAll(ex.getRequestHeaders());
            requests.add(
                    new Recorded(ex.getRequestMethod(), path, ex.getRequestURI().getRawQuery(), copy, body));
            if (hangBeforeHeaders) {
                await(release);
                return;
            }
            java.util.concurrent.Semaphore held = permits;
            if (held != null) {
                try {
                    held.tryAcquire(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            int forced = forcedStatus;
            if (forced != 0) {
                send(
                        ex,
                        forced,
                        "application/json",
                        "{\"error\":{\"message\":\"forced failure on " + name
                                + "\",\"type\":\"server_error\",\"code\":null,\"param\":null}}");
                return;
            }
            String text = new String(body, StandardCharsets.UTF_8);
            boolean stream = text.replace(" ", "").contains("\"stream\":true");
            switch (path) {
                case "/v1/chat/completions" -> {
                    if (stream) {
                        streamChat(ex, text.replace(" ", "").contains("\"include_usage\":true"));
                    } else {
                        send(ex, 200, "application/json", chatCompletion());
                    }
                }
                case "/v1/completions" ->
                    send(
                            ex,
                            200,
                            "application/json",
                            "{\"id\":\"cmpl-1\",\"object\":"
                                    + "\"text_completion\",\"created\":1700000000,\"model\":\"fake\",\"choices\":[{\"index\":0,"
                                    + "\"text\":\"Hello from " + name
                                    + "\",\"logprobs\":null,\"finish_reason\":\"stop\"}],"
                                    + "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}");
                case "/v1/messages" -> {
                    if (stream) {
                        streamMessages(ex);
                    } else {
                        send(ex, 200, "application/json", anthropicMessage());
                    }
                }
                case "/v1/models" -> {
                    modelsCalls.incrementAndGet();
                    send(
                            ex,
                            200,
                            "application/json",
                            modelsAnswer == null ? modelsList(List.of("fake")) : modelsAnswer);
                }
                default -> {
                    ex.getResponseHeaders().set("x-echo-method", ex.getRequestMethod());
                    send(
                            ex,
                            200,
                            "application/octet-stream",
                            "echo " + name + " " + ex.getRequestMethod() + " "
                                    + path
                                    + (ex.getRequestURI().getRawQuery() == null
                                            ? ""
                                            : "?" + ex.getRequestURI().getRawQuery())
                                    + " " + text);
                }
            }
        }
    }

    /** An OpenAI {@code /v1/models} body listing {@code ids}, each owned by this replica. */
    String modelsList(List<String> ids) {
        StringBuilder b = new StringBuilder("{\"object\":\"list\",\"data\":[");
        for (int i = 0; i < ids.size(); i++) {
            b.append(i == 0 ? "" : ",")
                    .append("{\"id\":\"")
                    .append(ids.get(i))
                    .append("\",\"object\":\"model\",\"created\":1700000000,\"owned_by\":\"")
                    .append(name)
                    .append("\"}");
        }
        return b.append("]}").toString();
    }

    private String replyText() {
        String r = reply;
        return r == null ? "Hello from " + name : r;
    }

    private static String quote(String s) {
        try {
            return Responses.JSON.writeValueAsString(s);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private String openAiUsage() {
        long cached = usageCached;
        return "{\"prompt_tokens\":" + usagePrompt + ",\"completion_tokens\":3,\"total_tokens\":" + (usagePrompt + 3)
                + (cached < 0 ? "" : ",\"prompt_tokens_details\":{\"cached_tokens\":" + cached + "}") + "}";
    }

    private String anthropicUsage(long output) {
        long cached = usageCached;
        return "{\"input_tokens\":" + (usagePrompt - Math.max(0, cached)) + ",\"output_tokens\":" + output
                + (cached < 0 ? "" : ",\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":" + cached) + "}";
    }

    private String chatCompletion() {
        String tools = toolCalls;
        return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"fake\","
                + "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":" + quote(replyText())
                + (tools == null ? ",\"tool_calls\":[]" : ",\"tool_calls\":" + tools)
                + "},\"finish_reason\":\"stop\",\"logprobs\":null}],"
                + "\"usage\":" + openAiUsage() + "}";
    }

    private String anthropicMessage() {
        return "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake\",\"content\":"
                + "[{\"type\":\"text\",\"text\":" + quote(replyText()) + "}],\"stop_reason\":\"end_turn\","
                + "\"stop_sequence\":null,\"usage\":" + anthropicUsage(3) + "}";
    }

    /** The reply cut into pieces of at most 7 characters, as a model streams tokens; made as they are used. */
    private java.util.Iterator<String> pieces() {
        String r = reply;
        int chunks = streamChunks;
        return new java.util.Iterator<>() {
            int i;

            @Override
            public boolean hasNext() {
                return r == null ? i <= chunks : i < r.length();
            }

            @Override
            public String next() {
                if (r == null) {
                    return i++ == 0 ? "Hello" : " from " + name + " " + (i - 2);
                }
                String p = r.substring(i, Math.min(r.length(), i + 7));
                i += 7;
                return p;
            }
        };
    }

    private static String chatChunk(String delta, String finish) {
        return "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                + "\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"finish_reason\":"
                + (finish == null ? "null" : "\"" + finish + "\"") + "}]}\n\n";
    }

    private void streamChat(HttpExchange ex, boolean includeUsage) throws IOException {
        ex.getResponseHeaders().putAll(extraResponseHeaders);
        ex.getResponseHeaders().set("Content-Type", streamContentType);
        ex.getResponseHeaders().set("Cache-Control", "no-cache");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        streamed.set(new java.io.ByteArrayOutputStream());
        try {
            java.util.Iterator<String> pieces = pieces();
            if (!write(out, chatChunk("{\"role\":\"assistant\",\"content\":" + quote(pieces.next()) + "}", null))) {
                return;
            }
            afterFirstChunk();
            while (pieces.hasNext()) {
                if (!write(out, chatChunk("{\"content\":" + quote(pieces.next()) + "}", null))) {
                    return;
                }
            }
            if (!write(out, chatChunk("{}", "stop"))) {
                return;
            }
            if (includeUsage) { // the usage chunk, written in three pieces that split its line
                String usage =
                        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                                + "\"model\":\"fake\",\"choices\":[],\"usage\":" + openAiUsage() + "}\n\n";
                int a = usage.length() / 3;
                if (!write(out, usage.substring(0, a))
                        || !write(out, usage.substring(a, 2 * a))
                        || !write(out, usage.substring(2 * a))) {
                    return;
                }
            }
            write(out, "data: [DONE]\n\n");
        } finally {
            lastStream = streamed.get().toByteArray();
            streamed.remove();
        }
    }

    private void streamMessages(HttpExchange ex) throws IOException {
        ex.getResponseHeaders().set("Content-Type", streamContentType);
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        if (!write(
                out,
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
                        + "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake\",\"content\":[],"
                        + "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":" + anthropicUsage(1) + "}}\n\n"
                        + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                        + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")) {
            return;
        }
        afterFirstChunk();
        java.util.Iterator<String> parts =
                reply == null ? List.of("Hello", " from ", name).iterator() : pieces();
        while (parts.hasNext()) {
            String p = parts.next();
            if (!write(
                    out,
                    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                            + "\"delta\":{\"type\":\"text_delta\",\"text\":" + quote(p) + "}}\n\n")) {
                return;
            }
        }
        write(
                out,
                "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                        + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
                        + "\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n"
                        + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    }

    private void afterFirstChunk() {
        firstChunkSent.countDown();
        CountDownLatch g = gate;
        if (g != null) {
            await(g);
        }
        if (hangAfterFirstChunk) {
            await(release);
        }
    }

    private boolean write(OutputStream out, String s) {
        try {
            byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
            java.io.ByteArrayOutputStream record = streamed.get();
            if (record != null && record.size() < 1024 * 1024) { // long streams are not kept whole
                record.write(bytes);
            }
            out.write(bytes);
            out.flush();
            return true;
        } catch (IOException e) {
            writeFailed = true;
            return false;
        }
    }

    private void send(HttpExchange ex, int status, String contentType, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().putAll(extraResponseHeaders);
        ex.getResponseHeaders().set("Content-Type", contentType);
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The replica process dies: every connection is closed first, then held requests are let go (they
     * find their connection gone). Unlike {@link #close()}, a held stream cannot finish in between.
     */
    void kill() {
        server.stop(0);
        close();
    }

    @Override
    public void close() {
        release.countDown();
        java.util.concurrent.Semaphore held = permits;
        if (held != null) {
            held.release(10_000);
        }
        CountDownLatch g = gate;
        if (g != null) {
            g.countDown();
        }
        server.stop(0);
        executor.shutdownNow();
    }
}
