package dev.cart.core.sync;

import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import java.util.function.ToLongFunction;

/**
 * The load the other router instances in front of the same pool have put on its replicas, as a shared
 * view such as the {@code cart-redis} module's {@code RedisLoadView} keeps it. Given to
 * {@link Router.Builder#remoteLoad}, it makes the router show every policy each candidate's load as this
 * instance's exact count plus the others' ({@link Replica#inFlight()}, {@link Replica#load()} and
 * {@link RoutingContext#pendingPrefill}), so the cache-aware guard and the prefill-aware ranking weigh the
 * whole pool's traffic without any policy knowing about other instances. The admission cap
 * ({@link Replica#maxLoad()}) stays this instance's own: it is enforced atomically on the local count.
 *
 * <p>Contract: both methods are called on the request path, once per candidate per decision, from many
 * threads at once. They must be thread-safe, must never block or do I/O (read a snapshot in memory) and
 * should return 0 for a replica id they do not know, or when their view is too old to trust.
 */
public interface RemoteLoad {

    /** No other instance (the default): every replica's load is this instance's own. */
    RemoteLoad NONE = new RemoteLoad() {
        @Override
        public long inFlight(String replicaId) {
            return 0;
        }

        @Override
        public long pendingPrefill(String replicaId) {
            return 0;
        }
    };

    /**
     * Requests the other live instances have in flight on the replica with this {@link Replica#id()}.
     *
     * @param replicaId a replica's id
     * @return the other instances' in-flight count there, 0 or more (0 for an unknown replica)
     */
    long inFlight(String replicaId);

    /**
     * Pending prefill units ({@link Router#pendingPrefill}) the other live instances have routed there.
     *
     * @param replicaId a replica's id
     * @return the other instances' pending prefill units there, 0 or more (0 for an unknown replica)
     */
    long pendingPrefill(String replicaId);

    /**
     * Where this instance's own pending prefill per replica is read, for a view that publishes this
     * instance's load to the others (its in-flight count is the replica's own, {@link Replica#inFlight()}):
     * {@code source} is {@link Router#pendingPrefill}, thread-safe and lock-free. Called by each router
     * built with this view, as it is built; a router that replaces another ({@link Router.Builder#routesOf})
     * shares its figures, so the latest call gives the same counts. Must return at once. Does nothing by
     * default.
     *
     * @param source this instance's pending prefill on a replica of the pool
     */
    default void localPendingPrefill(ToLongFunction<Replica> source) {}

    /**
     * This instance's own load has just changed: the router took a slot, gave one back or took a request's
     * prefill off its replica. A view that shares this instance's load with the others can publish it now
     * rather than at its next look (the others then see it that much sooner). Called on the request path,
     * like the methods above: must return at once (wake a thread at most), never block or throw. Does
     * nothing by default.
     */
    default void localLoadChanged() {}
}
