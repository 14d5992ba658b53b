package dev.cart.core;

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
     */
    String originId();

    /** Hands one event to the transport. Quick, non-blocking, thread-safe (see the class comment). */
    void publish(RouteEvent event);
}
