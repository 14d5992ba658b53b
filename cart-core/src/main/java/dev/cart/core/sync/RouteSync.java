package dev.cart.core.sync;

import dev.cart.core.Router;
import java.time.Duration;

/**
 * Where a router sends what it learns, so that several router instances route as one. The router
 * calls {@link #publish} on routing threads for every route it records, every branch usage feedback
 * makes it forget, every replica it removes and every reset; a transport (such as the {@code cart-redis}
 * module's Redis Stream) carries the events to the other instances, which hand them to
 * {@link Router#applyRemote}.
 *
 * <p>Contract: {@link #publish} is called on the request path, from many threads at once. It must be
 * thread-safe, must never block or do I/O (enqueue and return; drop, and count, when a buffer is full)
 * and should not throw: an exception is caught, logged once and otherwise ignored.
 */
public interface RouteSync {

    /** Shares nothing (the default): each instance learns alone. */
    RouteSync NONE = new RouteSync() {
        @Override
        public String originId() {
            return "";
        }

        @Override
        public void publish(RouteEvent event) {}
    };

    /**
     * The origin stamped on this instance's events. Must differ between running instances and should
     * differ between two lives of one instance (a restarted instance then re-learns, from the shared log,
     * what it published in its earlier life, while it never re-applies an event of its current one).
     *
     * @return this instance's id, the same on every call
     */
    String originId();

    /**
     * Hands one event to the transport. Quick, non-blocking, thread-safe (see the class comment).
     *
     * @param event what this router learned or forgot
     */
    void publish(RouteEvent event);

    /**
     * How often a hot route needs sharing: a route is refreshed by every request that follows it, and the
     * other instances need its new last-use time only now and then. The router publishes a learned route
     * when it is new to this replica here (the tree did not hold the whole key for it) and otherwise only
     * on its first use in each window of this length (aligned on the clock; a use by another instance,
     * applied here, counts too); for the other uses it does not even build the event. {@link
     * Duration#ZERO} (the default) publishes every learned route.
     *
     * @return the interval, zero or more
     */
    default Duration repeatInterval() {
        return Duration.ZERO;
    }
}
