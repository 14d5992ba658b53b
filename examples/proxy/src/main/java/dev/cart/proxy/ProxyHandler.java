package dev.cart.proxy;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.RouteRequest;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxy's single HTTP handler: dispatches by path, answers its own endpoints ({@code /health},
 * {@code /workers}, the cached {@code /v1/models}) and hands routed and pass-through requests to the
 * {@link Forwarder}.
 *
 * <p>Dispatch goes by the request's <em>normalised</em> path ({@link #normalise}): percent-decoded, with
 * empty and dot segments removed, because that is what the replica's server matches (vLLM's Starlette
 * decodes {@code /v1/chat/completion%73} into {@code /v1/chat/completions}). So every spelling of a routed
 * endpoint is extracted, vetted (remote-media policy) and routed, and goes upstream in its canonical form;
 * only paths that are not the proxy's go upstream as they came.
 *
 * <p>Every error the proxy produces itself is an OpenAI-style JSON error with a 4xx/5xx status; an
 * unexpected exception in the proxy's own code becomes a 500 if the response has not started, and a
 * dropped connection otherwise. The exchange is always closed.
 */
final class ProxyHandler implements HttpHandler {

    private static final Logger LOG = LoggerFactory.getLogger(ProxyHandler.class);

    /** Initial capacity of a request body buffer; it grows as bytes arrive, never ahead of them. */
    static final int INITIAL_BODY_CAPACITY = 64 * 1024;

    private final ProxyServer server;
    /** Requests holding a slot of {@code server.max_concurrent_requests}. */
    private final AtomicInteger inProgress = new AtomicInteger();
    /** Proxied requests the request threads can hold at once (Java 17-20; see {@link ServerRuntime}). */
    private final int threadLimit;

    ProxyHandler(ProxyServer server, int threadLimit) {
        this.server = server;
        this.threadLimit = threadLimit;
        server.metrics().inProgress(inProgress);
    }

    /**
     * Per-request facts for the request metric, filled in by the thread handling it. (Not an exchange
     * attribute: the JDK server keeps attributes per context, shared by every exchange.)
     */
    private static final class Facts {
        String replica;
        String path;
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        long start = System.nanoTime();
        Facts facts = new Facts();
        boolean abort = false;
        try {
            dispatch(ex, facts);
        } catch (Forwarder.Abort e) {
            abort = true;
            throw e; // the server drops the connection without completing the response
        } catch (IOException e) {
            abort = true; // writing to the client failed: nothing more can be said to it
            throw new Forwarder.Abort("client connection failed: " + e.getMessage());
        } catch (RuntimeException | Error e) {
            LOG.error(
                    "internal error handling {} {}",
                    ex.getRequestMethod(),
                    DecisionLog.safe(ex.getRequestURI().getRawPath(), 200),
                    e);
            if (ex.getResponseCode() != -1) {
                abort = true;
                throw new Forwarder.Abort("internal error after the response started");
            }
            try {
                Responses.error(ex, 500, "internal_error", "the proxy failed to handle the request");
            } catch (IOException ignored) {
                abort = true;
                throw new Forwarder.Abort("internal error");
            }
        } finally {
            if (!abort) {
                ex.close();
            }
            server.metrics().request(facts.path, ex.getResponseCode(), facts.replica, System.nanoTime() - start);
        }
    }

    private void dispatch(HttpExchange ex, Facts facts) throws IOException {
        String method = ex.getRequestMethod();
        String path = normalise(ex.getRequestURI().getPath());
        facts.path = path;
        if (!withinHeadLimits(ex)) {
            return;
        }
        boolean own = path.equals("/health") || path.equals("/workers") || path.equals("/metrics");
        if (own) {
            ownEndpoint(ex, method, path);
            return;
        }
        int limit = server.config().server().maxConcurrentRequests();
        int n = inProgress.incrementAndGet();
        if (n > limit || n > threadLimit || ServerRuntime.onOverflowThread()) {
            inProgress.decrementAndGet();
            boolean threads = n <= limit;
            server.metrics().rejected(threads ? "threads" : "concurrency");
            ex.getResponseHeaders().set("Retry-After", "1");
            Responses.error(
                    ex,
                    503,
                    "overloaded",
                    threads
                            ? "every request thread (server.max_threads: " + threadLimit + ") is busy; retry shortly"
                            : "the proxy is handling server.max_concurrent_requests (" + limit
                                    + ") requests; retry shortly");
            return;
        }
        try {
            proxied(ex, method, path, facts);
        } finally {
            inProgress.decrementAndGet();
        }
    }

