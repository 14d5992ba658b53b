package dev.cart.gateway;

import dev.cart.core.Lease;
import dev.cart.core.Outcome;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.Replica;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.answer.AnswerReader;
import dev.cart.flow.FlowRequest;
import dev.cart.flow.FlowResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import reactor.core.publisher.SignalType;
import reactor.netty.channel.AbortedException;

/**
 * One gateway exchange as CART follows it: created by {@link CartLeaseFilter}, the prompt key extracted once by
 * {@link CartPromptFilter}, the lease taken by {@link CartLoadBalancer}, and the lease's end as the exchange ends.
 * Kept in the exchange's attributes under {@link #ATTRIBUTE}, where the balancer finds it through the
 * load-balancer request.
 *
 * <p>The lease follows the exchange: the answer's first body bytes report {@link Lease#firstToken()}; a body
 * read to its end records {@code succeeded(usage)} with the usage read from it (or {@code failed()} for a
 * 5xx); an error from the replica (connection refused, reset mid-body, timeout) records {@code failed()}; the
 * client going away (cancellation, or an aborted write) records nothing, so the lease closes as
 * {@link Outcome#CANCELLED}, which the circuit breaker ignores. Whatever happens, the exchange's end closes the
 * lease ({@link #finish}). A second balancer call for the same exchange (the gateway's Retry filter) closes the
 * previous attempt's lease as failed and excludes its replica.
 *
 * <p>Concurrency: the balancer, the response writer and the exchange's end may run on different threads but
 * one after another (the reactive chain orders them); fields they share are volatile or guarded by this
 * object, and {@link Lease} itself is thread-safe and closes once.
 */
final class CartExchange {

    static final String ATTRIBUTE = CartExchange.class.getName();

    private final String serviceId;
    private volatile @Nullable Endpoint endpoint;
    private volatile @Nullable ExtractedRequest request;
    private volatile boolean extracted;
    private @Nullable List<Replica> failedReplicas; // created by the first failed attempt
    private int attempts;
    private @Nullable Replica previousReplica;
    private volatile @Nullable Lease lease;
    private volatile boolean noReplica;
    private volatile boolean firstBytes;
    private volatile boolean bodyEnded;
    private volatile boolean bodyAbandoned;
    private volatile @Nullable AnswerReader reader;
    private volatile @Nullable FlowRequest flow;
    private volatile @Nullable FlowResult shed;

    CartExchange(String serviceId) {
        this.serviceId = serviceId;
    }

    /** The prompt filter read the key of a request to {@code endpoint}. */
    void extracted(Endpoint endpoint, ExtractedRequest request) {
        this.endpoint = endpoint;
        this.request = request;
        this.extracted = true;
    }

    /** The request's band, tenant, deadline and cost, for the admission queue ({@code cart.flow.enabled}). */
    void flow(FlowRequest flow) {
        this.flow = flow;
    }

    /** What the admission queue needs of this request; null when the queue is off. */
    @Nullable
    FlowRequest flowRequest() {
        return flow;
    }

    /** The admission queue shed the request ({@code result}: its status, reason and retry hint). */
    void shed(FlowResult result) {
        this.shed = result;
    }

    /** The admission queue's answer when it shed the request; null otherwise. */
    @Nullable
    FlowResult shedResult() {
        return shed;
    }

    /** The endpoint the request was read as, or null when it carried no prompt. */
    @Nullable
    Endpoint endpoint() {
        return endpoint;
    }

    /** The request carries no prompt (not one of the routed endpoints): it is routed by load alone. */
    void routeByLoad() {
        this.extracted = true;
    }

    /** True once the prompt filter has looked at the request (a retry does not read it again). */
    boolean extracted() {
        return extracted;
    }

    String serviceId() {
        return serviceId;
    }

