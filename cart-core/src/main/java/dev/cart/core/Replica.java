package dev.cart.core;

/**
 * One replica of the pool as the router sees it: its identity, its load and whether it can take a
 * request now. Part of the {@link ReplicaSet} SPI; {@link ManagedReplicaSet} is the default.
 *
 * <p>Implementations must be thread-safe. {@link #tryAcquire()} must be atomic with respect to the
 * admission cap: two racing calls must never push the in-flight count past {@link #maxLoad()}.
 * The router compares replicas by identity.
 */
public interface Replica {

    /** A stable, short identifier (for example the base URL). Appears in logs and metric labels. */
    String id();

    /** Requests forwarded to this replica and not yet finished. */
    int inFlight();

    /** Admission cap: at this many in-flight requests the replica is skipped. */
    int maxLoad();

    /** A constant added to the in-flight count when loads are compared; biases traffic away. */
    int loadPenalty();

    /** True when the replica is healthy and its circuit breaker would admit a request now. */
    boolean isAvailable();

    /**
     * Admits one request if the replica is available and below its cap, counting it in flight.
     *
     * @return false if the request must go elsewhere
     */
    boolean tryAcquire();

    /** Ends one admitted request: decrements the in-flight count and records the outcome. */
    void release(Outcome outcome);

    /**
     * Prompt units (characters, or tokens in token mode) routed here whose prefill has not finished yet:
     * for each request in flight that has not had its first token, its key length minus the prefix the
     * tree predicted this replica holds when it was routed. A policy may read it as the prefill work
     * queued ahead of a new request, which the in-flight count does not show (a 2,000-token cold prompt
     * and a 50-token cached one count the same there).
     *
     * <p>The router keeps the count for {@link ManagedReplicaSet} members once its host reports first
     * tokens ({@link Lease#firstToken()}; from the start with {@link Router.Builder#firstTokenReports}):
     * each request adds its estimate when routed and takes it back at its first token or, failing that,
     * when its lease closes. Until then, and for other implementations unless they keep their own, it
     * is 0.
     */
    default long pendingPrefill() {
        return 0;
    }

    /** The load used for comparisons: in-flight plus the penalty. */
    default long load() {
        return (long) inFlight() + loadPenalty();
    }
}
