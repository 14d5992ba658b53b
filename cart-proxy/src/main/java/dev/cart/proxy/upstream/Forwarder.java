package dev.cart.proxy.upstream;

import dev.cart.core.Lease;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.spi.Replica;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import dev.cart.flow.FlowRequest;
import dev.cart.flow.FlowResult;
import dev.cart.flow.FlowTicket;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.flow.FlowAnswers;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.HeaderView;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.precise.PreciseLookup;
import dev.cart.proxy.precise.PreciseMode;
import dev.cart.proxy.routing.ProxyListener;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.routing.RoutingKeys;
import java.net.URI;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the proxy decides about sending one client request upstream, with retries, written without any I/O:
 * the front (the Netty front, on an event loop) performs the steps, the rules are here. A front starts an {@link Exchange} and drives it: it asks for the next
 * {@link Step}, performs it (a {@link Send}: send the buffered request to the chosen replica; a
 * {@link Wait}: the backoff before the next attempt; a {@link Reply}: the proxy's own final answer) and
 * reports what happened ({@link Exchange#failed}, {@link Exchange#answered}). An answer that is relayed
 * becomes a {@link Relay}, which takes over the attempt's lease.
 *
 * <p>Attempts: each asks the router for a replica (excluding every replica that already failed this
 * request). A connection error, a dropped request, an invalid answer, or a status in
 * {@code proxy.retryable_statuses}, is retried only if retries remain, another replica could take the
 * request now, and the backoff (exponential, with jitter) ends before {@code request_timeout_secs} does;
 * otherwise the replica's own answer is relayed as it is (status, body, {@code Retry-After}), or, for a
 * connection error, 502. A retried attempt's lease is closed as failed (5xx and connection errors) before
 * the wait. Every routing outcome that the proxy answers itself is mapped to its error in
 * {@link UpstreamAnswers}; when to retry, in {@link RetryPolicy}.
 *
 * <p>Stale connections: a kept-alive upstream connection the replica closed while it sat idle (uvicorn
 * closes them after 5 s) fails a request without saying anything about the replica. Such a request may be
 * sent again once per client request, on a fresh connection, and only if the front knows that the
 * failed connection was a reused one and that the replica had not received the request
 * ({@link Exchange#resendStale}); any other dropped request counts against the replica and the retry
 * budget, so a request that makes replicas drop it is sent at most once per allowed attempt.
 *
 * <p>Concurrency: one Forwarder serves all requests; an Exchange is driven by one thread at a time (the
 * front's), except that a {@link Relay}'s deadline may fire on another thread (see there).
 */
public final class Forwarder {

    private static final Logger LOG = LoggerFactory.getLogger(Forwarder.class);

    /** Largest {@code /v1/models} body read from a replica for the pool's union ({@link ModelsUnion}). */
    static final int MODELS_CACHE_LIMIT = 8 * 1024 * 1024;

    /**
     * What is forwarded: method, target path (for routed endpoints the canonical path) and raw query, body,
     * and the routed endpoint with its extraction (null for anything else). The body is {@code body}, its
     * {@code bodyLength} bytes: the front's first send may write the same bytes from buffers of its own, a
     * retry sends this array.
     */
    public record Inbound(
            String method,
            String rawPath,
            String rawQuery,
            byte[] body,
            int bodyLength,
            Endpoint endpoint,
            ExtractedRequest extracted) {

        public static Inbound routed(
                Endpoint endpoint, String rawQuery, byte[] body, int bodyLength, ExtractedRequest extracted) {
            return new Inbound("POST", endpoint.path(), rawQuery, body, bodyLength, endpoint, extracted);
        }

        public static Inbound passThrough(String method, String rawPath, String rawQuery, byte[] body, int bodyLength) {
            return new Inbound(method, rawPath, rawQuery, body, bodyLength, null, null);
        }

        public boolean hasBody() {
            return bodyLength > 0 || hasBodyMethod(method);
        }
    }

    /** What a front does next for an exchange. */
    public sealed interface Step permits Send, Wait, Reply, Relay, Queued {}

    /**
     * The request waits in the admission queue ({@code flow.*}): the front hands the ticket's completion
     * back to its own thread and asks {@link Exchange#dequeued} for the next step; if the client goes away
     * first, {@link Exchange#clientGone} takes the request out of line.
     */
    public record Queued(FlowTicket ticket) implements Step {}

    /** The proxy's own final answer; the exchange is over. */
    public record Reply(Answer answer) implements Step {
        /** Records this answer in the decision log with {@code result}. */
        Reply logged(DecisionLog log, String result) {
            log.status(answer.status());
            log.result(result);
            return this;
        }
    }

    /** Wait this long (the retry backoff), then ask for the next step. */
    public record Wait(Duration pause) implements Step {}

    /** Send the request to {@link #replica}: {@link #target} with {@link #headers} and the inbound body. */
    public static final class Send implements Step {
        final RouteDecision decision;
        public final Replica replica;
        public final Lease lease;
        public final URI target;
        /**
         * The client's headers as received: the front sends the end-to-end ones (a copy by
         * {@link HopByHop#forEachRequestHeader}, or the map itself less {@link HopByHop#forEachDroppedRequestName})
         * and adds Host and framing.
         */
        public final HeaderView headers;
        /** Nanoseconds left of {@code request_timeout_secs} when the send starts. */
        public final long remainingNanos;

        final long startedNanos = System.nanoTime();

        Send(RouteDecision decision, URI target, HeaderView headers, long remainingNanos) {
            this.decision = decision;
            this.replica = decision.replica();
            this.lease = decision.lease();
            this.target = target;
            this.headers = headers;
            this.remainingNanos = remainingNanos;
        }
    }

    /** How a send failed before an answer could be relayed. */
    public enum Failure {
        /** No connection could be made (refused, connect timeout). */
        CONNECT,
        /** The connection failed after it was made: the replica dropped or reset it. */
        IO,
        /** No answer head before {@code request_timeout_secs}. */
        TIMEOUT,
        /** The answer head is not valid HTTP. */
        INVALID
    }

    final ProxyConfig.Proxy config;
    final boolean learnAnswer;
    final ProxyMetrics metrics;
    final RoutingKeys routingKeys;
    final ProxyListener listener;
    private final Consumer<Duration> backoffs;
    private final RetryPolicy retries;
    /** {@code proxy.request_timeout_secs} in nanoseconds. */
    private final long requestTimeoutNanos;

    private final UpstreamTargets targets = new UpstreamTargets();

    public Forwarder(
            Supplier<RandomGenerator> random,
            ProxyConfig config,
            ProxyMetrics metrics,
            RoutingKeys routingKeys,
            ProxyListener listener,
            Consumer<Duration> backoffs) {
        this.backoffs = backoffs;
        this.config = config.proxy();
        this.learnAnswer = config.cache().learnAnswer();
        this.retries = new RetryPolicy(config.proxy(), random);
        this.requestTimeoutNanos =
                Duration.ofSeconds(config.proxy().requestTimeoutSecs()).toNanos();
        this.metrics = metrics;
        this.routingKeys = routingKeys;
        this.listener = listener;
    }

    /** Starts an exchange for {@code in}, first routed with {@code first}. */
    public Exchange start(Inbound in, RouteRequest first, Routing routing, DecisionLog log, HeaderView clientHeaders) {
        return new Exchange(in, first, routing, log, clientHeaders, null, null);
    }

    /**
     * Starts an exchange for a routed request whose first attempt goes through {@code routing}'s admission
     * queue with {@code flow} (its band, tenant, deadline and cost); retries go to the router directly.
     */
    public Exchange start(
            Inbound in,
            RouteRequest first,
            Routing routing,
            DecisionLog log,
            HeaderView clientHeaders,
            FlowRequest flow) {
        return new Exchange(in, first, routing, log, clientHeaders, flow, null);
    }

    /**
     * As {@link #start(Inbound, RouteRequest, Routing, DecisionLog, HeaderView, FlowRequest)}, for a request of a
     * proxy in precise mode ({@code routing.precise} not null): {@code first} carries the lookup's confirmed view
     * when there is one, each decision is told to the index and the decision line says which mode decided.
     */
    public Exchange start(
            Inbound in,
            RouteRequest first,
            Routing routing,
            DecisionLog log,
            HeaderView clientHeaders,
            FlowRequest flow,
            PreciseLookup lookup) {
        return new Exchange(in, first, routing, log, clientHeaders, flow, lookup);
    }

    /** One client request's attempts. Driven by one thread at a time. */
    public final class Exchange {
        public final Inbound in;
        final Routing routing;
        public final DecisionLog log;
        private final HeaderView clientHeaders;
        private final long deadline;
        private final boolean passThrough;
        private RouteRequest request;
        private int attempt = -1;
        private String lastFailure;
        private String retryCause;
        private boolean resent;
        /** The first attempt's flow inputs; null when it does not go through the admission queue. */
        private final FlowRequest flow;
        /** The request's place in the admission queue while it waits, else null. */
        private FlowTicket waiting;
        /** Set when the client went away: a ticket completing afterwards gives its lease back unused. */
        private boolean gone;
        /** What precise mode made of the request (routed requests of a precise proxy), else null. */
        private final PreciseLookup lookup;

        private Exchange(
                Inbound in,
                RouteRequest first,
                Routing routing,
                DecisionLog log,
                HeaderView clientHeaders,
                FlowRequest flow,
                PreciseLookup lookup) {
            this.in = in;
            this.lookup = lookup;
            this.flow = routing.flow == null || in.endpoint() == null ? null : flow;
            this.routing = routing;
            this.log = log;
            this.request = first;
            this.passThrough = in.endpoint() == null;
            this.deadline = System.nanoTime() + requestTimeoutNanos;
            this.clientHeaders = clientHeaders;
        }

        /** The nanoTime at which {@code request_timeout_secs} ends for this request. */
        public long deadline() {
            return deadline;
        }

        /** Chooses the replica of the next attempt: a {@link Send}, or the answer when there is none. */
        public Step next() {
            attempt++;
            if (attempt == 0 && flow != null) {
                return admit();
            }
            return routed(listener.choose(routing.router, request, passThrough, log));
        }

        /** The first attempt through the admission queue: routed or shed now, or {@link Queued}. */
        private Step admit() {
            FlowTicket t = routing.flow.submit(request, flow);
            if (!t.isDone()) {
                waiting = t;
                return new Queued(t);
            }
            return admitted(t.join());
        }

        /**
         * The request's ticket completed ({@code r}, or {@code e} when it was cancelled or failed), on the
         * front's thread: the next step, or null when there is none to take because the client has gone
         * ({@code clientThere} false, or {@link #clientGone} came first): an admitted request's lease is then
         * closed unused.
         */
        public Step dequeued(FlowResult r, Throwable e, boolean clientThere) {
            waiting = null;
            if (gone || !clientThere) {
                if (r != null && r.admitted()) {
                    log.close(r.decision().lease());
                }
                log.result("client_closed");
                return null;
            }
            if (r == null) {
                LOG.error("the admission queue failed a request", e);
                return reply(500, "internal_error", "internal_error", "the proxy failed to route the request");
            }
            return admitted(r);
        }

        /** True while the request waits in the admission queue. */
        public boolean queued() {
            return waiting != null;
        }

        private Step admitted(FlowResult r) {
            log.flow(r.queuedNanos(), r.band(), r.tenant());
            if (r.shedReason() != null) {
                log.retries(attempt);
                return new Reply(FlowAnswers.shed(in.endpoint(), r))
                        .logged(log, "shed_" + r.shedReason().code());
            }
            listener.decided(r.decision(), log);
            return routed(r.decision());
        }

        /** The attempt's decision made: a {@link Send}, or the answer when no replica was chosen. */
        private Step routed(RouteDecision d) {
            log.decision(d, passThrough);
            log.retries(attempt);
            PreciseMode precise = routing.precise;
            if (precise != null && lookup != null) {
                precise.routed(d, lookup);
                String id = d.routed() ? d.replica().id() : null;
                log.precise(
                        lookup,
                        id == null ? null : precise.mode(id, lookup),
                        id == null || lookup.match() == null
                                ? -1
                                : lookup.match().confirmedTokens(id),
                        id == null || lookup.match() == null
                                ? -1
                                : lookup.match().heldTokens(id));
            }
            if (!d.routed()) {
                return UpstreamAnswers.notRouted(d, in.endpoint(), attempt, lastFailure, log);
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                log.close(d.lease());
                return UpstreamAnswers.timeout(log, false);
            }
            URI uri;
            try {
                uri = targets.target(
                        d.replica().id(),
                        in.rawPath(),
                        in.rawQuery(),
                        routing.replicas.replicas().size());
            } catch (BadTarget e) {
                log.close(d.lease());
                return reply(400, "bad_target", "invalid_request_target", e.getMessage());
            }
            log.upstreamStarted();
            return new Send(d, uri, clientHeaders, remaining);
        }

        /**
         * True if {@code s}, which failed with a stale-looking error, may be sent once more on a fresh
         * connection (not counted against the replica, not a routing retry): only when the failed connection
         * was a {@code reused} kept-alive one and the replica did not get the request ({@code unsent}), and
         * only once per client request.
         */
        public boolean resendStale(Send s, boolean reused, boolean unsent) {
            if (!reused || !unsent || resent || System.nanoTime() >= deadline) {
                return false;
            }
            resent = true;
            metrics.staleConnectionResent();
            return true;
        }

        /** The send failed ({@code detail} names how, without request content): a retry or the answer. */
        public Step failed(Send s, Failure kind, String detail) {
            Lease lease = s.lease;
            lease.failed();
            if (kind == Failure.TIMEOUT) {
                log.close(lease);
                return UpstreamAnswers.timeout(log, true);
            }
            lastFailure = kind == Failure.CONNECT
                    ? "replica " + s.replica.id() + " " + detail
                    : s.replica.id() + ": " + detail;
            if (kind == Failure.INVALID) {
                LOG.warn("replica {} sent an invalid answer: {}", s.replica.id(), detail);
            }
            retryCause = switch (kind) {
                case CONNECT -> "connect_error";
                case INVALID -> "invalid_answer";
                default -> "io_error";
            };
            Duration pause = retryPause(s.replica);
            log.close(lease);
            if (kind == Failure.CONNECT) {
                LOG.warn("{}; {}", lastFailure, pause != null ? "retrying on another replica" : "answering 502");
            }
            if (pause != null) {
                return retry(s, pause);
            }
            return UpstreamAnswers.failed(kind, lastFailure, log);
        }

        /**
         * The replica answered with {@code status} and {@code headers} (as received, framing included): a
         * {@link Relay} for the front to relay, a {@link Wait} before a retry, or a {@link Reply} for an answer
         * that is not valid HTTP. On anything but a Relay the front discards the answer's body.
         */
        public Step answered(Send s, int status, HeaderView headers) {
            String invalid = invalidAnswer(status, headers);
            if (invalid != null) {
                return failed(s, Failure.INVALID, invalid);
            }
            s.lease.status(status);
            if (retries.retryable(status)) {
                Duration pause = retryPause(s.replica);
                if (pause != null) {
                    if (status >= 500) {
                        s.lease.failed();
                    } else {
                        s.lease.succeeded();
                    }
                    log.close(s.lease);
                    lastFailure = s.replica.id() + ": HTTP " + status;
                    retryCause = "status";
                    return retry(s, pause);
                }
            }
            return new Relay(Forwarder.this, this, s, status, headers);
        }

        private Wait retry(Send s, Duration pause) {
            metrics.retry(s.replica.id(), retryCause);
            request = request.excluding(s.replica).attempt(attempt + 1);
            backoffs.accept(pause);
            return new Wait(pause);
        }

        /** The wait before retrying after the current attempt failed on {@code failed}, or null: no retry. */
        private Duration retryPause(Replica failed) {
            return retries.pause(attempt, failed, request, routing, deadline);
        }

        /** The front cannot send {@code s} as asked ({@code message} says why): the 400 that ends the exchange. */
        public Reply refused(Send s, String message) {
            log.close(s.lease);
            return reply(400, "bad_target", "invalid_request_target", message);
        }

        /** The client went away before an answer was relayed: ends the attempt in flight with no verdict. */
        public void clientGone(Send s) {
            if (s != null) {
                log.close(s.lease);
            }
            gone = true;
            FlowTicket t = waiting;
            if (t != null) {
                waiting = null;
                // out of line at once; a request being handed a slot just now completes admitted, and
                // dequeued closes its lease
                t.cancel(false);
            }
            log.result("client_closed");
        }

        private Reply reply(int status, String result, String code, String message) {
            return UpstreamAnswers.reply(log, status, result, code, message);
        }
    }

    /**
     * Why an answer head is still not valid HTTP (RFC 9110, RFC 9112), or null: a status outside 100-599,
     * or both Transfer-Encoding and Content-Length, which a front proxy or client could read differently
     * from how the proxy did; relaying it would pass a response-splitting ambiguity on.
     */
    static String invalidAnswer(int status, HeaderView headers) {
        if (status < 100 || status > 599) {
            return "status " + status + " is outside 100-599";
        }
        if (headers.has("transfer-encoding") && headers.has("content-length")) {
            return "both Transfer-Encoding and Content-Length";
        }
        return null;
    }

    static boolean hasBodyMethod(String method) {
        return "POST".equalsIgnoreCase(method) || "PUT".equalsIgnoreCase(method) || "PATCH".equalsIgnoreCase(method);
    }

    /** A request target the proxy refuses to forward. */
    public static final class BadTarget extends Exception {
        private static final long serialVersionUID = 1L;

        BadTarget(String message) {
            super(message, null, false, false);
        }
    }

    public static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null || m.isEmpty() ? "" : " (" + m + ")");
    }
}
