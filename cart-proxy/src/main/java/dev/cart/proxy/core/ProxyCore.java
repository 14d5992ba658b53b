package dev.cart.proxy.core;

import dev.cart.core.RouteRequest;
import dev.cart.extract.Endpoint;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.ApiErrors;
import dev.cart.proxy.http.HeaderList;
import dev.cart.proxy.http.RequestHead;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.observe.DecisionWindow;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.routing.Cluster;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.routing.RoutingKeys;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.ModelsUnion;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * What the proxy decides about a client request, apart from the HTTP front (the Netty front):
 * the front parses the head and hands it to {@link #plan}, which answers the proxy's own endpoints
 * ({@code /health}, {@code /workers}, {@code /metrics}, a cached {@code /v1/models}), refuses what the limits
 * refuse (414, 431, 405) and otherwise says what the body is for ({@link Proxied}). The front reads the body
 * within {@link #maxBodyBytes} ({@link #tooLarge}, {@link #badBody} otherwise), and {@link #prepare} takes a
 * slot of {@code server.max_concurrent_requests} (503 {@code overloaded} when there is none) and turns the
 * request into a {@link Forwarder.Exchange} (extraction, its 400s) that the front drives. {@link #finished}
 * releases the slot, emits the decision log line and counts the request.
 *
 * <p>The slot is taken once the body has arrived, not when the head has: a client trickling its body
 * holds a connection and its share of the buffered-body budget, never one of the slots that requests being
 * forwarded need (1,100 slow bodies used to take all 1,024 slots and turn every chat into a 503).
 *
 * <p>Dispatch goes by the request's <em>normalised</em> path ({@link #normalise}): percent-decoded, with
 * empty and dot segments removed, because that is what the replica's server matches (vLLM's Starlette
 * decodes {@code /v1/chat/completion%73} into {@code /v1/chat/completions}). So every spelling of a routed
 * endpoint is extracted, vetted (remote-media policy) and routed, and goes upstream in its canonical form;
 * only paths that are not the proxy's go upstream as they came.
 *
 * <p>The answers of the own endpoints are {@link OwnEndpoints}'; a routed request's preparation (extraction, the
 * admission queue's headers, precise mode's lookup) is {@link RoutedRequests}'.
 *
 * <p>Thread-safe: per-request state lives in the {@link Proxied} a front holds.
 */
public final class ProxyCore {

    /** The running configuration (a reload may replace its workers). */
    private final Supplier<ProxyConfig> config;
    /** The current routing state (a reload swaps it). */
    private final Supplier<Routing> routing;

    private final Forwarder forwarder;
    private final ModelsCache models;
    private final ModelsUnion modelsUnion;
    private final ProxyMetrics metrics;
    private final OwnEndpoints endpoints;
    private final RoutedRequests routed;
    /** Requests holding a slot of {@code server.max_concurrent_requests}. */
    private final AtomicInteger inProgress = new AtomicInteger();
    /** Set once when the proxy begins to stop ({@link #drain}); never cleared. */
    private volatile boolean draining;

    /** A core over the proxy's parts; the configuration and the routing state are read through once per request. */
    public ProxyCore(
            Supplier<ProxyConfig> config,
            Supplier<Routing> routing,
            Forwarder forwarder,
            RoutingKeys routingKeys,
            ModelsCache models,
            ModelsUnion modelsUnion,
            ProxyMetrics metrics,
            DecisionWindow window,
            Cluster cluster) {
        this.config = config;
        this.routing = routing;
        this.forwarder = forwarder;
        this.models = models;
        this.modelsUnion = modelsUnion;
        this.metrics = metrics;
        this.endpoints = new OwnEndpoints(routing, metrics, window, cluster);
        this.routed = new RoutedRequests(routing, forwarder, routingKeys, metrics);
        metrics.inProgress(inProgress);
    }

    /** What happens to a request once its head is read. */
    public sealed interface Plan permits Own, Proxied {
        /** The normalised path, for the request metric. */
        String path();
    }

    /** The proxy answers at once with {@link #answer}. */
    public record Own(String path, Answer answer) implements Plan {}

    /** What a proxied request is: a routed endpoint, {@code /v1/models}, or anything else (pass-through). */
    public enum Kind {
        ROUTED,
        MODELS,
        PASS_THROUGH
    }

    /** A request that goes to a replica; holds a slot until {@link #finished}. */
    public static final class Proxied implements Plan {
        public final Kind kind;
        final RequestHead head;
        final String path;
        final Endpoint endpoint;
        public final DecisionLog log;
        /** How many proxied requests the front can hold at once (see {@link #plan}). */
        private boolean admitted;

        private boolean released;

        Proxied(Kind kind, RequestHead head, String path, Endpoint endpoint, DecisionLog log) {
            this.kind = kind;
            this.head = head;
            this.path = path;
            this.endpoint = endpoint;
            this.log = log;
        }

        @Override
        public String path() {
            return path;
        }

        /** False for {@code GET /v1/models}, which is sent without a body. */
        public boolean needsBody() {
            return kind != Kind.MODELS;
        }
    }

    /**
     * Decides what to do with a request whose head has arrived; a proxied request's slot is taken by
     * {@link #prepare}.
     */
    public Plan plan(RequestHead head) {
        String path = normalise(head.decodedPath());
        Answer limited = headLimits(head);
        if (limited != null) {
            return new Own(path, limited);
        }
        String method = head.method();
        if (path.equals("/health") || path.equals("/workers") || path.equals("/metrics")) {
            if (!isGet(method)) {
                return new Own(path, methodNotAllowed(method, "GET, HEAD", path));
            }
            Answer own = switch (path) {
                case "/health" -> endpoints.health(draining);
                case "/workers" -> endpoints.workers();
                default -> endpoints.metrics();
            };
            return new Own(path, draining ? own.closing() : own);
        }
        Optional<Endpoint> endpoint = Endpoint.forPath(path);
        if (draining) {
            metrics.rejected("draining");
            return new Own(
                    path,
                    ApiErrors.answer(
                                    endpoint.orElse(null) == Endpoint.MESSAGES,
                                    503,
                                    "draining",
                                    "the proxy is shutting down and takes no new requests; retry on another instance")
                            .with("Retry-After", "1")
                            .closing());
        }
        if (endpoint.isPresent() && !"POST".equals(method)) {
            return new Own(path, methodNotAllowed(method, "POST", path));
        }
        boolean logOn = config.get().proxy().decisionLog();
        if (endpoint.isPresent()) {
            DecisionLog log = new DecisionLog(logOn, endpoint.get().path(), "POST");
            if (routing.get().precise != null) {
                log.preciseKeys();
            }
            return new Proxied(Kind.ROUTED, head, path, endpoint.get(), log);
        }
        if (path.equals("/v1/models") && "GET".equals(method) && head.rawQuery() == null) {
            String key = ModelsCache.keyOf(head.headers());
            ModelsCache.Entry cached = models.fresh(key);
            metrics.modelsCache(cached != null);
            if (cached != null) {
                return new Own(path, new Answer(200, cached.headers(), cached.body(), false));
            }
            return new Proxied(Kind.MODELS, head, path, null, new DecisionLog(logOn, path, "GET"));
        }
        return new Proxied(Kind.PASS_THROUGH, head, path, null, new DecisionLog(logOn, head.rawPathOrRoot(), method));
    }

    /** Takes a slot of {@code server.max_concurrent_requests} for {@code p}, or returns the 503 that refuses it. */
    private Answer admit(Proxied p) {
        int limit = config.get().server().maxConcurrentRequests();
        int n = inProgress.incrementAndGet();
        if (n <= limit) {
            p.admitted = true;
            return null;
        }
        inProgress.decrementAndGet();
        metrics.rejected("concurrency");
        p.log.status(503);
        p.log.result("overloaded");
        return Answer.error(
                        503,
                        "overloaded",
                        "the proxy is handling server.max_concurrent_requests (" + limit + ") requests; retry shortly")
                .with("Retry-After", "1");
    }

    /**
     * The proxy begins to stop: from now on {@code /health} answers 503 {@code draining}, every new request gets
     * 503 {@code draining} and each of the proxy's own answers closes its connection. Requests already planned
     * go on. Idempotent.
     */
    public void drain() {
        draining = true;
    }

    /** True once {@link #drain} was called. */
    public boolean draining() {
        return draining;
    }

    /** The largest request body accepted ({@code proxy.max_body_bytes}). */
    public int maxBodyBytes() {
        return config.get().proxy().maxBodyBytes();
    }

    /** The 413 for a body over {@link #maxBodyBytes}. */
    public Answer tooLarge(Proxied p) {
        p.log.status(413);
        p.log.result("body_too_large");
        return Answer.error(
                413,
                "request_too_large",
                "the request body is larger than proxy.max_body_bytes (" + maxBodyBytes() + " bytes)");
    }

    /** The 400 for a body whose framing broke; the connection is closed after it. */
    public Answer badBody(Proxied p) {
        p.log.status(400);
        p.log.result("bad_request");
        return Answer.error(
                        400,
                        "invalid_body",
                        "the request body could not be read: broken chunked "
                                + "encoding, or the body ended before its Content-Length")
                .closing();
    }

    /**
     * What {@link #prepare} gives the front: an exchange to drive, the answer (a 400 from extraction), or an
     * answer still being made ({@code pending}: the pool's {@code /v1/models} union, asked of every replica
     * at once), which the front writes when it completes, without blocking a thread the front needs.
     */
    public record Prepared(
            Forwarder.Exchange exchange,
            Answer answer,
            CompletableFuture<Answer> pending,
            CompletableFuture<Prepared> later) {
        public Prepared(Forwarder.Exchange exchange, Answer answer) {
            this(exchange, answer, null, null);
        }

        public Prepared(Forwarder.Exchange exchange, Answer answer, CompletableFuture<Answer> pending) {
            this(exchange, answer, pending, null);
        }
    }

    /**
     * Takes the request's slot, then turns the request and its whole body into an exchange (for
     * {@link Kind#MODELS} the body is ignored); the answer is a 503 when no slot is free. The exchange
     * keeps {@code body} (the front gives it up) and sends it as it is.
     */
    public Prepared prepare(Proxied p, byte[] body) {
        Answer overloaded = admit(p);
        if (overloaded != null) {
            return new Prepared(null, overloaded);
        }
        RequestHead head = p.head;
        switch (p.kind) {
            case ROUTED -> {
                return routed.prepare(p, body);
            }
            case MODELS -> {
                HeaderList clientHeaders = HeaderList.copyOf(head.headers());
                String key = ModelsCache.keyOf(clientHeaders);
                CompletableFuture<Answer> union = modelsUnion
                        .fetch(routing.get().replicas, p.path, clientHeaders)
                        .thenApply(a -> {
                            p.log.status(a.status());
                            p.log.result(a.listed() > 0 ? "models_union" : "models_relayed");
                            if (a.cacheable()) {
                                models.put(key, a.body(), a.headers());
                            }
                            return new Answer(a.status(), a.headers(), a.body(), false);
                        })
                        .exceptionally(e -> {
                            p.log.status(502);
                            p.log.result("upstream_failed");
                            return Answer.error(502, "upstream_failed", "the replicas' model lists could not be read");
                        });
                return new Prepared(null, null, union);
            }
            default -> {
                Answer refused = PassThroughMedia.check(
                        body, 0, body.length, config.get().proxy().remoteMediaUrlPolicy());
                if (refused != null) {
                    p.log.status(refused.status());
                    p.log.result("bad_request");
                    return new Prepared(null, refused);
                }
                Forwarder.Inbound in = Forwarder.Inbound.passThrough(
                        head.method(), head.rawPathOrRoot(), head.rawQuery(), body, body.length);
                return new Prepared(
                        forwarder.start(in, RouteRequest.empty(), routing.get(), p.log, head.headers()), null);
            }
        }
    }

    /**
     * The request is over: releases a proxied request's slot (once), emits its decision log line and counts
     * it in the request metric with the status the client got (-1 when the connection was dropped).
     */
    public void finished(Plan plan, int status, long startNanos) {
        if (plan instanceof Proxied p) {
            if (p.released) {
                return;
            }
            p.released = true;
            if (p.admitted) {
                inProgress.decrementAndGet();
            }
            metrics.finished(p.log, p.path, status, System.nanoTime() - startNanos);
            return;
        }
        metrics.request(plan == null ? null : plan.path(), status, null, System.nanoTime() - startNanos);
    }

    /** Counts a request the front refused before it had a plan (a head it could not parse). */
    public void refusedHead(String cause, int status, long startNanos) {
        if (cause != null) {
            metrics.rejected(cause);
        }
        metrics.request(null, status, null, System.nanoTime() - startNanos);
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
        if (isNormal(decoded)) {
            return decoded; // the common case: nothing to remove, no copy
        }
        return rebuilt(decoded);
    }

    /** {@link #normalise} of a non-empty path the long way: split, dot and empty segments dropped, joined again. */
    static String rebuilt(String decoded) {
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
     * Whether {@link #normalise} would give {@code path} back unchanged: a {@code /}, then segments that are
     * neither empty nor {@code .} nor {@code ..}, each after one {@code /}, and no trailing {@code /}.
     */
    static boolean isNormal(String path) {
        int n = path.length();
        if (path.charAt(0) != '/') {
            return false;
        }
        if (n == 1) {
            return true;
        }
        int segment = 1;
        for (int i = 1; i <= n; i++) {
            if (i == n || path.charAt(i) == '/') {
                int len = i - segment;
                if (len == 0
                        || (path.charAt(segment) == '.'
                                && (len == 1 || (len == 2 && path.charAt(segment + 1) == '.')))) {
                    return false;
                }
                segment = i + 1;
            }
        }
        return true;
    }

    /**
     * The head limits: the request line's length (414) and the number of header lines counting repeated
     * names (431); the total header size is checked again here as a second line behind the front's own
     * limit. Returns the answer when one is exceeded, else null.
     */
    private Answer headLimits(RequestHead head) {
        ProxyConfig.Server limits = config.get().server();
        if (head.requestLineLength() > limits.maxRequestLineBytes()) {
            metrics.rejected("request_line");
            return uriTooLong(limits);
        }
        long[] countAndBytes = new long[2];
        head.headers().forEach((name, v) -> {
            countAndBytes[0]++;
            countAndBytes[1] += name.length() + 4L + (v == null ? 0 : v.length());
        });
        if (countAndBytes[0] > limits.maxHeaders() || countAndBytes[1] > limits.maxHeaderBytes()) {
            metrics.rejected("headers");
            return headersTooLarge(limits);
        }
        return null;
    }

    public static Answer uriTooLong(ProxyConfig.Server limits) {
        return Answer.error(
                414,
                "uri_too_long",
                "the request line is longer than server.max_request_line_bytes (" + limits.maxRequestLineBytes()
                        + " bytes)");
    }

    public static Answer headersTooLarge(ProxyConfig.Server limits) {
        return Answer.error(
                431,
                "request_header_fields_too_large",
                "the request has more than server.max_headers (" + limits.maxHeaders()
                        + ") header lines or more than server.max_header_bytes (" + limits.maxHeaderBytes()
                        + ") bytes of headers");
    }

    private static boolean isGet(String method) {
        return "GET".equals(method) || "HEAD".equals(method);
    }

    private static Answer methodNotAllowed(String method, String allow, String path) {
        return Answer.error(
                        405,
                        "method_not_allowed",
                        DecisionLog.safe(method, 16) + " is not allowed on " + DecisionLog.safe(path, 200) + "; use "
                                + allow)
                .with("Allow", allow);
    }
}
