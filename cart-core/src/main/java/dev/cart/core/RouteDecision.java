package dev.cart.core;

import dev.cart.core.spi.Replica;
import org.jspecify.annotations.Nullable;

/**
 * The router's answer for one request: the replica (or none), why, how much of the prompt matched,
 * how long the decision took, and the {@link Lease} that holds the replica's in-flight slot.
 *
 * <p>When {@link #routed()} is true the caller owns the lease and must close it on every path,
 * normally with try-with-resources.
 *
 * <p>Immutable apart from its lease; safe to read from any thread.
 */
public final class RouteDecision {

    private final @Nullable Replica replica;
    private final Reason reason;
    private final int matchedLength;
    private final int keyLength;
    private final int prefillEstimate;
    private final int pendingCounted;
    private final ReplicaLedger.@Nullable Account account;
    private final long decisionNanos;
    private final PromptKey key;
    private final Replica.@Nullable Admission admission;
    private final int attempt;
    private final Tokenization tokenization;
    private final @Nullable String model;
    private final @Nullable Object detail;
    private final long startNanos;
    private final Lease lease;
    private final boolean learnedElsewhere;
    private final InPrefill.@Nullable Entry inPrefill;
    private final InPrefill.Entry @Nullable [] aheadInPrefill;

    RouteDecision(
            @Nullable Replica replica,
            Replica.@Nullable Admission admission,
            Reason reason,
            int matchedLength,
            int prefillEstimate,
            int pendingCounted,
            ReplicaLedger.@Nullable Account account,
            @Nullable Object detail,
            RouteRequest request,
            long decisionNanos,
            long startNanos,
            boolean learnedElsewhere,
            InPrefill.@Nullable Entry inPrefill,
            InPrefill.Entry @Nullable [] aheadInPrefill,
            Router router) {
        PromptKey key = request.key();
        this.replica = replica;
        this.admission = admission;
        this.reason = reason;
        this.matchedLength = matchedLength;
        this.keyLength = key.length();
        this.prefillEstimate = prefillEstimate;
        this.pendingCounted = pendingCounted;
        this.account = account;
        this.key = key;
        this.decisionNanos = decisionNanos;
        this.attempt = request.attempt();
        this.tokenization = request.tokenization();
        this.model = request.model();
        this.detail = detail;
        this.startNanos = startNanos;
        this.learnedElsewhere = learnedElsewhere;
        this.inPrefill = inPrefill;
        this.aheadInPrefill = aheadInPrefill;
        this.lease = new Lease(this, router);
    }

    /**
     * True for a {@link Reason#CACHE_HIT} that followed a route only other router instances had reported
     * ({@link Router.Builder#sync}): this instance had never sent that prefix to that replica itself. The
     * share of such hits is what sharing routes between instances gains. False without a sync.
     *
     * @return true for a hit on a route learned from another instance only
     */
    public boolean learnedElsewhere() {
        return learnedElsewhere;
    }

    /** This request's entry among its replica's requests in prefill, or null when not tracked. */
    InPrefill.@Nullable Entry inPrefill() {
        return inPrefill;
    }

    /** The requests in prefill on the replica when this one was routed, itself last (null when not tracked). */
    InPrefill.Entry @Nullable [] aheadInPrefill() {
        return aheadInPrefill;
    }

    /** The replica's admission of this request (null without a replica); released by the lease. */
    Replica.@Nullable Admission admission() {
        return admission;
    }

    /**
     * How the request's key was made (token mode figures), as the host reported it.
     *
     * @return the request's {@link RouteRequest#tokenization()}
     */
    public Tokenization tokenization() {
        return tokenization;
    }

    /**
     * The model the request asked for ({@link RouteRequest#model()}), or null when it named none.
     *
     * @return the model's name, or null
     */
    public @Nullable String model() {
        return model;
    }

    /**
     * The key the decision was made for.
     *
     * @return the request's key
     */
    public PromptKey key() {
        return key;
    }

    /**
     * True when a replica was chosen (and its in-flight slot taken).
     *
     * @return true if {@link #replica()} is not null
     */
    public boolean routed() {
        return replica != null;
    }

    /**
     * The chosen replica, or null for a {@link Reason#NO_REPLICA} or {@link Reason#MODEL_NOT_SERVED}
     * decision.
     *
     * @return the replica, or null when {@link #routed()} is false
     */
    public @Nullable Replica replica() {
        return replica;
    }

    /**
     * Why the decision went this way.
     *
     * @return the reason code
     */
    public Reason reason() {
        return reason;
    }

    /**
     * Prefix length (units) the tree believed the chosen replica holds: the matched prefix on a hit, and
     * on a miss whatever shorter prefix the chosen replica holds (often 0).
     *
     * @return the matched units, 0 or more, at most {@link #keyLength()}
     */
    public int matchedLength() {
        return matchedLength;
    }

    /**
     * Units of the prompt the router expects the replica to compute: key length minus
     * {@link #matchedLength()}. 0 for a decision without a replica.
     *
     * @return the units to compute, 0 or more
     */
    public int prefillEstimate() {
        return prefillEstimate;
    }

    /** What this request added to its replica's {@linkplain Router#pendingPrefill pending prefill} (0 while not tracked). */
    int pendingCounted() {
        return pendingCounted;
    }

    /** The router's account of the chosen replica, where the request counts; null when it counts nowhere. */
    ReplicaLedger.@Nullable Account account() {
        return account;
    }

    /**
     * What the policy added about its decision ({@link dev.cart.core.spi.Choice#detail()}), or null: for
     * logs through its {@code toString()}, which never contains prompt text.
     *
     * @return the policy's detail, or null
     */
    public @Nullable Object detail() {
        return detail;
    }

    /** The router's {@linkplain Router.Builder#ticker ticker} reading when the decision was made. */
    long startNanos() {
        return startNanos;
    }

    /**
     * Length of the request's key in units.
     *
     * @return the key's units, 0 or more
     */
    public int keyLength() {
        return keyLength;
    }

    /**
     * {@link #matchedLength()} over {@link #keyLength()}, 0 for an empty key.
     *
     * @return the matched fraction, in [0, 1]
     */
    public double matchedRatio() {
        return keyLength == 0 ? 0.0 : (double) matchedLength / keyLength;
    }

    /**
     * Time spent in {@link Router#choose}, in nanoseconds.
     *
     * @return the decision's duration in nanoseconds
     */
    public long decisionNanos() {
        return decisionNanos;
    }

    /**
     * The request's {@link RouteRequest#attempt()}: 0 for a first attempt, n for the n-th retry.
     *
     * @return the attempt's number, 0 or more
     */
    public int attempt() {
        return attempt;
    }

    /**
     * The in-flight guard; a no-op lease for a decision without a replica.
     *
     * @return the lease (the same object on every call)
     */
    public Lease lease() {
        return lease;
    }

    /** Never contains prompt text. */
    @Override
    public String toString() {
        return "RouteDecision[reason=" + reason.code() + " replica=" + (replica == null ? "-" : replica.id())
                + " matched=" + matchedLength + "/" + keyLength + " nanos=" + decisionNanos + "]";
    }
}
