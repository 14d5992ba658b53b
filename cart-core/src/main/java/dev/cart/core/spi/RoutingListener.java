package dev.cart.core.spi;

import dev.cart.core.CacheFeedback;
import dev.cart.core.EvictionReport;
import dev.cart.core.Lease;
import dev.cart.core.RouteDecision;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;

/**
 * Receives what the router does, for metrics and logs; core needs no metrics library. All methods have
 * empty defaults. Events: every decision; every lease completion (outcome, status, duration, retries);
 * tree events: skipped inserts, eviction passes (whose {@link EvictionReport} carries the size before and
 * after) and resets. The tree's current size is read, not pushed: {@link Router#treeStats()} is a few
 * counter reads, cheap enough for a metrics gauge. Calls happen on the routing thread (or the
 * maintenance thread), so implementations
 * must be quick and thread-safe. An exception thrown by a listener is caught and logged once; it never
 * breaks routing.
 */
public interface RoutingListener {

    /** No-op listener. */
    RoutingListener NONE = new RoutingListener() {};

    /**
     * Every decision, including no-replica ones.
     *
     * @param decision the decision, as {@link dev.cart.core.Router#choose} returns it
     */
    default void onDecision(RouteDecision decision) {}

    /**
     * A lease was closed, with everything known about how it ended: outcome, the replica's status (if
     * recorded with {@link Lease#status(int)}), duration and the number of earlier attempts. Called once
     * per lease, on the thread that closed it.
     *
     * @param completion how the lease ended
     */
    default void onLeaseCompleted(LeaseCompletion completion) {}

    /**
     * The replica reported its prompt and cached token counts for a routed request: the router's
     * prediction against the delivery (the figure that says whether cache affinity is working), and what
     * the router concluded ({@link CacheFeedback#verdict()}; the value {@link Lease#succeeded(ServedUsage)}
     * returns). Called once per lease whose known usage was compared, on the thread that reported it;
     * never with {@link CacheFeedback.Verdict#NOT_COMPARED}.
     *
     * @param decision the routed request's decision
     * @param feedback the prediction, the delivery and the verdict
     */
    default void onCacheFeedback(RouteDecision decision, CacheFeedback feedback) {}

    /** A prefix could not be recorded because a maintenance pass held the tree. */
    default void onInsertSkipped() {}

    /**
     * A maintenance pass finished.
     *
     * @param report what the pass dropped, and the tree's size before and after
     */
    default void onEviction(EvictionReport report) {}

    /** The tree was reset (the daily cleanup). */
    default void onReset() {}
}