    /**
     * What to ask the router for a new attempt. An earlier attempt of the same exchange (the gateway's Retry
     * filter asking again) ends here: its lease, unless it succeeded, is closed as failed and its replica
     * excluded from this and later attempts.
     */
    synchronized RouteRequest nextRequest() {
        Lease previous = lease;
        if (previous != null) {
            Replica failed = previousReplica; // set with the lease, so not null here
            if (previous.outcome() != Outcome.SUCCESS) {
                previous.failed(); // does nothing if it already closed
                List<Replica> excluded = failedReplicas;
                if (excluded == null) {
                    excluded = failedReplicas = new ArrayList<>(2);
                }
                if (failed != null) {
                    excluded.add(failed);
                }
            }
            previous.close();
            lease = null;
        }
        ExtractedRequest read = request;
        RouteRequest r = read == null
                ? RouteRequest.empty()
                : RouteRequest.of(read.key()).withTokenization(read.tokenization());
        List<Replica> excluded = failedReplicas;
        if (excluded != null) {
            r = r.excluding(excluded);
        }
        return attempts == 0 ? r : r.attempt(attempts);
    }

    /** The balancer chose: this exchange now owns {@code d}'s lease. */
    synchronized void attach(RouteDecision d) {
        attempts++;
        previousReplica = Objects.requireNonNull(d.replica(), "only a routed decision is attached");
        lease = d.lease();
        firstBytes = false;
        bodyEnded = false;
        bodyAbandoned = false;
        reader = null;
        noReplica = false;
        shed = null;
    }

    /** The balancer found no replica that could take the request. */
    void noReplica() {
        noReplica = true;
    }

    boolean wasNoReplica() {
        return noReplica;
    }

    /** The response's head is set and its body is about to be written. */
    void bodyStarts(HttpHeaders headers) {
        reader = AnswerReader.create(
                endpoint,
                headers.getFirst(HttpHeaders.CONTENT_TYPE),
                headers.getFirst(HttpHeaders.CONTENT_ENCODING),
                false,
                headers.getContentLength());
    }

    /** Bytes of the answer on their way to the client. */
    void bytes(DataBuffer buffer) {
        Lease l = lease;
        if (l == null) {
            return;
        }
        if (!firstBytes && buffer.readableByteCount() > 0) {
            firstBytes = true;
            l.firstToken();
        }
        AnswerReader r = reader;
        if (r != null) {
            feed(r, buffer);
        }
    }

    /** Hands {@code buffer}'s readable bytes to {@code reader}, where they stand (the buffer is not moved). */
    static void feed(AnswerReader reader, DataBuffer buffer) {
        try (DataBuffer.ByteBufferIterator it = buffer.readableByteBuffers()) {
            while (it.hasNext()) {
                reader.accept(it.next());
            }
        }
    }

    /**
     * The replica's whole body has passed (every byte read and handed to the writer): the replica served the
     * request (unless it answered 5xx), with the usage its body reported, and its slot is released now, as the
     * proxy does, so a client slow to take the last bytes does not hold it. Not called when the client left first.
     */
    void bodyEnded(int status) {
        bodyEnded = true;
        Lease l = lease;
        if (l == null || bodyAbandoned) {
            return;
        }
        l.status(status);
        if (status >= 500) {
            l.failed();
        } else {
            AnswerReader r = reader;
            l.succeeded(r == null ? ServedUsage.unknown() : r.finish());
        }
        l.close();
    }

    /**
     * The writer stopped taking the body before its end: the client went away. (Reactor Netty then completes
     * the write rather than failing it, so this, not the write's result, is what tells a client that left.)
     */
    void bodyAbandoned() {
        bodyAbandoned = true;
    }

    /** The exchange failed with {@code error}: the replica's failure, unless the client went away. */
    void error(Throwable error) {
        Lease l = lease;
        if (l == null || l.outcome() == Outcome.SUCCESS || clientGone(error)) {
            return;
        }
        l.failed();
    }

    /** The exchange ended ({@code status}: the response's status, 0 if none): closes the lease. */
    void finish(SignalType signal, int status) {
        Lease l = lease;
        if (l == null || l.isClosed()) {
            return;
        }
        if (signal == SignalType.ON_COMPLETE
                && l.outcome() == Outcome.CANCELLED
                && status > 0
                && !bodyAbandoned
                && !bodyEnded) {
            // completed without a body passing through this exchange's response (e.g. 204, or an empty body)
            l.status(status);
            if (status >= 500) {
                l.failed();
            } else {
                l.succeeded();
            }
        }
        l.close();
    }

    private static boolean clientGone(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof AbortedException) {
                return true;
            }
        }
        return false;
    }
}
