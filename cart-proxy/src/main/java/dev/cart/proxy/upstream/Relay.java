package dev.cart.proxy.upstream;

import dev.cart.core.CacheFeedback;
import dev.cart.core.Lease;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.Replica;
import dev.cart.extract.Endpoint;
import dev.cart.extract.answer.AnswerReader;
import dev.cart.proxy.http.HeaderView;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.routing.AnswerLearning;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the proxy decides while a replica's answer is relayed to the client, apart from the front: the head the
 * client gets (end-to-end headers, {@code x-routed-peer}), how the body is framed, what is observed as it
 * passes ({@link AnswerReader}: the usage and the answer's text), and the lease's end. The front moves
 * the bytes and reports the events: {@link #firstByte}, {@link #body}, {@link #upstreamDone} (the replica's
 * answer is complete: the lease is closed then, before the client has read it, so a slow reader never holds
 * the replica's slot), {@link #delivered} (the client has it all: the answer is learned as the start of the
 * next turn, {@code cache.learn_answer}), and the endings {@link #upstreamBroke}, {@link #clientGone},
 * {@link #deadline}.
 *
 * <p>Deadline: a body that was flowing when {@code request_timeout_secs} ends closes the lease as
 * cancelled (the replica was working, the request was simply too long); a deadline reached before any byte
 * of the body counts as the replica's failure, as a missing head does.
 *
 * <p>Concurrency: the front's thread calls everything but {@link #deadline}, which may run on a timer
 * thread at any moment: what it touches is volatile or the lease (thread-safe, idempotent close).
 */
public final class Relay implements Forwarder.Step {

    private static final Logger LOG = LoggerFactory.getLogger(Relay.class);

    /**
     * Answer bytes a client connection buffers before reading from the replica pauses
     * until the client has read: an answer up to this size is read from the replica whole at the replica's
     * speed, so its slot is released when the answer is complete however slowly the client reads.
     */
    public static final int BUFFER_BYTES = 8 * 1024 * 1024;

    public final int status;
    /** The replica's answer headers, as received ({@link #clientHeaders} says what the client gets). */
    private final HeaderView upstream;
    /** The {@code x-routed-peer} header's value, or null when it is not added. */
    private final String routedPeer;
    /** True when the answer has no body (HEAD, 1xx, 204, 304). */
    public final boolean noBody;
    /** True for a {@code text/event-stream} answer: relayed chunked, each read flushed at once. */
    public final boolean sse;
    /** The body's declared length, or -1 when it is chunked or unknown (then relayed chunked). */
    public final long length;

    private final Forwarder forwarder;
    private final Forwarder.Exchange exchange;
    private final Forwarder.Send send;
    private final AnswerReader observer;
    private volatile boolean timedOut;
    private volatile boolean bodyStarted;
    private boolean firstByteSeen;
    private volatile boolean done;
    private CacheFeedback feedback;

    Relay(Forwarder forwarder, Forwarder.Exchange exchange, Forwarder.Send send, int status, HeaderView upstream) {
        this.forwarder = forwarder;
        this.exchange = exchange;
        this.send = send;
        this.status = status;
        this.upstream = upstream;
        this.routedPeer = forwarder.config.addRoutedPeerHeader() ? send.replica.id() : null;
        exchange.log.status(status);
        this.noBody = "HEAD".equalsIgnoreCase(exchange.in.method()) || status == 204 || status == 304 || status < 200;
        String contentType = firstOr(upstream, "content-type", "");
        this.sse = contentType.regionMatches(true, 0, "text/event-stream", 0, "text/event-stream".length());
        boolean chunked = upstream.has("transfer-encoding");
        long declared = parseLength(upstream.first("content-length"));
        this.length = sse || chunked ? -1 : declared;
        this.observer = status / 100 != 2 || noBody
                ? null
                : AnswerReader.create(
                        exchange.in.endpoint(),
                        contentType,
                        upstream.first("content-encoding"),
                        forwarder.learnAnswer && status == 200,
                        length);
    }

    private static String firstOr(HeaderView h, String name, String fallback) {
        String v = h.first(name);
        return v == null ? fallback : v;
    }

    /**
     * Hands the headers the client gets to {@code to}: the replica's end-to-end ones and, when
     * {@code proxy.add_routed_peer_header} is on, {@code x-routed-peer} (in place of any the replica sent).
     */
    public void clientHeaders(BiConsumer<String, String> to) {
        HopByHop.forEachResponseHeader(upstream, routedPeer == null ? null : "x-routed-peer", to);
        addedHeaders(to);
    }

    /**
     * The same head said the other way, for a front that relays the replica's own header map: the names of
     * the replica's headers the client does not get (every line of each is to go) are handed to {@code to}.
     * Once they are removed from the map, {@link #addedHeaders} says what to add. The front may edit the map
     * then: nothing here reads the replica's headers after its constructor and these two.
     */
    public void droppedHeaders(Consumer<CharSequence> to) {
        HopByHop.forEachDroppedResponseName(upstream, routedPeer == null ? null : "x-routed-peer", to);
    }

    /** The headers the proxy adds to the client's head: {@code x-routed-peer}, when it is on. */
    public void addedHeaders(BiConsumer<String, String> to) {
        if (routedPeer != null) {
            to.accept("x-routed-peer", routedPeer);
        }
    }

    /** Digits only (RFC 9110): anything else is no length, and the body is relayed as it comes. */
    static long parseLength(String v) {
        if (v == null || v.isEmpty() || v.length() > 18) {
            return -1;
        }
        for (int i = 0; i < v.length(); i++) {
            if (v.charAt(i) < '0' || v.charAt(i) > '9') {
                return -1;
            }
        }
        return Long.parseLong(v);
    }

    Replica replica() {
        return send.replica;
    }

    /** The first byte of the answer's body (or its end) arrived: time to first byte, and the lease is told. */
    public void firstByte() {
        if (!firstByteSeen) {
            firstByteSeen = true;
            forwarder.metrics.firstByte(exchange.log, send.replica.id(), System.nanoTime() - send.startedNanos);
            send.lease.firstToken();
        }
    }

    /** True when the body's bytes are read as they pass ({@link #body} needs them, not just their count). */
    public boolean observing() {
        return observer != null;
    }

    /**
     * Bytes of the body arrived (after being written to the client, or queued to be). {@code b} may be null
     * when not {@link #observing()}: only the count matters then.
     */
    public void body(byte[] b, int off, int len) {
        if (len <= 0) {
            return;
        }
        bodyStarted = true;
        if (observer != null) {
            observer.accept(b, off, len);
        }
    }

    /**
     * The replica has sent its whole answer: records how it went (with the usage it reported, which the
     * router compares with its prediction) and closes the lease. Idempotent.
     */
    public void upstreamDone() {
        if (done) {
            return;
        }
        done = true;
        firstByte();
        ServedUsage usage = ServedUsage.unknown();
        if (observer != null) {
            observer.finish();
            usage = observer.usage();
            if (observer.parseFailures() > 0) {
                forwarder.metrics.responseParseFailures(send.replica.id(), observer.parseFailures());
            }
        }
        exchange.log.usage(usage);
        Lease lease = send.lease;
        if (status >= 500) {
            lease.failed();
        } else {
            feedback = exchange.log.succeeded(lease, usage); // the router's verdict: a stale route is not learned again
        }
        exchange.log.close(lease);
        exchange.log.result("ok");
    }

    /** The replica's body failed after the answer started: the client connection is to be dropped. */
    public void upstreamBroke(Throwable e) {
        done = true;
        if (timedOut) {
            exchange.log.result("timeout_mid_body"); // the deadline closed the lease
        } else {
            send.lease.failed();
            exchange.log.result("upstream_broke_mid_body");
        }
        exchange.log.close(send.lease);
        LOG.debug("upstream body failed after the response started: {}", String.valueOf(e));
    }

    /** The client went away mid-answer: the lease closes with no outcome (cancelled: no verdict). */
    public void clientGone() {
        exchange.log.close(send.lease);
        if (!done) {
            exchange.log.result(timedOut ? "timeout_mid_body" : "client_closed");
        } else {
            exchange.log.result("client_closed");
        }
        done = true;
    }

    /**
     * The proxy is stopping and its drain deadline cut the answer: the lease closes with no outcome (the
     * replica did nothing wrong), and the decision line says {@code drain_cut}.
     */
    public void drainCut() {
        exchange.log.close(send.lease);
        exchange.log.result("drain_cut");
        done = true;
    }

    /** {@code request_timeout_secs} ended while relaying: the front cancels the upstream side. */
    public void deadline() {
        timedOut = true;
        if (!bodyStarted) {
            send.lease.failed(); // no byte of the body in the whole time: as good as no answer
        }
        send.lease.close(); // not through the record: this may be another thread than the request's
    }

    /** True once the replica's side has ended (complete, broken, or the client gone). */
    public boolean upstreamComplete() {
        return done;
    }

    boolean timedOut() {
        return timedOut;
    }

    /**
     * The whole answer reached the client: records the route of the next turn (this request's messages and
     * the reply) for the replica that served it, unless the reply is not plain text, too long, or the
     * replica has just shown that it does not keep what the router believes it does (a stale prediction).
     */
    public void delivered() {
        if (observer == null
                || !forwarder.learnAnswer
                || status != 200
                || exchange.in.endpoint() == Endpoint.COMPLETIONS
                || timedOut) {
            return;
        }
        String result;
        List<? extends CharSequence> reply = observer.text();
        if (reply == null) {
            result = observer.textProblem();
        } else if (feedback != null && feedback.stale()) {
            result = "stale_route";
        } else {
            try {
                result = AnswerLearning.learn(
                        exchange.routing.router, forwarder.routingKeys, exchange.in.extracted(), reply, send.replica);
            } catch (RuntimeException e) {
                LOG.debug("learning an answer failed: {}", e.getClass().getName()); // never the message: no prompt text
                result = "unusable_request";
            }
        }
        forwarder.metrics.answerLearned(exchange.log, result);
    }
}
