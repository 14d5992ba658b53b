package dev.cart.proxy.jdk;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import dev.cart.proxy.Front;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.http.BodyBudget;
import dev.cart.proxy.http.HeaderView;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.http.RequestHead;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.Relay;
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
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
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
 * any body of unknown length) chunked and flushed after what has arrived is written, a body of known
 * length with its length. The body is read from the replica into an {@link AnswerBuffer} of up to
 * {@link Relay#BUFFER_BYTES} (the Netty front's bound too) on the HTTP client's threads, observed there by
 * the {@link Relay}, which closes the lease when the replica's answer is complete; the request thread
 * writes it to the client. So a slow reader holds the replica's slot only for an answer larger than the
 * buffer, and then only until the rest fits (backpressure: beyond the bound, reading from the replica
 * pauses).
 *
 * <p>Deadline: {@code request_timeout_secs} bounds the whole exchange. The request's own timeout covers
 * the wait for the head; a scheduled task fires at the deadline and, if the replica's answer is still
 * coming, cancels it (which wakes the thread waiting for it) and closes the lease, even while the relaying
 * thread is blocked writing to a client that stopped reading; the JDK server then drops that connection at
 * its response limit, see {@link ServerLimits}.
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
public final class JdkFront implements HttpHandler {

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
    private final AnswerBudget answers;
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
            AnswerBudget answers,
            int threadLimit) {
        this.core = core;
        this.client = client;
        this.scheduler = scheduler;
        this.sleeper = sleeper;
        this.budget = budget;
        this.answers = answers;
        this.threadLimit = threadLimit;
    }

    /** Binds the JDK server on {@code server.host:port} with its limits and request executor. */
    public static Front listen(
            ProxyConfig config,
            ProxyCore core,
            HttpClient client,
            ScheduledExecutorService scheduler,
            Sleeper sleeper,
            BodyBudget budget,
            AnswerBudget answers)
            throws IOException {
        ServerRuntime.Executor executor = ServerRuntime.requestExecutor(
                config.server().maxThreads(), config.server().maxConnections());
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
        server.createContext(
                "/", new JdkFront(core, client, scheduler, sleeper, budget, answers, executor.proxiedLimit()));
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
                    HeaderView.of(ex.getRequestHeaders()),
                    ex.getRequestMethod().length()
                            + ex.getRequestURI().toString().length()
                            + ex.getProtocol().length()
                            + 2);
            if (!validLength(ex.getRequestHeaders().getFirst("Content-Length"))) {
                // the JDK server reads "+75" as 75 (Long.parseLong); RFC 9110 allows digits only
                write(
                        ex,
                        Answer.error(400, "invalid_request", "Content-Length must be digits only")
                                .closing());
                return;
            }
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
            HttpResponse<Flow.Publisher<List<ByteBuffer>>> resp;
            try {
                resp = send(x, s, request);
            } catch (HttpConnectTimeoutException | ConnectException e) {
                step = x.failed(s, Forwarder.Failure.CONNECT, Forwarder.describe(e));
                continue;
            } catch (HttpTimeoutException e) {
                step = x.failed(s, timeoutFailure(e), Forwarder.describe(e));
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
            step = x.answered(s, resp.statusCode(), HeaderView.of(resp.headers()));
            if (step instanceof Relay relay) {
                relay(ex, relay, resp.body(), x);
                return;
            }
            discard(resp.body(), false); // not relayed: the upstream exchange is cancelled
        }
    }

    /** Sends, and once more if the exchange allows a stale-connection resend (see the class comment). */
    private HttpResponse<Flow.Publisher<List<ByteBuffer>>> send(
            Forwarder.Exchange x, Forwarder.Send s, HttpRequest request) throws IOException, InterruptedException {
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofPublisher());
        } catch (HttpTimeoutException | ConnectException e) {
            throw e;
        } catch (IOException e) {
            Long last = lastAnswer.get(s.replica.id());
            boolean mayBeReused =
                    last != null && System.nanoTime() - last < TimeUnit.SECONDS.toNanos(UpstreamKeepAlive.SECONDS);
            if (!staleConnection(e) || !x.resendStale(s, mayBeReused, true)) {
                throw e;
            }
            return client.send(request, HttpResponse.BodyHandlers.ofPublisher());
        }
    }

    /**
     * What a timeout of the JDK client was. Its connect timer, when it fires as the connection completes (a loaded
     * machine delays the client's own continuation past {@code connect_timeout_secs}), is reported as a plain
     * {@code HttpTimeoutException("request timed out")}, not as an {@link HttpConnectTimeoutException}, because the
     * connection counts as connected by the time the failure is classified (the JDK's
     * {@code MultiExchange.toTimeoutException}); its cause, the timer's {@link ConnectException}, tells it apart
     * from the request's own timeout, which has none. A connect timeout is a connect failure (retried on another
     * replica), not the end of {@code request_timeout_secs} (a 504).
     */
    public static Forwarder.Failure timeoutFailure(HttpTimeoutException e) {
        if (e instanceof HttpConnectTimeoutException) {
            return Forwarder.Failure.CONNECT;
        }
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            if (c instanceof ConnectException) {
                return Forwarder.Failure.CONNECT;
            }
        }
        return Forwarder.Failure.TIMEOUT;
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

    /**
     * Relays status, headers and body through an {@link AnswerBuffer}: the replica's body is read into it
     * (up to {@link Relay#BUFFER_BYTES}) as fast as the replica sends, observed and the lease closed as it
     * arrives and ends, on the HTTP client's threads; this thread writes it to the client as fast as the
     * client reads. The {@link Relay}'s calls from both threads are made under its lock.
     */
    private void relay(HttpExchange ex, Relay rl, Flow.Publisher<List<ByteBuffer>> body, Forwarder.Exchange x)
            throws IOException {
        rl.clientHeaders(ex.getResponseHeaders()::add);
        if (rl.noBody || rl.length == 0) {
            discard(body, true);
            synchronized (rl) {
                rl.firstByte();
                rl.upstreamDone();
            }
            ex.sendResponseHeaders(rl.status, -1);
            return;
        }
        AnswerBuffer buffer = new AnswerBuffer(
                new AnswerBuffer.Events() {
                    @Override
                    public void bytes(byte[] b) {
                        synchronized (rl) {
                            rl.firstByte();
                            rl.body(b, 0, b.length);
                        }
                    }

                    @Override
                    public void complete() {
                        synchronized (rl) {
                            rl.upstreamDone(); // the replica's slot is free, whether or not the client has read it
                        }
                    }

                    @Override
                    public void failed(Throwable t) {
                        synchronized (rl) {
                            rl.upstreamBroke(t);
                        }
                    }
                },
                Relay.BUFFER_BYTES,
                answers);
        long remaining = Math.max(1, x.deadline() - System.nanoTime());
        ScheduledFuture<?> timer = scheduler.schedule(
                () -> {
                    rl.deadline();
                    if (!rl.upstreamComplete()) {
                        buffer.cancel("proxy.request_timeout_secs ended the answer");
                    }
                },
                remaining,
                TimeUnit.NANOSECONDS);
        body.subscribe(buffer);
        try {
            boolean fixed = rl.length > 0;
            ex.sendResponseHeaders(rl.status, fixed ? rl.length : 0);
            OutputStream out = ex.getResponseBody();
            while (true) {
                Object next;
                try {
                    next = buffer.take(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    buffer.cancel("interrupted");
                    synchronized (rl) {
                        rl.clientGone();
                    }
                    throw new Abort("interrupted while relaying");
                }
                if (next == AnswerBuffer.END) {
                    break;
                }
                if (next instanceof AnswerBuffer.Broken broken) {
                    synchronized (rl) {
                        rl.upstreamBroke(broken.cause()); // a no-op when the buffer already told the relay
                    }
                    throw new Abort("upstream body failed");
                }
                byte[] b = (byte[]) next;
                write(out, b, rl, buffer);
                // what else has arrived leaves with it: a stream's events that came together, one flush
                for (byte[] more; (more = buffer.poll()) != null; ) {
                    write(out, more, rl, buffer);
                }
                if (!fixed) {
                    flush(out, rl, buffer);
                }
            }
            try {
                out.close();
            } catch (IOException e) {
                synchronized (rl) {
                    rl.clientGone();
                }
                throw new Abort("response could not be completed");
            }
            synchronized (rl) {
                rl.delivered();
            }
        } finally {
            timer.cancel(false);
            buffer.cancel("the relay ended"); // a no-op for the replica once its answer is complete
        }
    }

    /** Reads and drops a body that is not relayed ({@code drain}: to its end, else cancelled at once). */
    private static void discard(Flow.Publisher<List<ByteBuffer>> body, boolean drain) {
        body.subscribe(new Flow.Subscriber<List<ByteBuffer>>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                if (drain) {
                    s.request(Long.MAX_VALUE);
                } else {
                    s.cancel();
                }
            }

            @Override
            public void onNext(List<ByteBuffer> item) {
                // dropped
            }

            @Override
            public void onError(Throwable t) {
                // nothing is relayed
            }

            @Override
            public void onComplete() {
                // nothing is relayed
            }
        });
    }

    private static void write(OutputStream out, byte[] b, Relay rl, AnswerBuffer buffer) throws Abort {
        try {
            out.write(b);
        } catch (IOException e) {
            clientGone(rl, buffer);
        }
    }

    private static void flush(OutputStream out, Relay rl, AnswerBuffer buffer) throws Abort {
        try {
            out.flush();
        } catch (IOException e) {
            clientGone(rl, buffer);
        }
    }

    /** The client went away: the upstream exchange is cancelled, the lease closed with no outcome. */
    private static void clientGone(Relay rl, AnswerBuffer buffer) throws Abort {
        buffer.cancel("the client went away");
        synchronized (rl) {
            rl.clientGone(); // no outcome recorded: cancelled, which says nothing about the replica
        }
        throw new Abort("client went away");
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

    /** True for no Content-Length, or one of digits only around optional white space (RFC 9110). */
    static boolean validLength(String v) {
        if (v == null) {
            return true;
        }
        String t = v.strip();
        if (t.isEmpty()) {
            return false;
        }
        for (int i = 0; i < t.length(); i++) {
            if (t.charAt(i) < '0' || t.charAt(i) > '9') {
                return false;
            }
        }
        return true;
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
}