    /**
     * The path as the replica's server will match it: percent-decoded (the caller passes
     * {@link java.net.URI#getPath()}), then with empty segments ({@code //}, a trailing {@code /}) and
     * dot segments ({@code .}, {@code ..}) removed. {@code "/"} for an empty path.
     */
    static String normalise(String decoded) {
        if (decoded == null || decoded.isEmpty()) {
            return "/";
        }
        java.util.ArrayDeque<String> segments = new java.util.ArrayDeque<>();
        for (String seg : decoded.split("/", -1)) {
            if (seg.isEmpty() || seg.equals(".")) {
                continue;
            }
            if (seg.equals("..")) {
                segments.pollLast();
                continue;
            }
            segments.addLast(seg);
        }
        if (segments.isEmpty()) {
            return "/";
        }
        StringBuilder b = new StringBuilder(decoded.length());
        for (String seg : segments) {
            b.append('/').append(seg);
        }
        return b.toString();
    }

    /**
     * The head limits the JDK server does not enforce itself: the request line's length (414) and the
     * number of header lines counting repeated names (431); the total header size is checked again here
     * as a second line behind the JDK's own limit. Answers and returns false when one is exceeded.
     */
    private boolean withinHeadLimits(HttpExchange ex) throws IOException {
        ProxyConfig.Server limits = server.config().server();
        int line = ex.getRequestMethod().length()
                + ex.getRequestURI().toString().length()
                + ex.getProtocol().length()
                + 2;
        if (line > limits.maxRequestLineBytes()) {
            server.metrics().rejected("request_line");
            Responses.error(
                    ex,
                    414,
                    "uri_too_long",
                    "the request line is longer than " + "server.max_request_line_bytes ("
                            + limits.maxRequestLineBytes() + " bytes)");
            return false;
        }
        int count = 0;
        long bytes = 0;
        for (Map.Entry<String, List<String>> h : ex.getRequestHeaders().entrySet()) {
            for (String v : h.getValue()) {
                count++;
                bytes += h.getKey().length() + 4L + (v == null ? 0 : v.length());
            }
        }
        if (count > limits.maxHeaders() || bytes > limits.maxHeaderBytes()) {
            server.metrics().rejected("headers");
            Responses.error(
                    ex,
                    431,
                    "request_header_fields_too_large",
                    "the request has more than "
                            + "server.max_headers (" + limits.maxHeaders() + ") header lines or more than "
                            + "server.max_header_bytes (" + limits.maxHeaderBytes() + ") bytes of headers");
            return false;
        }
        return true;
    }

    private void ownEndpoint(HttpExchange ex, String method, String path) throws IOException {
        if (!isGet(method)) {
            methodNotAllowed(ex, "GET, HEAD", path);
            return;
        }
        switch (path) {
            case "/health" -> health(ex);
            case "/workers" -> workers(ex);
            default -> metrics(ex);
        }
    }

    /** {@code path} is normalised: routed endpoints and {@code /v1/models} go upstream in that form. */
    private void proxied(HttpExchange ex, String method, String path, Facts facts) throws IOException {
        Optional<Endpoint> endpoint = Endpoint.forPath(path);
        if (endpoint.isPresent()) {
            if (!"POST".equals(method)) {
                methodNotAllowed(ex, "POST", path);
                return;
            }
            routed(ex, endpoint.get(), facts);
            return;
        }
        if (path.equals("/v1/models")
                && "GET".equals(method)
                && ex.getRequestURI().getRawQuery() == null) {
            models(ex, path, facts);
            return;
        }
        passThrough(ex, facts);
    }

