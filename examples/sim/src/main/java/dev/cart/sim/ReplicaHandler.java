package dev.cart.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import dev.cart.sim.SimulatedReplicaServer.Fault;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The HTTP side of {@link SimulatedReplicaServer}: parses a request, queues it on the engine, and turns the
 * engine's events (admitted, one token, finished) into an OpenAI or Anthropic response, whole or as
 * server-sent events.
 *
 * <p>Design: the engine thread only offers events to the request's queue; the request's own thread
 * (one of the server's pool) takes them and writes. A fault is read once when the request arrives.
 * {@link Fault#SLOW} stretches the request's own timeline: an event the engine produced {@code t} after
 * the request arrived is delivered {@code slowFactor * t} after it. {@link Fault#RESET} writes part of
 * the response and then throws, which makes the JDK server drop the connection. A client that goes away
 * mid-stream (a failed write) aborts the request in the engine, as vLLM does. Thread-safe: no state of
 * its own beyond the server's.
 */
final class ReplicaHandler implements HttpHandler {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final SimulatedReplicaServer server;
    private final SimulatedReplicaServer.Options options;
    private final EngineConfig config;

    ReplicaHandler(SimulatedReplicaServer server, EngineConfig config) {
        this.server = server;
        this.options = server.options();
        this.config = config;
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        ex.getResponseHeaders().set("x-sim-replica", options.name());
        String path = withoutBasePath(ex.getRequestURI().getPath());
        String method = ex.getRequestMethod();
        switch (path) {
            case "/health" -> {
                server.countHealthRequest();
                health(ex, method);
            }
            case "/v1/models" -> {
                server.countModelsRequest();
                models(ex, method);
            }
            case "/sim/counts" -> counts(ex);
            case "/v1/load_lora_adapter", "/v1/unload_lora_adapter" -> adapter(ex, method, path);
            case "/tokenize" -> tokenize(ex, method);
            default -> {
                Optional<Endpoint> ep = Endpoint.forPath(path);
                if (ep.isPresent()) {
                    inference(ex, ep.get(), method);
                } else {
                    ex.getRequestBody().readAllBytes();
                    sendError(ex, null, 404, "not_found", "no route for " + method + " " + path);
                }
            }
        }
    }

    /** {@code path} without a {@code /b/K} prefix of one of the replica's base URLs ({@link SimulatedReplicaServer.Options#basePaths}). */
    private String withoutBasePath(String path) {
        if (options.basePaths() == 0 || !path.startsWith("/b/")) {
            return path;
        }
        int end = path.indexOf('/', 3);
        if (end < 0) {
            return path;
        }
        try {
            int k = Integer.parseInt(path.substring(3, end));
            return k >= 0 && k < options.basePaths() ? path.substring(end) : path;
        } catch (NumberFormatException e) {
            return path;
        }
    }

    // ------------------------------------------------------------------------------------------------
    // small endpoints

    private void health(HttpExchange ex, String method) throws IOException {
        ex.getRequestBody().readAllBytes();
        if (!method.equals("GET") && !method.equals("HEAD")) {
            sendError(ex, null, 405, "method_not_allowed", "use GET /health");
            return;
        }
        switch (server.fault()) {
            case ERROR_503 -> sendError(ex, null, 503, "service_unavailable", "the replica is unavailable");
            case HANG -> hang();
            default -> {
                ex.sendResponseHeaders(200, -1);
                ex.close();
            }
        }
    }

    /** How many health and models requests the replica has had: {@code {"health": N, "models": M}}. */
    private void counts(HttpExchange ex) throws IOException {
        ex.getRequestBody().readAllBytes();
        ObjectNode root = JSON.createObjectNode();
        root.put("health", server.healthRequestCount());
        root.put("models", server.modelsRequestCount());
        sendJson(ex, 200, root);
    }

    private void models(HttpExchange ex, String method) throws IOException {
        ex.getRequestBody().readAllBytes();
        if (!method.equals("GET")) {
            sendError(ex, null, 405, "method_not_allowed", "use GET /v1/models");
            return;
        }
        ObjectNode root = JSON.createObjectNode();
        root.put("object", "list");
        var data = root.putArray("data");
        ObjectNode m = data.addObject();
        m.put("id", options.model());
        m.put("object", "model");
        m.put("created", System.currentTimeMillis() / 1000);
        m.put("owned_by", "cart-sim");
        m.put("root", options.model());
        m.putNull("parent");
        m.put("max_model_len", config.effectiveMaxModelLen());
        for (String adapter : server.adapters()) { // as vLLM lists a LoRA adapter: its own id, the base as parent
            ObjectNode a = data.addObject();
            a.put("id", adapter);
            a.put("object", "model");
            a.put("created", System.currentTimeMillis() / 1000);
            a.put("owned_by", "cart-sim");
            a.put("root", "/adapters/" + adapter);
            a.put("parent", options.model());
            a.put("max_model_len", config.effectiveMaxModelLen());
        }
        sendJson(ex, 200, root);
    }

    /**
     * vLLM's run-time adapter endpoints ({@code VLLM_ALLOW_RUNTIME_LORA_UPDATING}): a body
     * {@code {"lora_name": ..., "lora_path": ...}} loads an adapter, {@code {"lora_name": ...}} unloads it.
     */
    private void adapter(HttpExchange ex, String method, String path) throws IOException {
        byte[] body = ex.getRequestBody().readAllBytes();
        if (!method.equals("POST")) {
            sendError(ex, null, 405, "method_not_allowed", "use POST " + path);
            return;
        }
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            root = null;
        }
        JsonNode name = root == null ? null : root.get("lora_name");
        if (name == null || !name.isTextual() || name.asText().isBlank()) {
            sendError(ex, null, 400, "missing_field", "'lora_name' is required");
            return;
        }
        boolean load = path.equals("/v1/load_lora_adapter");
        try {
            if (load) {
                server.loadAdapter(name.asText());
            } else {
                server.unloadAdapter(name.asText());
            }
        } catch (IllegalArgumentException e) {
            sendError(ex, null, 400, "invalid_value", e.getMessage());
            return;
        }
        byte[] text = ("Success: LoRA adapter '" + name.asText() + "' " + (load ? "added" : "removed")
                        + " successfully.")
                .getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        ex.sendResponseHeaders(200, text.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(text);
        }
    }

    /**
     * vLLM's {@code POST /tokenize}: the token ids of {@code messages} (the chat template applied, its markers
     * special tokens) or of {@code prompt}, as the replica computes them: {@code {"count", "max_model_len",
     * "tokens", "token_strs"}}.
     */
    private void tokenize(HttpExchange ex, String method) throws IOException {
        byte[] body = ex.getRequestBody().readAllBytes();
        if (!method.equals("POST")) {
            sendError(ex, null, 405, "method_not_allowed", "use POST /tokenize");
            return;
        }
        int[] tokens;
        try {
            JsonNode root = JSON.readTree(body);
            if (root == null || !root.isObject()) {
                throw new BadRequest("invalid_type", "request body must be a JSON object");
            }
            List<Message> messages = root.has("messages") ? messages(root.get("messages"), "messages") : null;
            String prompt = messages == null ? completionPrompt(root.get("prompt")) : null;
            tokens = server.tokens(messages, prompt);
        } catch (BadRequest e) {
            sendError(ex, null, 400, e.code, e.getMessage());
            return;
        } catch (IOException e) {
            sendError(ex, null, 400, "invalid_json", "request body is not valid JSON");
            return;
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("count", tokens.length).put("max_model_len", config.effectiveMaxModelLen());
        var arr = out.putArray("tokens");
        for (int t : tokens) {
            arr.add(t);
        }
        out.putNull("token_strs");
        sendJson(ex, 200, out);
    }

    private void hang() throws IOException {
        server.awaitClose();
        throw new IOException("replica closed while a request was hanging");
    }

    // ------------------------------------------------------------------------------------------------
    // inference

    /** A request as parsed: what the engine needs and how to answer. */
    private record Parsed(
            Endpoint endpoint,
            String model,
            String prompt,
            int maxTokens,
            boolean explicitMax,
            boolean stream,
            boolean includeUsage,
            List<Message> messages,
            String completionPrompt,
            String salt) {}

    /** A request body the replica refuses, with its OpenAI error code. */
    private static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;
        final String code;

        BadRequest(String code, String message) {
            super(message, null, false, false);
            this.code = code;
        }
    }

    private void inference(HttpExchange ex, Endpoint ep, String method) throws IOException {
        byte[] body = ex.getRequestBody().readAllBytes();
        if (!method.equals("POST")) {
            sendError(ex, ep, 405, "method_not_allowed", "use POST " + ep.path());
            return;
        }
        server.countRequest();
        Fault fault = server.fault();
        if (fault != Fault.NONE) {
            ex.getResponseHeaders().set("x-sim-fault", fault.name().toLowerCase(java.util.Locale.ROOT));
        }
        switch (fault) {
            case ERROR_500 -> {
                sendError(ex, ep, 500, "internal_error", "simulated internal server error");
                return;
            }
            case ERROR_503 -> {
                sendError(ex, ep, 503, "service_unavailable", "simulated overload: the replica is unavailable");
                return;
            }
            case HANG -> hang();
            default -> {}
        }
        Parsed p;
        try {
            p = parse(ep, body);
        } catch (BadRequest e) {
            sendError(ex, ep, 400, e.code, e.getMessage());
            return;
        }
        if (!server.serves(p.model())) {
            // vLLM's answer for a model it does not serve (an adapter not loaded, say)
            sendError(ex, ep, 404, "model_not_found", "The model `" + p.model() + "` does not exist.");
            return;
        }
        Call call = new Call(fault == Fault.SLOW ? options.slowFactor() : 1.0);
        EngineRequest r;
        ReplicaKvEvents kv = server.kv();
        if (kv != null) { // precise mode: real tokens, the replica's own hashes, published as events
            int[] tokens = kv.tokens(p.messages(), p.completionPrompt());
            String lora = p.model().equals(options.model()) ? null : p.model();
            r = new EngineRequest(kv.blocks(tokens, lora, p.salt()), tokens.length, p.maxTokens(), call);
            r.tokens = tokens;
            r.lora = lora;
            r.salt = p.salt();
        } else {
            PromptKey key = PromptKey.ofText(p.prompt(), config.blockChars());
            long[] blocks = new long[key.blockCount()];
            for (int i = 0; i < blocks.length; i++) {
                blocks[i] = key.blockHash(i);
            }
            if (!p.model().equals(options.model())) {
                blocks = PreparedWorkload.salted(blocks, p.model()); // an adapter's KV blocks are its own
            }
            r = new EngineRequest(blocks, config.tokensOf(p.prompt().length()), p.maxTokens(), call);
        }
        call.request = r;
        server.engine().submit(r);
        if (r.rejected) {
            if (server.isClosed()) {
                throw new IOException("replica closed");
            }
            Event e = call.events.poll();
            sendError(ex, ep, 400, "context_length_exceeded", e == null ? "request refused" : e.message);
            return;
        }
        long seed = Filler.seed(p.prompt().hashCode(), p.prompt().length());
        try {
            if (p.stream()) {
                stream(ex, p, call, seed, fault == Fault.RESET);
            } else {
                complete(ex, p, call, seed, fault == Fault.RESET);
            }
        } catch (IOException | RuntimeException e) {
            server.engine().abort(r);
            throw e;
        }
    }

    private Parsed parse(Endpoint ep, byte[] body) throws BadRequest {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            throw new BadRequest("invalid_json", "request body is not valid JSON");
        }
        if (root == null || !root.isObject()) {
            throw new BadRequest("invalid_type", "request body must be a JSON object");
        }
        String model = root.path("model").isTextual() ? root.get("model").asText() : options.model();
        boolean stream = root.path("stream").asBoolean(false);
        boolean includeUsage = root.path("stream_options").path("include_usage").asBoolean(false);
        JsonNode mt = root.get("max_completion_tokens");
        if (mt == null || mt.isNull()) {
            mt = root.get("max_tokens");
        }
        int maxTokens = options.outputTokens();
        boolean explicit = false;
        if (mt != null && !mt.isNull()) {
            if (!mt.isIntegralNumber() || !mt.canConvertToInt() || mt.asInt() < 1) {
                throw new BadRequest("invalid_value", "max_tokens must be a positive integer");
            }
            maxTokens = mt.asInt();
            explicit = true;
        }
        List<Message> chat = null;
        String completion = null;
        switch (ep) {
            case COMPLETIONS -> completion = completionPrompt(root.get("prompt"));
            case CHAT_COMPLETIONS -> chat = messages(root.get("messages"), "messages");
            case MESSAGES -> {
                chat = new ArrayList<>();
                JsonNode system = root.get("system");
                if (system != null && !system.isNull()) {
                    chat.add(Message.system(content(system, "system")));
                }
                chat.addAll(messages(root.get("messages"), "messages"));
            }
        }
        String prompt = chat != null ? ChatTemplate.render(chat) : ChatTemplate.renderCompletion(completion);
        String salt =
                root.path("cache_salt").isTextual() ? root.get("cache_salt").asText() : null;
        return new Parsed(ep, model, prompt, maxTokens, explicit, stream, includeUsage, chat, completion, salt);
    }

    private static String completionPrompt(JsonNode prompt) throws BadRequest {
        if (prompt == null || prompt.isNull()) {
            throw new BadRequest("missing_field", "'prompt' is required");
        }
        if (prompt.isTextual()) {
            return prompt.asText();
        }
        if (prompt.isArray() && prompt.size() == 1 && prompt.get(0).isTextual()) {
            return prompt.get(0).asText();
        }
        throw new BadRequest("invalid_type", "'prompt' must be a string (batched or token prompts are not simulated)");
    }

    private static List<Message> messages(JsonNode messages, String field) throws BadRequest {
        if (messages == null || messages.isNull()) {
            throw new BadRequest("missing_field", "'" + field + "' is required");
        }
        if (!messages.isArray() || messages.isEmpty()) {
            throw new BadRequest("invalid_type", "'" + field + "' must be a non-empty array");
        }
        List<Message> out = new ArrayList<>(messages.size());
        int i = 0;
        for (JsonNode m : messages) {
            if (!m.isObject() || !m.path("role").isTextual()) {
                throw new BadRequest("invalid_type", "'" + field + "[" + i + "]' must be an object with a role");
            }
            out.add(new Message(m.get("role").asText(), content(m.get("content"), field + "[" + i + "].content")));
            i++;
        }
        return out;
    }

    /** Text of a content field: a string, or the text parts of an array (other parts as a placeholder). */
    private static String content(JsonNode c, String where) throws BadRequest {
        if (c == null || c.isNull()) {
            return "";
        }
        if (c.isTextual()) {
            return c.asText();
        }
        if (!c.isArray()) {
            throw new BadRequest("invalid_type", "'" + where + "' must be a string or an array of parts");
        }
        StringBuilder sb = new StringBuilder();
        for (JsonNode part : c) {
            String type = part.path("type").asText("text");
            if (part.path("text").isTextual()) {
                sb.append(part.get("text").asText());
            } else {
                sb.append('<').append(type).append('>');
            }
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------------------------------------
    // engine events

    private enum Kind {
        ADMITTED,
        TOKEN,
        FINISHED,
        REJECTED
    }

    private record Event(Kind kind, int cached, int generated, long stamp, String message) {}

    /** The request's sink: events cross from the engine thread to the request thread here. */
    private final class Call implements EngineRequest.Sink {
        final LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();
        final long start = System.nanoTime();
        final double dilation;
        EngineRequest request;

        Call(double dilation) {
            this.dilation = dilation;
        }

        @Override
        public void onAdmitted(EngineRequest r, long nanos) {
            events.offer(new Event(Kind.ADMITTED, r.cachedTokens(), 0, System.nanoTime(), null));
        }

        @Override
        public void onToken(EngineRequest r, long nanos) {
            events.offer(new Event(Kind.TOKEN, r.cachedTokens(), r.generated(), System.nanoTime(), null));
        }

        @Override
        public void onFinished(EngineRequest r, long nanos) {
            events.offer(new Event(Kind.FINISHED, r.cachedTokens(), r.generated(), System.nanoTime(), null));
        }

        @Override
        public void onRejected(EngineRequest r, String message) {
            events.offer(new Event(Kind.REJECTED, 0, 0, System.nanoTime(), message));
        }

        /** The next event, delivered no earlier than its (possibly stretched) time. */
        Event next() throws IOException {
            Event e;
            try {
                while ((e = events.poll(POLL_NANOS, TimeUnit.NANOSECONDS)) == null) {
                    if (server.isClosed()) {
                        throw new IOException("replica closed");
                    }
                }
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", ie);
            }
            if (dilation > 1) {
                long due = stretched(start, e.stamp(), dilation);
                for (long left; (left = due - System.nanoTime()) > 0; ) {
                    if (server.isClosed()) {
                        throw new IOException("replica closed");
                    }
                    LockSupport.parkNanos(Math.min(left, POLL_NANOS));
                }
            }
            return e;
        }
    }

    /**
     * When an event the engine produced at {@code stamp} is delivered to a request that arrived at
     * {@code start} and is slowed by {@code factor}: its delay since arrival, multiplied.
     */
    static long stretched(long start, long stamp, double factor) {
        return start + (long) (factor * (stamp - start));
    }

    // ------------------------------------------------------------------------------------------------
    // responses

    private void complete(HttpExchange ex, Parsed p, Call call, long seed, boolean reset) throws IOException {
        Event e = call.next();
        while (e.kind() != Kind.FINISHED) {
            if (e.kind() == Kind.REJECTED) {
                sendError(ex, p.endpoint(), 400, "context_length_exceeded", e.message());
                return;
            }
            e = call.next();
        }
        int cached = e.cached();
        int generated = e.generated();
        int promptTokens = call.request.promptTokens;
        String text = generatedText(seed, 0, generated);
        String id = idFor(p.endpoint());
        long created = System.currentTimeMillis() / 1000;
        ObjectNode root = JSON.createObjectNode();
        switch (p.endpoint()) {
            case CHAT_COMPLETIONS -> {
                root.put("id", id)
                        .put("object", "chat.completion")
                        .put("created", created)
                        .put("model", p.model());
                ObjectNode c = root.putArray("choices").addObject();
                c.put("index", 0);
                c.putObject("message")
                        .put("role", "assistant")
                        .put("content", text)
                        .putNull("refusal");
                c.putNull("logprobs");
                c.put("finish_reason", finishReason(p));
                root.set("usage", openAiUsage(promptTokens, generated, cached));
            }
            case COMPLETIONS -> {
                root.put("id", id)
                        .put("object", "text_completion")
                        .put("created", created)
                        .put("model", p.model());
                ObjectNode c = root.putArray("choices").addObject();
                c.put("index", 0).put("text", text).putNull("logprobs").put("finish_reason", finishReason(p));
                root.set("usage", openAiUsage(promptTokens, generated, cached));
            }
            case MESSAGES -> {
                root.put("id", id)
                        .put("type", "message")
                        .put("role", "assistant")
                        .put("model", p.model());
                root.putArray("content").addObject().put("type", "text").put("text", text);
                root.put("stop_reason", stopReason(p)).putNull("stop_sequence");
                root.set("usage", anthropicUsage(promptTokens, generated, cached));
            }
        }
        byte[] bytes = JSON.writeValueAsBytes(root);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        if (reset) {
            ex.sendResponseHeaders(200, bytes.length);
            OutputStream out = ex.getResponseBody();
            out.write(bytes, 0, bytes.length / 2);
            out.flush();
            throw new IOException("simulated connection reset mid-response");
        }
        ex.sendResponseHeaders(200, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    private void stream(HttpExchange ex, Parsed p, Call call, long seed, boolean reset) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "text/event-stream");
        ex.getResponseHeaders().set("Cache-Control", "no-cache");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        String id = idFor(p.endpoint());
        long created = System.currentTimeMillis() / 1000;
        boolean anthropic = p.endpoint() == Endpoint.MESSAGES;
        int promptTokens = call.request.promptTokens;
        int resetAfter = reset ? Math.max(1, p.maxTokens() / 2) : Integer.MAX_VALUE;
        boolean started = false;
        for (; ; ) {
            Event e = call.next();
            switch (e.kind()) {
                case ADMITTED -> {
                    if (anthropic) {
                        ObjectNode msg = JSON.createObjectNode();
                        msg.put("id", id)
                                .put("type", "message")
                                .put("role", "assistant")
                                .put("model", p.model());
                        msg.putArray("content");
                        msg.putNull("stop_reason").putNull("stop_sequence");
                        msg.set("usage", anthropicUsage(promptTokens, 1, e.cached()));
                        ObjectNode ms = JSON.createObjectNode().put("type", "message_start");
                        ms.set("message", msg);
                        event(out, "message_start", ms);
                        ObjectNode cbs = JSON.createObjectNode()
                                .put("type", "content_block_start")
                                .put("index", 0);
                        cbs.putObject("content_block").put("type", "text").put("text", "");
                        event(out, "content_block_start", cbs);
                        event(out, "ping", JSON.createObjectNode().put("type", "ping"));
                        out.flush();
                    }
                }
                case TOKEN -> {
                    String word = generatedText(seed, e.generated() - 1, e.generated());
                    if (anthropic) {
                        ObjectNode d = JSON.createObjectNode()
                                .put("type", "content_block_delta")
                                .put("index", 0);
                        d.putObject("delta").put("type", "text_delta").put("text", word);
                        event(out, "content_block_delta", d);
                    } else if (p.endpoint() == Endpoint.CHAT_COMPLETIONS) {
                        if (!started) {
                            ObjectNode first = chunk(id, created, p, "chat.completion.chunk");
                            ObjectNode c = first.putArray("choices").addObject().put("index", 0);
                            c.putObject("delta").put("role", "assistant").put("content", "");
                            c.putNull("logprobs").putNull("finish_reason");
                            data(out, first);
                        }
                        ObjectNode ch = chunk(id, created, p, "chat.completion.chunk");
                        ObjectNode c = ch.putArray("choices").addObject().put("index", 0);
                        c.putObject("delta").put("content", word);
                        c.putNull("logprobs").putNull("finish_reason");
                        data(out, ch);
                    } else {
                        ObjectNode ch = chunk(id, created, p, "text_completion");
                        ch.putArray("choices")
                                .addObject()
                                .put("index", 0)
                                .put("text", word)
                                .putNull("logprobs")
                                .putNull("finish_reason");
                        data(out, ch);
                    }
                    started = true;
                    out.flush();
                    if (e.generated() >= resetAfter) {
                        throw new IOException("simulated connection reset mid-stream");
                    }
                }
                case FINISHED -> {
                    finishStream(out, id, created, p, promptTokens, e);
                    out.close();
                    ex.close();
                    return;
                }
                case REJECTED -> throw new IOException("request refused after the stream started: " + e.message());
            }
        }
    }

    private void finishStream(OutputStream out, String id, long created, Parsed p, int promptTokens, Event e)
            throws IOException {
        switch (p.endpoint()) {
            case MESSAGES -> {
                event(
                        out,
                        "content_block_stop",
                        JSON.createObjectNode()
                                .put("type", "content_block_stop")
                                .put("index", 0));
                ObjectNode md = JSON.createObjectNode().put("type", "message_delta");
                md.putObject("delta").put("stop_reason", stopReason(p)).putNull("stop_sequence");
                md.set("usage", anthropicUsage(promptTokens, e.generated(), e.cached()));
                event(out, "message_delta", md);
                event(out, "message_stop", JSON.createObjectNode().put("type", "message_stop"));
            }
            case CHAT_COMPLETIONS, COMPLETIONS -> {
                boolean chat = p.endpoint() == Endpoint.CHAT_COMPLETIONS;
                String object = chat ? "chat.completion.chunk" : "text_completion";
                ObjectNode last = chunk(id, created, p, object);
                ObjectNode c = last.putArray("choices").addObject().put("index", 0);
                if (chat) {
                    c.putObject("delta");
                } else {
                    c.put("text", "");
                }
                c.putNull("logprobs").put("finish_reason", finishReason(p));
                data(out, last);
                if (p.includeUsage()) {
                    ObjectNode u = chunk(id, created, p, object);
                    u.putArray("choices");
                    u.set("usage", openAiUsage(promptTokens, e.generated(), e.cached()));
                    data(out, u);
                }
                out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
            }
        }
        out.flush();
    }

    private static ObjectNode chunk(String id, long created, Parsed p, String object) {
        return JSON.createObjectNode()
                .put("id", id)
                .put("object", object)
                .put("created", created)
                .put("model", p.model());
    }

    private static void data(OutputStream out, ObjectNode node) throws IOException {
        out.write(("data: " + JSON.writeValueAsString(node) + "\n\n").getBytes(StandardCharsets.UTF_8));
    }

    private static void event(OutputStream out, String name, ObjectNode node) throws IOException {
        out.write(("event: " + name + "\ndata: " + JSON.writeValueAsString(node) + "\n\n")
                .getBytes(StandardCharsets.UTF_8));
    }

    private static ObjectNode openAiUsage(int prompt, int completion, int cached) {
        ObjectNode u = JSON.createObjectNode();
        u.put("prompt_tokens", prompt).put("completion_tokens", completion).put("total_tokens", prompt + completion);
        u.putObject("prompt_tokens_details").put("cached_tokens", cached);
        return u;
    }

    private static ObjectNode anthropicUsage(int prompt, int output, int cached) {
        return JSON.createObjectNode()
                .put("input_tokens", prompt - cached)
                .put("output_tokens", output)
                .put("cache_creation_input_tokens", 0)
                .put("cache_read_input_tokens", cached);
    }

    private static String finishReason(Parsed p) {
        return p.explicitMax() ? "length" : "stop";
    }

    private static String stopReason(Parsed p) {
        return p.explicitMax() ? "max_tokens" : "end_turn";
    }

    private String idFor(Endpoint ep) {
        String n = Long.toHexString(server.nextId())
                + Integer.toHexString(options.name().hashCode() & 0xFFFF);
        return switch (ep) {
            case CHAT_COMPLETIONS -> "chatcmpl-" + n;
            case COMPLETIONS -> "cmpl-" + n;
            case MESSAGES -> "msg_" + n;
        };
    }

    /** Generated tokens {@code from} (inclusive) to {@code to} (exclusive): one word and a space each. */
    private static String generatedText(long seed, int from, int to) {
        StringBuilder sb = new StringBuilder((to - from) * 5);
        for (int i = from; i < to; i++) {
            sb.append(Filler.word(seed, i)).append(' ');
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------------------------------------
    // plumbing

    private static void sendJson(HttpExchange ex, int status, ObjectNode body) throws IOException {
        byte[] bytes = JSON.writeValueAsBytes(body);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    /**
     * An error body: OpenAI's {@code {"error": {"message", "type", "param", "code"}}}, and for
     * {@code /v1/messages} Anthropic's {@code {"type": "error", "error": {"type", "message"}}} (which
     * carries {@code code} too, so a client reading either shape finds what it expects).
     */
    static void sendError(HttpExchange ex, Endpoint ep, int status, String code, String message) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode err;
        if (ep == Endpoint.MESSAGES) {
            root.put("type", "error");
            err = root.putObject("error");
            err.put(
                    "type",
                    switch (status) {
                        case 400 -> "invalid_request_error";
                        case 404 -> "not_found_error";
                        case 503 -> "overloaded_error";
                        default -> "api_error";
                    });
            err.put("message", message).put("code", code);
        } else {
            err = root.putObject("error");
            err.put("message", message);
            err.put("type", status >= 500 ? "server_error" : "invalid_request_error");
            err.putNull("param");
            err.put("code", code);
        }
        sendJson(ex, status, root);
    }
}
