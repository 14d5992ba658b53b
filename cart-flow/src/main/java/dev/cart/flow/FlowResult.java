package dev.cart.flow;

import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How flow control answered one request: admitted with a routing decision (whose lease the host now
 * owns), answered by the router without a replica (no replica serves the model: 404; all down with the
 * queue off: 503), or shed by the queue (429, or 503 for {@link ShedReason#UNAVAILABLE}). Immutable.
 *
 * <p>What a host answers, by {@link #status()}:
 * <ul>
 *   <li>0: forward to {@code decision().replica()} and close {@code decision().lease()} on every path;</li>
 *   <li>429: the OpenAI-style error body (Anthropic's {@code rate_limit_error} shape on {@code /v1/messages})
 *       with {@code Retry-After: }{@link #retryAfterSeconds()};</li>
 *   <li>503 and 404: as for a router decision without a replica.</li>
 * </ul>
 */
public final class FlowResult {

    private final @Nullable RouteDecision decision;
    private final @Nullable ShedReason shed;
    private final long queuedNanos;
    private final long retryAfterSeconds;
    private final int band;
    private final String tenant;

    private FlowResult(
            @Nullable RouteDecision decision,
            @Nullable ShedReason shed,
            long queuedNanos,
            long retryAfterSeconds,
            int band,
            String tenant) {
        this.decision = decision;
        this.shed = shed;
        this.queuedNanos = queuedNanos;
        this.retryAfterSeconds = retryAfterSeconds;
        this.band = band;
        this.tenant = tenant;
    }

    static FlowResult decided(RouteDecision d, long queuedNanos, int band, String tenant) {
        return new FlowResult(Objects.requireNonNull(d), null, queuedNanos, 0, band, tenant);
    }

    static FlowResult shed(ShedReason reason, long queuedNanos, long retryAfterSeconds, int band, String tenant) {
        return new FlowResult(null, Objects.requireNonNull(reason), queuedNanos, retryAfterSeconds, band, tenant);
    }

    /** {@return true when a replica was chosen: {@link #decision()} holds its lease, which the host must close} */
    public boolean admitted() {
        return decision != null && decision.routed();
    }

    /**
     * The router's decision: routed when {@link #admitted()}, else one without a replica
     * ({@link Reason#MODEL_NOT_SERVED}, or {@link Reason#NO_REPLICA} when the queue is off); null when shed.
     *
     * @return the decision, or null when shed
     */
    public @Nullable RouteDecision decision() {
        return decision;
    }

    /** {@return why the queue shed the request, or null when it did not} */
    public @Nullable ShedReason shedReason() {
        return shed;
    }

    /**
     * The HTTP status a host answers with when it does not forward: the shed reason's (429 or 503), 404
     * for {@link Reason#MODEL_NOT_SERVED}, 503 for {@link Reason#NO_REPLICA}; 0 when admitted.
     *
     * @return 429, 503, 404, or 0
     */
    public int status() {
        if (shed != null) {
            return shed.status();
        }
        RouteDecision d = Objects.requireNonNull(decision);
        if (d.routed()) {
            return 0;
        }
        return d.reason() == Reason.MODEL_NOT_SERVED ? 404 : 503;
    }

    /** {@return time the request spent in the queue, in nanoseconds (0 when it did not wait): the {@code queued_ms} field} */
    public long queuedNanos() {
        return queuedNanos;
    }

    /** {@return for a shed request, the seconds a client should wait before retrying (at least 1); else 0} */
    public long retryAfterSeconds() {
        return retryAfterSeconds;
    }

    /** {@return the band the request was served in (its own, capped at the last band)} */
    public int band() {
        return band;
    }

    /** {@return the request's tenant, as given in its {@link FlowRequest} (a digest from {@link FlowHeaders})} */
    public String tenant() {
        return tenant;
    }

    @Override
    public String toString() {
        return "FlowResult[" + (shed != null ? "shed=" + shed : String.valueOf(decision)) + " band=" + band + " tenant="
                + tenant + " queued_ms=" + queuedNanos / 1_000_000 + "]";
    }
}
