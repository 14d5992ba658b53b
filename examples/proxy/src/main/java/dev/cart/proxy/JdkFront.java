package dev.cart.proxy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDK front ({@code server.engine: jdk}): the dependency-free sample. The JDK {@link
 * com.sun.net.httpserver.HttpServer} hands each exchange to this handler on a request thread (see {@link
 * ServerRuntime}), which reads the body, asks {@link ProxyCore} what to do, and drives the {@link Forwarder}'s
 * steps with the blocking JDK {@link HttpClient}: one thread per request for its whole life.
 *
 * <p>Relaying: the head goes to the client, then the body as it arrives: a {@code text/event-stream} (or
 * any body of unknown length) chunked and flushed after every read, a body of known length with its
 * length. Each chunk is written first and then given to the {@link Relay} (which observes it), so reading
 * the usage delays nothing. When the replica's body ends (for a body of known length: as soon as its last
 * byte has been read, before it is written), the relay closes the lease, so a slow client never holds the
 * replica's slot once the answer is complete.
 *
 * <p>Deadline: {@code request_timeout_secs} bounds the whole exchange. The request's own timeout covers
 * the wait for the head; a scheduled task fires at the deadline and closes the upstream body (which
 * wakes a thread waiting for the replica) and the lease (which frees the replica's slot even while the
 * relaying thread is blocked writing to a client that stopped reading; the JDK server then drops that
 * connection at its response limit, see {@link ServerLimits}).
 *
 * <p>Failure while relaying: if the client goes away, the upstream stream is closed (cancelling the
 * upstream request); if the replica fails mid-body, the lease is closed as failed. In both cases the
 * client connection is dropped by throwing {@link Abort} out of the handler, so a truncated body is never
 * framed as complete. An unexpected exception in the proxy's own code becomes a 500 if the response has
 * not started, and a dropped connection otherwise. The exchange is always closed.
 *
 * <p>Stale connections: the JDK client does not say whether a request went on a reused connection, so a
 * stale-looking failure (no byte of an answer, the connection reset or at its end) is taken as a reused
 * connection only when an answer from the same replica arrived within the client's keep-alive time
 * ({@link UpstreamKeepAlive#SECONDS}): otherwise no pooled connection to it can exist, and the failure is
 * the replica's. The {@link Forwarder.Exchange} allows one such resend per client request.
 */
final class JdkFront implements HttpHandler {

    private static final Logger LOG = LoggerFactory.getLogger(JdkFront.class);

    /** Initial capacity of a request body buffer; it grows as bytes arrive, never ahead of them. */
    static final int INITIAL_BODY_CAPACITY = 64 * 1024;

    /** Thrown out of the handler to make the HTTP server drop the client connection mid-response. */
    static final class Abort extends IOException {
        private static final long serialVersionUID = 1L;

        Abort(String message) {
            super(message, null);
        }
    }

    private final ProxyCore core;
    private final HttpClient client;
    private final ScheduledExecutorService scheduler;
    private final Sleeper sleeper;
    private final BodyBudget budget;
    /** Proxied requests the request threads can hold at once (Java 17-20; see {@link ServerRuntime}). */
    private final int threadLimit;
    /** When an answer from each replica last arrived (nanoTime), for telling a reused connection. */
    private final Map<String, Long> lastAnswer = new ConcurrentHashMap<>();

    JdkFront(
            ProxyCore core,
            HttpClient client,
            ScheduledExecutorService scheduler,
            Sleeper sleeper,
            BodyBudget budget,
            int threadLimit) {
        this.core = core;
        this.client = client;
        this.scheduler = scheduler;
        this.sleeper = sleeper;
        this.budget = budget;
        this.threadLimit = threadLimit;
    }

    /** Binds the JDK server on {@code server.host:port} with its limits and request executor. */
    static Front listen(
            ProxyConfig config,
            ProxyCore core,
            HttpClient client,
            ScheduledExecutorService scheduler,
            Sleeper sleeper,
            BodyBudget budget)
            throws IOException {
        ServerRuntime.Executor executor =
                ServerRuntime.requestExecutor(config.server().maxThreads());
        ServerLimits.apply(config);
        HttpServer server;
        try {
            server = HttpServer.create(
                    new InetSocketAddress(
                            config.server().host(), config.server().port()),
                    1024);
        } catch (IOException e) {
            executor.service().shutdownNow();
            throw e;
        }
        server.createContext("/", new JdkFront(core, client, scheduler, sleeper, budget, executor.proxiedLimit()));
        server.setExecutor(executor.service());
        return new Front() {
            @Override
            public int port() {
                return server.getAddress().getPort();
            }

            @Override
            public void start() {
                server.start();
            }

            @Override
            public String description() {
                return "the JDK HttpServer front, request handlers on " + executor.description();
            }

            @Override
            public void close() {
                server.stop(0);
                executor.service().shutdownNow();
                try {
                    executor.service().awaitTermination(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        long start = System.nanoTime();
        ProxyCore.Plan plan = null;
        boolean abort = false;
        try {
            RequestHead head = new RequestHead(
                    ex.getRequestMethod(),
                    ex.getRequestURI().getRawPath(),
                    ex.getRequestURI().getRawQuery(),
                    ex.getRequestURI().getPath(),
                    ex.getRequestHeaders(),
                    ex.getRequestMethod().length()
                            + ex.getRequestURI().toString().length()
                            + ex.getProtocol().length()
                            + 2);
            plan = core.plan(head, threadLimit, ServerRuntime.onOverflowThread());
            if (plan instanceof ProxyCore.Own own) {
                write(ex, own.answer());
            } else {
                proxied(ex, (ProxyCore.Proxied) plan);
            }
        } catch (Abort e) {
            abort = true;
            throw e; // the server drops the connection without completing the response
        } catch (IOException e) {
            abort = true; // writing to the client failed: nothing more can be said to it
            throw new Abort("client connection failed: " + e.getMessage());
        } catch (RuntimeException | Error e) {
            LOG.error(
                    "internal error handling {} {}",
                    DecisionLog.safe(ex.getRequestMethod(), 16),
                    DecisionLog.safe(ex.getRequestURI().getRawPath(), 200),
                    e);
            if (ex.getResponseCode() != -1) {
                abort = true;
                throw new Abort("internal error after the response started");
            }
            try {
                write(ex, Answer.error(500, "internal_error", "the proxy failed to handle the request"));
            } catch (IOException ignored) {
                abort = true;
                throw new Abort("internal error");
            }
        } finally {
            if (!abort) {
                ex.close();
            }
            core.finished(plan, ex.getResponseCode(), start);
        }
    }

    /** Writes one of the proxy's own answers, whole. */
    static void write(HttpExchange ex, Answer a) throws IOException {
        ex.getResponseHeaders().putAll(a.headers());
        boolean head = "HEAD".equalsIgnoreCase(ex.getRequestMethod());
        if (head || a.body().length == 0) {
            ex.sendResponseHeaders(a.status(), -1);
            return;
        }
        ex.sendResponseHeaders(a.status(), a.body().length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(a.body());
        }
    }

    private void proxied(HttpExchange ex, ProxyCore.Proxied p) throws IOException {
        BodyBudget.Grant grant = budget.none();
        try {
            byte[] body = new byte[0];
            if (p.needsBody()) {
                grant = budget.grant();
                body = readBody(ex, p, grant);
                if (body == null) {
                    return;
                }
            }
            ProxyCore.Prepared prepared = core.prepare(p, body);
            if (prepared.answer() != null) {
                write(ex, prepared.answer());
                return;
            }
            if (prepared.pending() != null) {
                write(ex, prepared.pending().join()); // this front has a thread per request
                return;
            }
            drive(ex, prepared.exchange());
        } finally {
            grant.close();
        }
    }

    /** Performs the exchange's steps until the answer is written or relayed. */
    private void drive(HttpExchange ex, Forwarder.Exchange x) throws IOException {
        Forwarder.Step step = x.next();
        while (true) {
            if (step instanceof Forwarder.Reply r) {
                write(ex, r.answer());
                return;
            }
            if (step instanceof Forwarder.Wait w) {
                try {
                    sleeper.sleep(w.pause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new Abort("interrupted during retry backoff");
                }
                step = x.next();
                continue;
            }
            Forwarder.Send s = (Forwarder.Send) step;
            HttpRequest request;
            try {
                request = build(s, x.in);
            } catch (IllegalArgumentException e) {
                step = x.refused(s, "method not supported: " + DecisionLog.safe(x.in.method(), 16));
                continue;
            }
            HttpResponse<InputStream> resp;
            try {
                resp = send(x, s, request);
            } catch (HttpConnectTimeoutException | ConnectException e) {
                step = x.failed(s, Forwarder.Failure.CONNECT, Forwarder.describe(e));
                continue;
            } catch (HttpTimeoutException e) {
                step = x.failed(s, Forwarder.Failure.TIMEOUT, Forwarder.describe(e));
                continue;
            } catch (IOException e) {
                step = x.failed(s, Forwarder.Failure.IO, Forwarder.describe(e));
                continue;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                s.lease.close();
                x.log.result("interrupted");
                throw new Abort("interrupted while waiting for the replica");
            }
            lastAnswer.put(s.replica.id(), System.nanoTime());
            step = x.answered(s, resp.statusCode(), HopByHop.of(resp.headers()));
            if (step instanceof Relay relay) {
                relay(ex, relay, resp.body(), x);
                return;
            }
            closeQuietly(resp.body());
        }
    }

    /** Sends, and once more if the exchange allows a stale-connection resend (see the class comment). */
    private HttpResponse<InputStream> send(Forwarder.Exchange x, Forwarder.Send s, HttpRequest request)
            throws IOException, InterruptedException {
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (HttpTimeoutException | ConnectException e) {
            throw e;
        } catch (IOException e) {
            Long last = lastAnswer.get(s.replica.id());
            boolean mayBeReused =
                    last != null && System.nanoTime() - last < TimeUnit.SECONDS.toNanos(UpstreamKeepAlive.SECONDS);
            if (!staleConnection(e) || !x.resendStale(s, mayBeReused, true)) {
                throw e;
            }
            return client.send(request, HttpResponse.BodyHandlers.ofInputStream());
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

    private static HttpRequest build(Forwarder.Send s, Forwarder.Inbound in) {
        HttpRequest.Builder b = HttpRequest.newBuilder(s.target).timeout(Duration.ofNanos(s.remainingNanos));
        HopByHop.copyTo(s.headers, b);
        HttpRequest.BodyPublisher publisher =
                in.hasBody() ? HttpRequest.BodyPublishers.ofByteArray(in.body()) : HttpRequest.BodyPublishers.noBody();
        b.method(in.method(), publisher);
        return b.build();
    }

    /** Relays status, headers and body; closes nothing but the upstream body and (through the relay) the lease. */
    private void relay(HttpExchange ex, Relay rl, InputStream body, Forwarder.Exchange x) throws IOException {
        long remaining = Math.max(1, x.deadline() - System.nanoTime());
        ScheduledFuture<?> timer = scheduler.schedule(
                () -> {
                    rl.deadline();
                    closeQuietly(body); // wakes a thread waiting for the replica
                },
                remaining,
                TimeUnit.NANOSECONDS);
        try {
            ex.getResponseHeaders().putAll(rl.clientHeaders);
            if (rl.models) {
                relayModels(ex, rl, body);
                return;
            }
            if (rl.noBody || rl.length == 0) {
                rl.firstByte();
                ex.sendResponseHeaders(rl.status, -1);
                closeQuietly(body);
                rl.upstreamDone();
                return;
            }
            boolean fixed = rl.length > 0;
            ex.sendResponseHeaders(rl.status, fixed ? rl.length : 0);
            OutputStream out = ex.getResponseBody();
            boolean flushEach = !fixed;
            byte[] buf = new byte[16 * 1024];
            long total = 0;
            while (true) {
                int n;
                try {
                    n = body.read(buf);
                    if (n > 0 && flushEach) {
                        n += readArrived(body, buf, n);
                    }
                } catch (IOException e) {
                    rl.upstreamBroke(e);
                    throw new Abort("upstream body failed");
                }
                rl.firstByte();
                if (n < 0) {
                    rl.upstreamDone();
                    break;
                }
                if (n == 0) {
                    continue;
                }
                total += n;
                if (fixed && total >= rl.length) {
                    // the replica is done: give its slot back before the last bytes go to the client
                    rl.body(buf, 0, n);
                    rl.upstreamDone();
                    write(out, buf, 0, n, false, rl, body);
                    break;
                }
                write(out, buf, 0, n, flushEach, rl, body);
                rl.body(buf, 0, n);
            }
            try {
                out.close();
            } catch (IOException e) {
                rl.clientGone();
                throw new Abort("response could not be completed");
            }
            rl.delivered();
        } finally {
            timer.cancel(false);
            closeQuietly(body);
        }
    }

    /**
     * A {@code /v1/models} answer: read whole (up to {@link Forwarder#MODELS_CACHE_LIMIT}), cached when its
     * headers allow, then sent; a larger one is relayed as it comes and not cached.
     */
    private static void relayModels(HttpExchange ex, Relay rl, InputStream body) throws IOException {
        byte[] whole = readUpTo(rl, body, Forwarder.MODELS_CACHE_LIMIT + 1);
        rl.firstByte();
        rl.modelsBody(whole);
        if (whole.length <= Forwarder.MODELS_CACHE_LIMIT) {
            ex.sendResponseHeaders(200, whole.length == 0 ? -1 : whole.length);
            rl.upstreamDone();
            write(ex.getResponseBody(), whole, 0, whole.length, false, rl, body);
            ex.getResponseBody().close();
            return;
        }
        // too large to cache: relay what was read and the rest as it comes
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        write(out, whole, 0, whole.length, true, rl, body);
        byte[] buf = new byte[16 * 1024];
        for (int n; ; ) {
            try {
                n = body.read(buf);
            } catch (IOException e) {
                rl.upstreamBroke(e);
                throw new Abort("upstream body failed");
            }
            if (n < 0) {
                break;
            }
            write(out, buf, 0, n, true, rl, body);
        }
        rl.upstreamDone();
        out.close();
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

    private static void write(OutputStream out, byte[] b, int off, int len, boolean flush, Relay rl, InputStream body)
            throws Abort {
        try {
            out.write(b, off, len);
            if (flush) {
                out.flush();
            }
        } catch (IOException e) {
            closeQuietly(body); // cancels the upstream exchange
            rl.clientGone(); // no outcome recorded: cancelled, which says nothing about the replica
            throw new Abort("client went away");
        }
    }

    private static byte[] readUpTo(Relay rl, InputStream body, int limit) throws Abort {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[8192];
        try {
            while (buf.size() < limit) {
                int n = body.read(chunk, 0, Math.min(chunk.length, limit - buf.size()));
                if (n < 0) {
                    break;
                }
                buf.write(chunk, 0, n);
            }
        } catch (IOException e) {
            rl.upstreamBroke(e);
            throw new Abort("upstream body failed");
        }
        return buf.toByteArray();
    }

    /**
     * Reads the request body, refusing more than {@code proxy.max_body_bytes} with a 413 (then returns
     * null), and more than the buffered-body budget allows with a 503. A declared Content-Length above the
     * limit is refused before reading anything. The buffer starts at most {@link #INITIAL_BODY_CAPACITY}
     * bytes and grows with what actually arrives: a declared length reserves nothing (idle uploads
     * declaring 32 MiB each must not take 32 MiB of heap each).
     */
    private byte[] readBody(HttpExchange ex, ProxyCore.Proxied p, BodyBudget.Grant grant) throws IOException {
        int limit = core.maxBodyBytes();
        long declared = declaredLength(ex);
        if (declared > limit) {
            write(ex, core.tooLarge(p));
            return null;
        }
        int initial = (int) Math.min(declared >= 0 ? declared : 8192, INITIAL_BODY_CAPACITY);
        ByteArrayOutputStream buf = new ByteArrayOutputStream(initial);
        byte[] chunk = new byte[16 * 1024];
        try (InputStream in = ex.getRequestBody()) {
            int n;
            while ((n = in.read(chunk)) >= 0) {
                if (buf.size() + (long) n > limit) {
                    write(ex, core.tooLarge(p));
                    return null;
                }
                if (!grant.take(n)) {
                    write(ex, budget.exhausted(p));
                    return null;
                }
                buf.write(chunk, 0, n);
            }
        } catch (IOException e) {
            // broken chunked framing, or a body that ended before its Content-Length: the connection is
            // no longer usable, but the client may still be reading (the JDK server closes it afterwards)
            write(ex, core.badBody(p));
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
