package dev.cart.proxy;

import com.sun.net.httpserver.HttpExchange;
import dev.cart.core.Lease;
import dev.cart.core.Replica;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
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
import java.util.Locale;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends one client request to a replica and relays the answer, with retries.
 *
 * <p>How: each attempt asks the router for a replica (excluding every replica that already failed this
 * request), sends the buffered body with the JDK client and waits for the response head. A connection
 * error, or a status in {@code proxy.retryable_statuses}, ends the attempt before anything reaches the
 * client: the lease is closed as failed (5xx and connection errors) and, while retries remain, the next
 * attempt starts after an exponential backoff with jitter. Otherwise the head is sent to the client and
 * the body copied as it arrives: a {@code text/event-stream} (or any body of unknown length) is sent
 * chunked and flushed after every read, so each upstream chunk reaches the client immediately; a body
 * of known length keeps its length. The last attempt's response is relayed as it is.
 *
 * <p>Timeouts: {@code connect_timeout_secs} is the client's connect timeout; {@code request_timeout_secs}
 * bounds the whole exchange: the request's own timeout covers the wait for the head, and a scheduled task
 * closes the upstream body stream at the deadline, which wakes the copying thread.
 *
 * <p>Failure while relaying: if the client goes away, the upstream stream is closed (cancelling the
 * upstream request) and the lease closed with no outcome; if the replica fails or the deadline passes,
 * the lease is closed as failed. In both cases the client connection is dropped by throwing
 * {@link Abort} out of the handler, so a truncated body is never framed as complete.
 *
 * <p>Concurrency: one instance serves all requests; per-request state lives on the handling thread. The
 * lease is closed exactly once on every path (try/finally plus the lease's own idempotence).
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

    /** What is forwarded: method, target path and query (raw), body, and whether to cache the answer. */
    record Inbound(String method, String rawPath, String rawQuery, byte[] body, boolean cacheModels) {
    }

    private final HttpClient client;
    private final ScheduledExecutorService scheduler;
    private final Sleeper sleeper;
    private final Supplier<RandomGenerator> random;
    private final ProxyConfig.Proxy config;
    private final Backoff backoff;
    private final Set<Integer> retryable;
    private final ModelsCache models;
    private final ProxyMetrics metrics;

    Forwarder(HttpClient client, ScheduledExecutorService scheduler, Sleeper sleeper,
              Supplier<RandomGenerator> random, ProxyConfig.Proxy config, ModelsCache models, ProxyMetrics metrics) {
        this.client = client;
        this.scheduler = scheduler;
        this.sleeper = sleeper;
        this.random = random;
        this.config = config;
        this.backoff = Backoff.of(config);
        this.retryable = new HashSet<>(config.retryableStatuses());
        this.models = models;
        this.metrics = metrics;
    }

    void forward(HttpExchange ex, Inbound in, RouteRequest first, Routing routing, DecisionLog log)
            throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(config.requestTimeoutSecs()).toNanos();
        RouteRequest request = first;
        String lastFailure = null;
        String retryCause = null;
        for (int attempt = 0; ; attempt++) {
            RouteDecision d = routing.router.choose(request);
            log.decision(d);
            log.retries(attempt);
            if (!d.routed()) {
                if (attempt == 0) {
                    ex.getResponseHeaders().set("Retry-After", "1");
                    reply(ex, log, 503, "no_replica", "no_replica_available",
                            "no replica can take the request now (all unhealthy, circuit-open or at max_load)");
                } else {
                    reply(ex, log, 502, "upstream_failed", "upstream_failed", "the request failed on "
                            + attempt + " replica(s) and no other replica is available; last error: "
                            + lastFailure);
                }
                return;
            }
            Replica replica = d.replica();
            Lease lease = d.lease();
            boolean retry = false;
            try {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    reply(ex, log, 504, "timeout", "upstream_timeout",
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
                    resp = client.send(upstream, HttpResponse.BodyHandlers.ofInputStream());
                } catch (HttpConnectTimeoutException | ConnectException e) {
                    lease.failed();
                    lastFailure = replica.id() + ": " + describe(e);
                    retryCause = "connect_error";
                    retry = attempt < config.maxRetries();
                    if (!retry) {
                        reply(ex, log, 502, "connect_failed", "upstream_unreachable",
                                "could not connect to the replica: " + lastFailure);
                        return;
                    }
                    continue;
                } catch (HttpTimeoutException e) {
                    lease.failed();
                    reply(ex, log, 504, "timeout", "upstream_timeout",
                            "the replica did not answer within proxy.request_timeout_secs");
                    return;
                } catch (IOException e) {
                    lease.failed();
                    lastFailure = replica.id() + ": " + describe(e);
                    retryCause = "io_error";
                    retry = attempt < config.maxRetries();
                    if (!retry) {
                        reply(ex, log, 502, "upstream_error", "upstream_connection_error",
                                "the connection to the replica failed: " + lastFailure);
                        return;
                    }
                    continue;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    log.result("interrupted");
                    throw new Abort("interrupted while waiting for the replica");
                }
                int status = resp.statusCode();
                lease.status(status);
                if (retryable.contains(status) && attempt < config.maxRetries()) {
                    closeQuietly(resp.body());
                    if (status >= 500) {
                        lease.failed();
                    } else {
                        lease.succeeded();
                    }
                    lastFailure = replica.id() + ": HTTP " + status;
                    retryCause = "status";
                    retry = true;
                    continue;
                }
                relay(ex, in, replica, resp, lease, deadline, sent, log);
                return;
            } finally {
                lease.close();
                if (retry) {
                    metrics.retry(replica.id(), retryCause);
                    request = request.excluding(replica).attempt(attempt + 1);
                    pause(attempt + 1);
                }
            }
        }
    }

    private void pause(int retry) throws Abort {
        Duration delay = backoff.delay(retry, random.get());
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

    /** Relays status, headers and body of {@code resp}; closes nothing but the upstream body. */
    private void relay(HttpExchange ex, Inbound in, Replica replica, HttpResponse<InputStream> resp, Lease lease,
                       long deadline, long sent, DecisionLog log) throws IOException {
        int status = resp.statusCode();
        InputStream body = resp.body();
        log.status(status);
        HopByHop.copyResponseHeaders(resp.headers(), ex.getResponseHeaders());
        if (config.addRoutedPeerHeader()) {
            ex.getResponseHeaders().set("x-routed-peer", replica.id());
        }
        AtomicBoolean timedOut = new AtomicBoolean();
        long remaining = Math.max(1, deadline - System.nanoTime());
        ScheduledFuture<?> timer = scheduler.schedule(() -> {
            timedOut.set(true);
            closeQuietly(body);
        }, remaining, TimeUnit.NANOSECONDS);
        try {
            boolean noBody = "HEAD".equalsIgnoreCase(in.method()) || status == 204 || status == 304
                    || status < 200;
            if (noBody) {
                metrics.firstByte(replica.id(), System.nanoTime() - sent);
                ex.sendResponseHeaders(status, -1);
                closeQuietly(body);
                finish(lease, status, log);
                return;
            }
            String contentType = resp.headers().firstValue("content-type").orElse("");
            boolean sse = contentType.toLowerCase(Locale.ROOT).startsWith("text/event-stream");
            OptionalLong length = resp.headers().firstValueAsLong("content-length");
            boolean chunkedUpstream = resp.headers().firstValue("transfer-encoding").isPresent();
            byte[] prefix = null;
            if (in.cacheModels() && status == 200) {
                prefix = readUpTo(body, MODELS_CACHE_LIMIT + 1, timedOut, lease, log);
                metrics.firstByte(replica.id(), System.nanoTime() - sent);
                if (prefix.length <= MODELS_CACHE_LIMIT) {
                    models.put(prefix, contentType.isEmpty() ? "application/json" : contentType);
                    ex.sendResponseHeaders(status, prefix.length == 0 ? -1 : prefix.length);
                    finish(lease, status, log);
                    lease.close();
                    write(ex.getResponseBody(), prefix, 0, prefix.length, false, body, lease, log);
                    ex.getResponseBody().close();
                    return;
                }
            }
            boolean fixed = !sse && !chunkedUpstream && length.isPresent() && length.getAsLong() >= 0
                    && prefix == null;
            if (fixed && length.getAsLong() == 0) {
                metrics.firstByte(replica.id(), System.nanoTime() - sent);
                ex.sendResponseHeaders(status, -1);
                closeQuietly(body);
                finish(lease, status, log);
                return;
            }
            ex.sendResponseHeaders(status, fixed ? length.getAsLong() : 0);
            OutputStream out = ex.getResponseBody();
            boolean flushEach = !fixed;
            if (prefix != null) {
                write(out, prefix, 0, prefix.length, flushEach, body, lease, log);
            }
            byte[] buf = new byte[16 * 1024];
            boolean first = prefix == null;
            while (true) {
                int n;
                try {
                    n = body.read(buf);
                } catch (IOException e) {
                    upstreamBroke(lease, log, timedOut.get(), e);
                    throw new Abort("upstream body failed");
                }
                if (first) {
                    first = false;
                    metrics.firstByte(replica.id(), System.nanoTime() - sent);
                }
                if (n < 0) {
                    break;
                }
                if (n > 0) {
                    write(out, buf, 0, n, flushEach, body, lease, log);
                }
            }
            // the replica is done: give its slot back before the last bytes go to the client
            finish(lease, status, log);
            lease.close();
            try {
                out.close();
            } catch (IOException e) {
                log.result("client_closed");
                throw new Abort("response could not be completed");
            }
        } finally {
            timer.cancel(false);
            closeQuietly(body);
        }
    }

    private static void finish(Lease lease, int status, DecisionLog log) {
        if (status >= 500) {
            lease.failed();
        } else {
            lease.succeeded();
        }
        log.result("ok");
    }

    private static void write(OutputStream out, byte[] b, int off, int len, boolean flush, InputStream upstream,
                              Lease lease, DecisionLog log) throws Abort {
        try {
            out.write(b, off, len);
            if (flush) {
                out.flush();
            }
        } catch (IOException e) {
            clientGone(upstream, lease, log);
            throw new Abort("client went away");
        }
    }

    private static void clientGone(InputStream upstream, Lease lease, DecisionLog log) {
        closeQuietly(upstream); // cancels the upstream exchange
        log.result("client_closed");
        // the lease closes with no outcome recorded: cancelled, which says nothing about the replica
    }

    private static void upstreamBroke(Lease lease, DecisionLog log, boolean timedOut, IOException e) {
        lease.failed();
        log.result(timedOut ? "timeout_mid_body" : "upstream_broke_mid_body");
        LOG.debug("upstream body failed after the response started: {}", e.toString());
    }

    private static byte[] readUpTo(InputStream in, int limit, AtomicBoolean timedOut, Lease lease, DecisionLog log)
            throws Abort {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[8192];
        try {
            while (buf.size() < limit) {
                int n = in.read(chunk, 0, Math.min(chunk.length, limit - buf.size()));
                if (n < 0) {
                    break;
                }
                buf.write(chunk, 0, n);
            }
        } catch (IOException e) {
            upstreamBroke(lease, log, timedOut.get(), e);
            throw new Abort("upstream body failed");
        }
        return buf.toByteArray();
    }

    private HttpRequest buildRequest(HttpExchange ex, Inbound in, Replica replica, Duration timeout)
            throws BadTarget {
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
        return "POST".equalsIgnoreCase(method) || "PUT".equalsIgnoreCase(method)
                || "PATCH".equalsIgnoreCase(method);
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
        if (!Objects.equals(uri.getScheme(), b.getScheme()) || !Objects.equals(uri.getHost(), b.getHost())
                || uri.getPort() != b.getPort() || uri.getRawUserInfo() != null || uri.getRawFragment() != null) {
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
