package dev.cart.core.spi;

import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Outcome;
import dev.cart.core.Reason;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import org.jspecify.annotations.Nullable;

/**
 * One replica of the pool as the router sees it: its identity, its load, whether it can take a request
 * now, and the admission that holds a request's place on it: what only its host can answer. What the
 * router learns from its own routing (the prefill pending on each replica, {@link Router#pendingPrefill})
 * it keeps itself. Part of the {@link ReplicaSet} SPI;
 * {@link ManagedReplicaSet} is one implementation, and a host with its own service discovery and circuit
 * breakers writes its own: the router asks nothing of a replica that is not on this interface. A host's
 * replica may use CART's {@link dev.cart.core.CircuitBreaker} (its documentation shows how).
 *
 * <p>The router uses a replica like this, once per routed request:
 * <ol>
 *   <li>{@link #tryAcquire()} admits the request (or refuses it) and returns an {@link Admission};</li>
 *   <li>{@link Admission#release(Outcome)} ends the request with its outcome when its {@link Lease}
 *       closes, exactly once per admission.</li>
 * </ol>
 *
 * <p>Implementations must be thread-safe and must not block. {@link #tryAcquire()} must be atomic with
 * respect to the admission cap: racing calls must never push the in-flight count past {@link #maxLoad()}.
 * The router compares replicas by identity.
 */
public interface Replica {

    /**
     * A stable, short identifier (for example the base URL). Appears in logs and metric labels.
     *
     * @return the identifier, never empty, the same on every call
     */
    String id();

    /**
     * Requests admitted here and not yet released.
     *
     * @return the in-flight count, zero or more
     */
    int inFlight();

    /**
     * Admission cap: at this many in-flight requests the replica is skipped.
     *
     * @return the cap, at least 1
     */
    int maxLoad();

    /**
     * A constant added to the in-flight count when loads are compared; biases traffic away.
     *
     * @return the penalty, zero or more
     */
    int loadPenalty();

    /**
     * Whether the replica would admit a request now: healthy, below its cap, and its circuit breaker (if it
     * has one) would let a request through. A hint for filtering; {@link #tryAcquire()} decides.
     *
     * @return true if a request would be admitted now
     */
    boolean isAvailable();

    /**
     * Admits one request if the replica can take it, counting it in flight. The admission remembers what
     * the replica needs to judge the request's outcome later (for a circuit breaker, the state it was
     * admitted under: a half-open trial, or an ordinary request of a closed circuit).
     *
     * @return the admission, to be released exactly once; null if the request must go elsewhere
     */
    @Nullable
    Admission tryAcquire();

    /**
     * True if this replica serves {@code model} (a model name as requests give it, an adapter's name
     * included). The router asks only for a request that names a model ({@link RouteRequest#model()}),
     * once per replica per decision, so it must be cheap: a lookup in an immutable set the host replaces
     * when the replica's models change. A replica that serves no request's model is never a candidate for
     * it; when no replica of the pool serves it the decision is {@link Reason#MODEL_NOT_SERVED}.
     *
     * <p>The default serves every model: a host whose replicas all serve the same models has nothing to
     * write.
     *
     * @param model the requested model's name, never empty
     * @return true if this replica can answer a request for {@code model}
     */
    default boolean serves(String model) {
        return true;
    }

    /**
     * The load used for comparisons: in-flight plus the penalty.
     *
     * @return {@link #inFlight()} plus {@link #loadPenalty()}
     */
    default long load() {
        return (long) inFlight() + loadPenalty();
    }

    /**
     * One admitted request's hold on its replica, returned by {@link #tryAcquire()}. The router releases
     * it exactly once, when the request's {@link Lease} closes.
     */
    @FunctionalInterface
    interface Admission {

        /**
         * Ends the request: takes it out of the in-flight count and reports how it ended to whatever judges
         * the replica (its circuit breaker). {@link Outcome#CANCELLED} says nothing about the replica.
         *
         * @param outcome how the request ended
         */
        void release(Outcome outcome);
    }
}
