package dev.cart.proxy;

import com.sun.net.httpserver.HttpExchange;
import dev.cart.core.CacheFeedback;
import dev.cart.core.Lease;
import dev.cart.core.Reason;
import dev.cart.core.Replica;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends one client request to a replica and relays the answer, with retries; reads the replica's cache
 * usage and the answer's text as they pass, and hands them to the router.
 *
 * <p>Attempts: each asks the router for a replica (excluding every replica that already failed this
 * request) and sends the buffered body with the JDK client. A connection error, or a status in
 * {@code proxy.retryable_statuses}, is retried only if retries remain, another replica could take the
 * request now, and the backoff (exponential, with jitter) ends before {@code request_timeout_secs}
 * does; otherwise the replica's own answer is relayed as it is (status, body, {@code Retry-After}), or,
 * for a connection error, 502. A retried attempt's lease is closed as failed (5xx and connection errors)
 * before the wait.
 *
 * <p>Relaying: the head goes to the client, then the body as it arrives: a {@code text/event-stream} (or
 * any body of unknown length) chunked and flushed after every read, a body of known length with its
 * length. Each chunk is written first and then given to a {@link ResponseObserver}, so reading the usage
 * delays nothing. When the replica's body ends (for a body of known length: as soon as its last byte has
 * been read, before it is written), the lease is marked succeeded with the usage the response reported
 * ({@link ServedUsage}; the router compares it with its prediction) and closed, so a slow client never
 * holds the replica's slot. After the last byte has reached the client, a chat answer is learned as the
 * start of the next turn ({@link AnswerLearning}, {@code cache.learn_answer}).
 *
 * <p>Deadline: {@code request_timeout_secs} bounds the whole exchange. The request's own timeout covers
 * the wait for the head; a scheduled task fires at the deadline and closes the upstream body (which
 * wakes a thread waiting for the replica) and the lease (which frees the replica's slot even while the
 * relaying thread is blocked writing to a client that stopped reading; the JDK server then drops that
 * connection at its response limit, see {@link ServerLimits}). A deadline that ends a body that was
 * flowing closes the lease as cancelled: the replica was working, the request was simply too long. A
 * deadline reached before any byte of the body arrived counts as the replica's failure, as a missing
 * head does.
 *
 * <p>Failure while relaying: if the client goes away, the upstream stream is closed (cancelling the
 * upstream request) and the lease closed with no outcome; if the replica fails mid-body, the lease is
 * closed as failed. In both cases the client connection is dropped by throwing {@link Abort} out of the
 * handler, so a truncated body is never framed as complete.
 *
 * <p>Concurrency: one instance serves all requests; per-request state lives on the handling thread and,
 * for what the deadline task touches, in {@link Attempt}. The lease is closed exactly once on every path
 * (try/finally plus the lease's own idempotent, thread-safe close).
 */
final class Forwarder {

    private static final Logger LOG = LoggerFactory.getLogger(Forwarder.class);

    /** Largest {@code /v1/models} body that is cached; a larger one is relayed but not cached. */
    static final int MODELS_CACHE_LIMIT = 8 * 1024 * 1024;

    /** Thrown out of the handler to make the HTTP server drop the client connection mid-response. */
    static final class Abort extends IOException {
        private static final long serialVersionUID = 1L;

        Abort(String message) {
            super(message, null);
        }
    }

    /**
     * What is forwarded: method, target path (for routed endpoints and {@code /v1/models} the canonical
     * path) and raw query, body, the routed endpoint (null for anything else) and, for a cacheable
     * {@code GET /v1/models}, its {@link ModelsCache} key.
     */
    record Inbound(
            String method,
            String rawPath,
            String rawQuery,
            byte[] body,
            Endpoint endpoint,
            String modelsKey,
            ExtractedRequest extracted) {

        static Inbound routed(Endpoint endpoint, String rawQuery, byte[] body, ExtractedRequest extracted) {
            return new Inbound("POST", endpoint.path(), rawQuery, body, endpoint, null, extracted);
        }

        static Inbound passThrough(String method, String rawPath, String rawQuery, byte[] body) {
            return new Inbound(method, rawPath, rawQuery, body, null, null, null);
        }

        static Inbound models(String path, String cacheKey) {
            return new Inbound("GET", path, null, new byte[0], null, cacheKey, null);
        }
    }

    /**
     * One upstream attempt's state that the deadline task shares with the relaying thread. The deadline
     * may fire at any moment; everything it reads or writes is volatile or the lease (thread-safe).
     */
    private static final class Attempt {
        final Lease lease;
        final String replica;
        volatile InputStream body;
        volatile boolean timedOut;
        volatile boolean bodyStarted;
        /** The router's verdict on the usage the response reported, if it gave one. */
        CacheFeedback feedback;

        Attempt(Lease lease, String replica) {
            this.lease = lease;
            this.replica = replica;
        }

        /** The deadline: cancel the upstream exchange and give the replica's slot back. */
        void deadline() {
            timedOut = true;
            closeQuietly(body);
            if (!bodyStarted) {
                lease.failed(); // no byte of the body in the whole time: as good as no answer
            }
            lease.close(); // a body that was flowing ends as cancelled: no verdict on the replica
        }
    }

    private final HttpClient client;
    private final ScheduledExecutorService scheduler;
    private final Sleeper sleeper;
    private final Supplier<RandomGenerator> random;
    private final ProxyConfig.Proxy config;
    private final boolean learnAnswer;
    private final Backoff backoff;
    private final Set<Integer> retryable;
    private final ModelsCache models;
    private final ProxyMetrics metrics;
    private final Extraction extraction;

    Forwarder(
            HttpClient client,
            ScheduledExecutorService scheduler,
            Sleeper sleeper,
            Supplier<RandomGenerator> random,
            ProxyConfig config,
            ModelsCache models,
            ProxyMetrics metrics,
            Extraction extraction) {
        this.client = client;
        this.scheduler = scheduler;
        this.sleeper = sleeper;
        this.random = random;
        this.config = config.proxy();
        this.learnAnswer = config.cache().learnAnswer();
        this.backoff = Backoff.of(config.proxy());
        this.retryable = new HashSet<>(config.proxy().retryableStatuses());
        this.models = models;
        this.metrics = metrics;
        this.extraction = extraction;
    }

    /**
     * Sends {@code upstream}, once more on a fresh connection if the first try failed the way a pooled
     * keep-alive connection fails when the replica has just closed it (no byte of an answer, the connection
     * reset or at its end). Such a failure says nothing about the replica (servers close idle connections:
     * uvicorn after 5 s), so it is not counted against it and is not a routing retry.
     */
    private HttpResponse<InputStream> send(HttpRequest upstream) throws IOException, InterruptedException {
        try {
            return client.send(upstream, HttpResponse.BodyHandlers.ofInputStream());
        } catch (HttpTimeoutException | ConnectException e) {
            throw e;
        } catch (IOException e) {
            if (!staleConnection(e)) {
                throw e;
            }
            metrics.staleConnectionResent();
            return client.send(upstream, HttpResponse.BodyHandlers.ofInputStream());
        }
    }

    /** True for the ways the JDK client reports a kept-alive connection the server had already closed. */
    static boolean staleConnection(IOException e) {
        if (e instanceof java.io.EOFException) {
            return true;
        }
        String m = String.valueOf(e.getMessage());
        return m.contains("header parser received no bytes")
                || m.contains("Connection reset")
                || m.contains("connection closed locally")
                || m.contains("closed by peer");
    }

    void forward(HttpExchange ex, Inbound in, RouteRequest first, Routing routing, DecisionLog log) throws IOException {
        long deadline = System.nanoTime()
                + Duration.ofSeconds(config.requestTimeoutSecs()).toNanos();
        RouteRequest request = first;
        String lastFailure = null;
        String retryCause = null;
        boolean passThrough = in.endpoint() == null;
        for (int attempt = 0; ; attempt++) {
            RouteDecision d = passThrough
                    ? ProxyListener.choosePassThrough(routing.router, request)
                    : routing.router.choose(request);
            log.decision(d, passThrough);
            log.retries(attempt);
            if (!d.routed()) {
                if (d.reason() == Reason.MODEL_NOT_SERVED) {
                    log.status(ModelNotFound.STATUS);
                    log.result(ModelNotFound.CODE);
                    Responses.json(ex, ModelNotFound.STATUS, ModelNotFound.body(in.endpoint(), d.model()));
                } else if (attempt == 0) {
                    ex.getResponseHeaders().set("Retry-After", "1");
                    reply(
                            ex,
                            log,
                            503,
                            "no_replica",
                            "no_replica_available",
                            "no replica can take the request now (all unhealthy, circuit-open or at max_load)");
                } else {
                    reply(
                            ex,
                            log,
                            502,
                            "upstream_failed",
                            "upstream_failed",
                            "the request failed on "
                                    + attempt + " replica(s) and no other replica is available; last error: "
                                    + lastFailure);
                }
                return;
            }
            Replica replica = d.replica();
            Lease lease = d.lease();
            Duration pause = null;
            try {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    reply(
                            ex,
                            log,
                            504,
                            "timeout",
                            "upstream_timeout",
                            "proxy.request_timeout_secs passed before a replica answered");
                    return;
                }
                HttpRequest upstream;
                try {
                    upstream = buildRequest(ex, in, replica, Duration.ofNanos(remaining));
                } catch (BadTarget e) {
                    reply(ex, log, 400, "bad_target", "invalid_request_target", e.getMessage());
                    return;
                }
                log.upstreamStarted();
                long sent = System.nanoTime();
                HttpResponse<InputStream> resp;
                try {
                    resp = send(upstream);
                } catch (HttpConnectTimeoutException | ConnectException e) {
                    lease.failed();
                    lastFailure = replica.id() + ": " + describe(e);
                    retryCause = "connect_error";
                    pause = retryPause(attempt, routing, request, replica, deadline);
                    if (pause == null) {
                        reply(
                                ex,
                                log,
                                502,
                                "connect_failed",
                                "upstream_unreachable",
                                "could not connect to the replica: " + lastFailure);
                        return;
                    }
                    continue;
                } catch (HttpTimeoutException e) {
                    lease.failed();
                    reply(
                            ex,
                            log,
                            504,
                            "timeout",
                            "upstream_timeout",
                            "the replica did not answer within proxy.request_timeout_secs");
                    return;
                } catch (IOException e) {
                    lease.failed();
                    lastFailure = replica.id() + ": " + describe(e);
                    retryCause = "io_error";
                    pause = retryPause(attempt, routing, request, replica, deadline);
                    if (pause == null) {
                        reply(
                                ex,
                                log,
                                502,
                                "upstream_error",
                                "upstream_connection_error",
                                "the connection to the replica failed: " + lastFailure);
                        return;
                    }
                    continue;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    log.result("interrupted");
                    throw new Abort("interrupted while waiting for the replica");
                }
                String invalid = invalidAnswer(resp);
                if (invalid != null) {
                    closeQuietly(resp.body());
                    lease.failed();
                    lastFailure = replica.id() + ": " + invalid;
                    retryCause = "invalid_answer";
                    LOG.warn("replica {} sent an invalid answer: {}", replica.id(), invalid);
                    pause = retryPause(attempt, routing, request, replica, deadline);
                    if (pause == null) {
                        reply(
                                ex,
                                log,
                                502,
                                "upstream_error",
                                "upstream_invalid_answer",
                                "the replica's answer was not valid HTTP: " + lastFailure);
                        return;
                    }
                    continue;
                }
                int status = resp.statusCode();
                lease.status(status);
                if (retryable.contains(status)) {
                    pause = retryPause(attempt, routing, request, replica, deadline);
                    if (pause != null) {
                        closeQuietly(resp.body());
                        if (status >= 500) {
                            lease.failed();
                        } else {
                            lease.succeeded();
                        }
                        lastFailure = replica.id() + ": HTTP " + status;
                        retryCause = "status";
                        continue;
                    }
                }
                relay(ex, in, routing, d, resp, deadline, sent, log);
                return;
            } finally {
                lease.close();
                if (pause != null) {
                    metrics.retry(replica.id(), retryCause);
                    request = request.excluding(replica).attempt(attempt + 1);
                    pause(pause);
                }
            }
        }
    }

    /**
     * Why an answer the JDK client accepted is still not valid HTTP (RFC 9110, RFC 9112), or null: a
     * status outside 100-599, or both Transfer-Encoding and Content-Length, which a front proxy or
     * client could read differently from how the JDK client did (it goes by Content-Length); relaying
     * it would pass a response-splitting ambiguity on.
     */
    static String invalidAnswer(HttpResponse<?> resp) {
        int status = resp.statusCode();
        if (status < 100 || status > 599) {
            return "status " + status + " is outside 100-599";
        }
        if (resp.headers().firstValue("transfer-encoding").isPresent()
                && resp.headers().firstValue("content-length").isPresent()) {
            return "both Transfer-Encoding and Content-Length";
        }
        return null;
    }

    /**
     * The wait before retrying after {@code attempt} failed on {@code failed}, or null when there is to be
     * no retry: none left, no other replica could take the request now, or the wait would end after the
     * deadline.
     */
    private Duration retryPause(int attempt, Routing routing, RouteRequest request, Replica failed, long deadline) {
        if (attempt >= config.maxRetries() || !anotherCandidate(routing, request, failed)) {
            return null;
        }
        Duration delay = backoff.delay(attempt + 1, random.get());
        return delay.toNanos() < deadline - System.nanoTime() ? delay : null;
    }

    /** True if a replica other than {@code failed} and those already excluded could take the request now. */
    private static boolean anotherCandidate(Routing routing, RouteRequest request, Replica failed) {
        for (Replica r : routing.router.replicas().replicas()) {
            if (r != failed
                    && !request.isExcluded(r)
                    && (request.model() == null || r.serves(request.model()))
                    && r.isAvailable()
                    && r.inFlight() < r.maxLoad()) {
                return true;
            }
        }
        return false;
    }

    private void pause(Duration delay) throws Abort {
        try {
            sleeper.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Abort("interrupted during retry backoff");
        }
    }

    private void reply(HttpExchange ex, DecisionLog log, int status, String result, String code, String message)
            throws IOException {
        log.status(status);
        log.result(result);
        Responses.error(ex, status, code, message);
    }

    /**
     * The replica's first answer bytes arrived: the time to first byte is measured and the lease told,
     * so the router stops counting this request's prefill against the replica.
     */
    private void firstByte(Attempt a, Replica replica, long sent) {
        metrics.firstByte(replica.id(), System.nanoTime() - sent);
        a.lease.firstToken();
    }

    /** Relays status, headers and body of {@code resp}; closes nothing but the upstream body and the lease. */
    private void relay(
            HttpExchange ex,
            Inbound in,
            Routing routing,
            RouteDecision d,
            HttpResponse<InputStream> resp,
            long deadline,
            long sent,
            DecisionLog log)
            throws IOException {
        Replica replica = d.replica();
        int status = resp.statusCode();
        Attempt a = new Attempt(d.lease(), d.replica().id());
        InputStream body = resp.body();
        a.body = body;
        log.status(status);
        HopByHop.copyResponseHeaders(resp.headers(), ex.getResponseHeaders());
        if (config.addRoutedPeerHeader()) {
            ex.getResponseHeaders().set("x-routed-peer", replica.id());
        }
        long remaining = Math.max(1, deadline - System.nanoTime());
        ScheduledFuture<?> timer = scheduler.schedule(a::deadline, remaining, TimeUnit.NANOSECONDS);
        try {
            boolean noBody = "HEAD".equalsIgnoreCase(in.method()) || status == 204 || status == 304 || status < 200;
            if (noBody) {
                firstByte(a, replica, sent);
                ex.sendResponseHeaders(status, -1);
                closeQuietly(body);
                upstreamDone(a, status, null, log);
                return;
            }
            String contentType = resp.headers().firstValue("content-type").orElse("");
            boolean sse = contentType.toLowerCase(Locale.ROOT).startsWith("text/event-stream");
            OptionalLong length = resp.headers().firstValueAsLong("content-length");
            boolean chunkedUpstream =
                    resp.headers().firstValue("transfer-encoding").isPresent();
            if (in.modelsKey() != null && status == 200) {
                relayModels(ex, in, a, replica, sent, log);
                return;
            }
            ResponseObserver observer = status / 100 != 2
                    ? null
                    : ResponseObserver.create(
                            in.endpoint(),
                            contentType,
                            resp.headers().firstValue("content-encoding").orElse(null),
                            learnAnswer && status == 200);
            boolean fixed = !sse && !chunkedUpstream && length.isPresent() && length.getAsLong() >= 0;
            if (fixed && length.getAsLong() == 0) {
                firstByte(a, replica, sent);
                ex.sendResponseHeaders(status, -1);
                closeQuietly(body);
                if (observer != null) {
                    observer.finish();
                }
                upstreamDone(a, status, observer, log);
                return;
            }
            ex.sendResponseHeaders(status, fixed ? length.getAsLong() : 0);
            OutputStream out = ex.getResponseBody();
            boolean flushEach = !fixed;
            byte[] buf = new byte[16 * 1024];
            boolean first = true;
            long total = 0;
            while (true) {
                int n;
                try {
                    n = body.read(buf);
                    if (n > 0 && flushEach) {
                        n += readArrived(body, buf, n);
                    }
                } catch (IOException e) {
                    upstreamBroke(a, log, e);
                    throw new Abort("upstream body failed");
                }
                if (first) {
                    first = false;
                    firstByte(a, replica, sent);
                }
                if (n < 0) {
                    if (observer != null) {
                        observer.finish();
                    }
                    upstreamDone(a, status, observer, log);
                    break;
                }
                if (n == 0) {
                    continue;
                }
                a.bodyStarted = true;
                total += n;
                if (fixed && total >= length.getAsLong()) {
                    // the replica is done: give its slot back before the last bytes go to the client
                    if (observer != null) {
                        observer.accept(buf, 0, n);
                        observer.finish();
                    }
                    upstreamDone(a, status, observer, log);
                    write(out, buf, 0, n, false, a, log);
                    break;
                }
                write(out, buf, 0, n, flushEach, a, log);
                if (observer != null) {
                    observer.accept(buf, 0, n);
                }
            }
            try {
                out.close();
            } catch (IOException e) {
                log.result("client_closed");
                throw new Abort("response could not be completed");
            }
            if (observer != null && learnAnswer && status == 200 && in.endpoint() != Endpoint.COMPLETIONS) {
                learnAnswer(routing, in, replica, observer, a);
            }
        } finally {
            timer.cancel(false);
            closeQuietly(body);
        }
    }

    /**
     * A {@code /v1/models} answer: read whole (up to {@link #MODELS_CACHE_LIMIT}), cached for the asker's
     * key when its headers allow, then sent; a larger one is relayed as it comes and not cached.
     */
    private void relayModels(HttpExchange ex, Inbound in, Attempt a, Replica replica, long sent, DecisionLog log)
            throws IOException {
        byte[] whole = readUpTo(a, MODELS_CACHE_LIMIT + 1, log);
        firstByte(a, replica, sent);
        if (whole.length > 0) {
            a.bodyStarted = true;
        }
        boolean fits = whole.length <= MODELS_CACHE_LIMIT;
        if (fits && ModelsCache.cacheable(ex.getResponseHeaders())) {
            com.sun.net.httpserver.Headers cached = new com.sun.net.httpserver.Headers();
            cached.putAll(ex.getResponseHeaders());
            cached.remove("x-routed-peer"); // a cached answer comes from no replica in particular
            models.put(in.modelsKey(), whole, cached);
        }
        if (fits) {
            ex.sendResponseHeaders(200, whole.length == 0 ? -1 : whole.length);
            upstreamDone(a, 200, null, log);
            write(ex.getResponseBody(), whole, 0, whole.length, false, a, log);
            ex.getResponseBody().close();
            return;
        }
        // too large to cache: relay what was read and the rest as it comes
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        write(out, whole, 0, whole.length, true, a, log);
        byte[] buf = new byte[16 * 1024];
        for (int n; ; ) {
            try {
                n = a.body.read(buf);
            } catch (IOException e) {
                upstreamBroke(a, log, e);
                throw new Abort("upstream body failed");
            }
            if (n < 0) {
                break;
            }
            write(out, buf, 0, n, true, a, log);
        }
        upstreamDone(a, 200, null, log);
        out.close();
    }

    /**
     * The replica has sent its whole answer: records how it went (with the usage it reported, which the
     * router compares with its prediction) and closes the lease.
     */
    private void upstreamDone(Attempt a, int status, ResponseObserver observer, DecisionLog log) {
        ServedUsage usage = observer == null ? ServedUsage.unknown() : observer.usage();
        if (observer != null && observer.parseFailures() > 0) {
            metrics.responseParseFailures(a.replica, observer.parseFailures());
        }
        log.usage(usage);
        Lease lease = a.lease;
        if (status >= 500) {
            lease.failed();
        } else {
            ProxyListener.takeFeedback(); // nothing stale from an earlier lease on this thread
            lease.succeeded(usage);
            a.feedback = ProxyListener.takeFeedback();
        }
        lease.close();
        log.result("ok");
    }

    /**
     * Records the route of the next turn (this request's messages and the reply) for the replica that
     * served it, unless the reply is not plain text, too long, or the replica has just shown that it
     * does not keep what the router believes it does (a stale prediction).
     */
    private void learnAnswer(Routing routing, Inbound in, Replica replica, ResponseObserver observer, Attempt a) {
        String result;
        List<String> reply = observer.reply();
        if (a.timedOut) {
            return;
        }
        if (reply == null) {
            result = observer.replyProblem();
        } else if (a.feedback != null && a.feedback.stale()) {
            result = "stale_route";
        } else {
            try {
                result = AnswerLearning.learn(routing.router, extraction, in.extracted(), reply, replica);
            } catch (RuntimeException e) {
                LOG.debug("learning an answer failed: {}", e.getClass().getName()); // never the message: no prompt text
                result = "unusable_request";
            }
        }
        metrics.answerLearned(result);
    }

    /**
     * Adds to {@code buf} (after {@code from} bytes) what has already arrived from the replica, without
     * waiting for more, so that a stream's events that came together leave in one chunk and one flush
     * instead of one each (a replica writes an HTTP chunk per event; each flush is a TCP segment).
     */
    static int readArrived(InputStream body, byte[] buf, int from) throws IOException {
        int n = from;
        int ready;
        while (n < buf.length && (ready = body.available()) > 0) {
            int got = body.read(buf, n, Math.min(ready, buf.length - n));
            if (got <= 0) {
                break;
            }
            n += got;
        }
        return n - from;
    }

    private static void write(OutputStream out, byte[] b, int off, int len, boolean flush, Attempt a, DecisionLog log)
            throws Abort {
        try {
            out.write(b, off, len);
            if (flush) {
                out.flush();
            }
        } catch (IOException e) {
            closeQuietly(a.body); // cancels the upstream exchange
            // the lease closes with no outcome recorded: cancelled, which says nothing about the replica
            log.result(a.timedOut ? "timeout_mid_body" : "client_closed");
            throw new Abort("client went away");
        }
    }

    private static void upstreamBroke(Attempt a, DecisionLog log, IOException e) {
        if (a.timedOut) {
            log.result("timeout_mid_body"); // the deadline task closed the body and the lease
        } else {
            a.lease.failed();
            log.result("upstream_broke_mid_body");
        }
        LOG.debug("upstream body failed after the response started: {}", e.toString());
    }

    private static byte[] readUpTo(Attempt a, int limit, DecisionLog log) throws Abort {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[8192];
        try {
            while (buf.size() < limit) {
                int n = a.body.read(chunk, 0, Math.min(chunk.length, limit - buf.size()));
                if (n < 0) {
                    break;
                }
                buf.write(chunk, 0, n);
            }
        } catch (IOException e) {
            upstreamBroke(a, log, e);
            throw new Abort("upstream body failed");
        }
        return buf.toByteArray();
    }

    private HttpRequest buildRequest(HttpExchange ex, Inbound in, Replica replica, Duration timeout) throws BadTarget {
        URI uri = target(replica.id(), in.rawPath(), in.rawQuery());
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(timeout);
        HopByHop.copyRequestHeaders(ex.getRequestHeaders(), b);
        HttpRequest.BodyPublisher publisher = in.body().length == 0 && !hasBodyMethod(in.method())
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(in.body());
        try {
            b.method(in.method(), publisher);
        } catch (IllegalArgumentException e) {
            throw new BadTarget("method not supported: " + DecisionLog.safe(in.method(), 16));
        }
        return b.build();
    }

    private static boolean hasBodyMethod(String method) {
        return "POST".equalsIgnoreCase(method) || "PUT".equalsIgnoreCase(method) || "PATCH".equalsIgnoreCase(method);
    }

    /** A request target the proxy refuses to forward. */
    static final class BadTarget extends Exception {
        private static final long serialVersionUID = 1L;

        BadTarget(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * The upstream URI: the replica's base URL followed by the request's raw path and query. Only the
     * path and query of the client's request target are used (never its scheme or authority, never the
     * Host header), and the result is checked to still point at the replica.
     */
    static URI target(String base, String rawPath, String rawQuery) throws BadTarget {
        String path = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
        if (!path.startsWith("/")) {
            throw new BadTarget("the request target must be a path starting with '/'");
        }
        String s = base + path + (rawQuery == null ? "" : "?" + rawQuery);
        URI uri;
        URI b;
        try {
            uri = new URI(s);
            b = new URI(base);
        } catch (URISyntaxException e) {
            throw new BadTarget("the request target is not a valid URI path");
        }
        if (!Objects.equals(uri.getScheme(), b.getScheme())
                || !Objects.equals(uri.getHost(), b.getHost())
                || uri.getPort() != b.getPort()
                || uri.getRawUserInfo() != null
                || uri.getRawFragment() != null) {
            throw new BadTarget("the request target does not resolve to the replica");
        }
        return uri;
    }

    static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null || m.isEmpty() ? "" : " (" + m + ")");
    }

    static void closeQuietly(InputStream in) {
        if (in == null) {
            return;
        }
        try {
            in.close();
        } catch (IOException | RuntimeException ignored) {
            // closing to cancel: nothing more to do
        }
    }
}
