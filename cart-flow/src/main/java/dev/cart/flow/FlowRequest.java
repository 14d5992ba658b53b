package dev.cart.flow;

import java.util.Objects;

/**
 * What the admission queue needs to know about one request besides its {@link dev.cart.core.RouteRequest}:
 * its priority band, its tenant, its deadline and what it costs. {@link FlowHeaders} makes one from a
 * request's headers; a host routing its own requests makes one directly.
 *
 * @param band           priority band, 0 first; a band past the queue's last band is served
 *                       as the last band
 * @param tenant         who the request is for, for fair shares: an opaque id (for example
 *                       {@link FlowHeaders}' digest), never a credential; at most 64 characters
 * @param deadlineMillis how long the request may wait for a slot, in milliseconds from its submission;
 *                       0 for none given (the queue's {@code max_wait} applies, and caps any value)
 * @param cost           the work the request asks for (prompt plus output tokens, or key units), at least
 *                       1: a tenant's share is counted in it
 */
public record FlowRequest(int band, String tenant, long deadlineMillis, long cost) {

    /** The tenant of requests that name none. */
    public static final String ANONYMOUS = "anonymous";

    /**
     * Checks the values.
     *
     * @throws IllegalArgumentException if a value is out of range
     *
     * @param band see the record
     * @param tenant see the record
     * @param deadlineMillis see the record
     * @param cost see the record
     */
    public FlowRequest {
        Objects.requireNonNull(tenant, "tenant");
        if (band < 0) {
            throw new IllegalArgumentException("band must be >= 0, was " + band);
        }
        if (tenant.isEmpty() || tenant.length() > 64) {
            throw new IllegalArgumentException("tenant must be 1 to 64 characters, was " + tenant.length());
        }
        if (deadlineMillis < 0) {
            throw new IllegalArgumentException("deadlineMillis must be >= 0, was " + deadlineMillis);
        }
        if (cost < 1) {
            throw new IllegalArgumentException("cost must be >= 1, was " + cost);
        }
    }

    /**
     * A request of {@code band} for the anonymous tenant, no deadline of its own, cost 1.
     *
     * @param band see the record
     * @return the request
     */
    public static FlowRequest ofBand(int band) {
        return new FlowRequest(band, ANONYMOUS, 0, 1);
    }
}