    private static boolean isGet(String method) {
        return "GET".equals(method) || "HEAD".equals(method);
    }

    private void methodNotAllowed(HttpExchange ex, String allow, String path) throws IOException {
        ex.getResponseHeaders().set("Allow", allow);
        Responses.error(
                ex,
                405,
                "method_not_allowed",
                ex.getRequestMethod() + " is not allowed on " + DecisionLog.safe(path, 200) + "; use " + allow);
    }

    private void routed(HttpExchange ex, Endpoint endpoint, Facts facts) throws IOException {
        ProxyConfig config = server.config();
        DecisionLog log = new DecisionLog(config.proxy().decisionLog(), endpoint.path(), "POST");
        try {
            byte[] body = readBody(ex, config.proxy().maxBodyBytes(), log);
            if (body == null) {
                return;
            }
            ExtractedRequest req;
            try {
                req = server.extraction().extract(endpoint, body);
            } catch (ExtractionException e) {
                log.status(e.status());
                log.result("bad_request");
                Responses.error(ex, e.status(), e.type(), e.code(), e.param(), e.getMessage());
                return;
            }
            log.request(req.model(), req.stream());
            Forwarder.Inbound in =
                    Forwarder.Inbound.routed(endpoint, ex.getRequestURI().getRawQuery(), body, req);
            server.forwarder()
                    .forward(
                            ex,
                            in,
                            RouteRequest.of(req.key())
                                    .withTokenization(req.tokenization())
                                    .withModel(req.model()),
                            server.routing(),
                            log);
        } finally {
            facts.replica = log.replica();
            log.emit();
        }
    }

    /** Anything that is not the proxy's: forwarded with the raw path and query it came with. */
    private void passThrough(HttpExchange ex, Facts facts) throws IOException {
        ProxyConfig config = server.config();
        String path = ex.getRequestURI().getRawPath();
        if (path == null || path.isEmpty()) {
            path = "/";
        }
        DecisionLog log = new DecisionLog(config.proxy().decisionLog(), path, ex.getRequestMethod());
        try {
            byte[] body = readBody(ex, config.proxy().maxBodyBytes(), log);
            if (body == null) {
                return;
            }
            Forwarder.Inbound in = Forwarder.Inbound.passThrough(
                    ex.getRequestMethod(), path, ex.getRequestURI().getRawQuery(), body);
            server.forwarder().forward(ex, in, RouteRequest.empty(), server.routing(), log);
        } finally {
            facts.replica = log.replica();
            log.emit();
        }
    }

    private void models(HttpExchange ex, String path, Facts facts) throws IOException {
        String key = ModelsCache.keyOf(ex.getRequestHeaders());
        ModelsCache.Entry cached = server.models().fresh(key);
        server.metrics().modelsCache(cached != null);
        if (cached != null) {
            ex.getResponseHeaders().putAll(cached.headers());
            Responses.bytes(ex, 200, cached.body());
            return;
        }
        ProxyConfig config = server.config();
        DecisionLog log = new DecisionLog(config.proxy().decisionLog(), path, "GET");
        try {
            ModelsUnion.Answer a = server.modelsUnion().fetch(server.routing().replicas, path, ex.getRequestHeaders());
            log.status(a.status());
            log.result(a.listed() > 0 ? "models_union" : "models_relayed");
            if (a.cacheable()) {
                server.models().put(key, a.body(), a.headers());
            }
            ex.getResponseHeaders().putAll(a.headers());
            Responses.bytes(ex, a.status(), a.body());
        } finally {
            facts.replica = log.replica();
            log.emit();
        }
    }

    private void health(HttpExchange ex) throws IOException {
        ManagedReplicaSet set = server.routing().replicas;
        int healthy = set.healthyCount();
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("status", healthy > 0 ? "ok" : "unavailable");
        root.put("healthy", healthy);
        root.put("total", set.replicas().size());
        Responses.json(ex, healthy > 0 ? 200 : 503, root);
    }

    private void metrics(HttpExchange ex) throws IOException {
        byte[] body = server.metrics().scrape().getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        Responses.bytes(ex, 200, body);
    }

