package dev.cart.flow;

import org.jspecify.annotations.Nullable;

/**
 * Hears what the admission queue does, for metrics and logs; the library needs no metrics library. All
 * methods have empty defaults. Calls come on whichever thread acted (a submitting thread, a thread closing
 * a lease, the scheduler's), never under the queue's lock: implementations must be quick and must not
 * block. An exception is caught and logged once. The tenant given is a bounded label: one of the top tenants by admitted work (at most
 * {@link FlowConfig#tenantLabels()} of them) or {@code other}.
 *
 * <p>Queue depths are read, not pushed: {@link FlowControl#depth(String, int)} for a gauge.
 */
public interface FlowListener {

    /** The listener that does nothing. */
    FlowListener NONE = new FlowListener() {};

    /**
     * A request of {@code band} found no capacity and waits in {@code model}'s queue (null: no model).
     *
     * @param model the model, null for requests naming none
     * @param band the request's band
     */
    default void onQueued(@Nullable String model, int band) {}

    /**
     * A request was admitted: routed to a replica after {@code queuedNanos} in the queue (0 when it did not
     * wait), costing {@code cost} (its {@link FlowRequest#cost()}). Summing {@code cost} by tenant gives
     * each tenant's share of the work.
     *
     * @param model the model, null for requests naming none
     * @param band the request's band
     * @param tenantLabel the tenant's bounded label
     * @param queuedNanos time in the queue, nanoseconds
     * @param cost the request's cost
     */
    default void onAdmitted(@Nullable String model, int band, String tenantLabel, long queuedNanos, long cost) {}

    /**
     * A request was shed for {@code reason} after {@code queuedNanos} in the queue (0 when shed at once).
     *
     * @param model the model, null for requests naming none
     * @param band the request's band
     * @param tenantLabel the tenant's bounded label
     * @param reason why it was shed
     * @param queuedNanos time in the queue, nanoseconds
     */
    default void onShed(@Nullable String model, int band, String tenantLabel, ShedReason reason, long queuedNanos) {}

    /**
     * A waiting request was cancelled by its host (the client went away) after {@code queuedNanos}.
     *
     * @param model the model, null for requests naming none
     * @param band the request's band
     * @param queuedNanos time in the queue, nanoseconds
     */
    default void onCancelled(@Nullable String model, int band, long queuedNanos) {}
}