    private void workers(HttpExchange ex) throws IOException {
        Routing routing = server.routing();
        DecisionWindow.Snapshot recent = server.window().snapshot();
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("policy", routing.router.policy().name());
        root.put("healthy", routing.replicas.healthyCount());
        root.put("tree_size", routing.router.treeStats().size());
        ObjectNode window = root.putObject("recent");
        window.put("window", DecisionWindow.SIZE);
        window.put("decisions", recent.decisions());
        window.put("cache_hits", recent.hits());
        ArrayNode list = root.putArray("workers");
        for (ManagedReplicaSet.Member m : routing.replicas.replicas()) {
            ObjectNode w = list.addObject();
            w.put("url", m.id());
            w.put("healthy", m.isHealthy());
            w.put("circuit", m.circuitState().label());
            w.put("in_flight", m.inFlight());
            if (server.cluster().on()) {
                w.put("remote_in_flight", server.cluster().remoteInFlight(m.id())); // the other instances'
            }
            w.put("max_load", m.maxLoad());
            w.put("load_penalty", m.loadPenalty());
            w.put("decision_share", round3(recent.decisionShare(m.id())));
            w.put("cache_hit_share", round3(recent.hitShare(m.id())));
            ArrayNode served = w.putArray("models");
            m.models().forEach(served::add);
        }
        ObjectNode byModel = root.putObject("models");
        server.metrics().modelCounts().forEach((model, counts) -> {
            ObjectNode c = byModel.putObject(model);
            c.put("decisions", counts[0]);
            c.put("cache_hits", counts[1]);
        });
        Responses.json(ex, 200, root);
    }

    private static double round3(double x) {
        return Math.round(x * 1000.0) / 1000.0;
    }

    /**
     * Reads the request body, refusing more than {@code limit} bytes with a 413 (then returns null). A
     * declared Content-Length above the limit is refused before reading anything. The buffer starts at
     * most {@link #INITIAL_BODY_CAPACITY} bytes and grows with what actually arrives: a declared length
     * reserves nothing (idle uploads declaring 32 MiB each must not take 32 MiB of heap each).
     */
    private static byte[] readBody(HttpExchange ex, int limit, DecisionLog log) throws IOException {
        long declared = declaredLength(ex);
        if (declared > limit) {
            tooLarge(ex, limit, log);
            return null;
        }
        int initial = (int) Math.min(declared >= 0 ? declared : 8192, INITIAL_BODY_CAPACITY);
        ByteArrayOutputStream buf = new ByteArrayOutputStream(initial);
        byte[] chunk = new byte[16 * 1024];
        try (InputStream in = ex.getRequestBody()) {
            int n;
            while ((n = in.read(chunk)) >= 0) {
                if (buf.size() + (long) n > limit) {
                    tooLarge(ex, limit, log);
                    return null;
                }
                buf.write(chunk, 0, n);
            }
        } catch (IOException e) {
            // broken chunked framing, or a body that ended before its Content-Length: the connection is
            // no longer usable, but the client may still be reading (the JDK server closes it afterwards)
            log.status(400);
            log.result("bad_request");
            ex.getResponseHeaders().set("Connection", "close");
            Responses.error(
                    ex,
                    400,
                    "invalid_body",
                    "the request body could not be read: broken chunked "
                            + "encoding, or the body ended before its Content-Length");
            return null;
        }
        return buf.toByteArray();
    }

    /** The declared Content-Length, or -1 when there is none (the JDK server refuses a malformed one). */
    private static long declaredLength(HttpExchange ex) {
        String declared = ex.getRequestHeaders().getFirst("Content-Length");
        if (declared == null) {
            return -1;
        }
        try {
            return Long.parseLong(declared.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static void tooLarge(HttpExchange ex, int limit, DecisionLog log) throws IOException {
        log.status(413);
        log.result("body_too_large");
        Responses.error(
                ex,
                413,
                "request_too_large",
                "the request body is larger than proxy.max_body_bytes (" + limit + " bytes)");
    }
}
