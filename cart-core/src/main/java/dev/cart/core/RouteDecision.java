package dev.cart.core;

import dev.cart.core.spi.Replica;

/**
 * The router's answer for one request: the replica (or none), why, how much of the prompt matched,
 * how long the decision took, and the {@link Lease} that holds the replica's in-flight slot.
 *
 * <p>When {@link #routed()} is true the caller owns the lease and must close it on every path,
 * normally with try-with-resources.
 */
public final class RouteDecision {

    private final Replica replica;
    private final Reason reason;
    private final int matchedLength;
    private final int keyLength;
    private final int prefillEstimate;
    private final int pendingCounted;
    private final ReplicaLedger.Account account;
    private final long decisionNanos;
    private final PromptKey key;
    private final Replica.Admission admission;
    private final int attempt;
    private final Tokenization tokenization;
    private final String model;
    private final Object detail;
    private final long startNanos;
    private final Lease lease;
    private final boolean learnedElsewhere;
    private final InPrefill.Entry inPrefill;
    private final InPrefill.Entry[] aheadInPrefill;

    RouteDecision(
            Replica replica,
            Replica.Admission admission,
            Reason reason,
            int matchedLength,
            int prefillEstimate,
            int pendingCounted,
            ReplicaLedger.Account account,
            Object detail,
            RouteRequest request,
            long decisionNanos,
            long startNanos,
            boolean learnedElsewhere,
            InPrefill.Entry inPrefill,
            InPrefill.Entry[] aheadInPrefill,
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
     */
    public boolean learnedElsewhere() {
        return learnedElsewhere;
    }

    /** This request's entry among its replica's requests in prefill, or null when not tracked. */
    InPrefill.Entry inPrefill() {
        return inPrefill;
    }

    /** The requests in prefill on the replica when this one was routed, itself last (null when not tracked). */
    InPrefill.Entry[] aheadInPrefill() {
        return aheadInPrefill;
    }

    /** The replica's admission of this request (null without a replica); released by the lease. */
    Replica.Admission admission() {
        return admission;
    }

    /** How the request's key was made (token mode figures), as the host reported it. */
    public Tokenization tokenization() {
        return tokenization;
    }

    /** The model the request asked for ({@link RouteRequest#model()}), or null when it named none. */
    public String model() {
        return model;
    }

    /** The key the decision was made for. */
    public PromptKey key() {
        return key;
    }

    /** True when a replica was chosen (and its in-flight slot taken). */
    public boolean routed() {
        return replica != null;
    }

    /**
     * The chosen replica, or null for a {@link Reason#NO_REPLICA} or {@link Reason#MODEL_NOT_SERVED}
     * decision.
     */
    public Replica replica() {
        return replica;
    }

    /** Why the decision went this way. */
    public Reason reason() {
        return reason;
    }

    /**
     * Prefix length (units) the tree believed the chosen replica holds: the matched prefix on a hit, and
     * on a miss whatever shorter prefix the chosen replica holds (often 0).
     */
    public int matchedLength() {
        return matchedLength;
    }

    /**
     * Units of the prompt the router expects the replica to compute: key length minus
     * {@link #matchedLength()}. 0 for a decision without a replica.
     */
    public int prefillEstimate() {
        return prefillEstimate;
    }

    /** What this request added to its replica's {@linkplain Router#pendingPrefill pending prefill} (0 while not tracked). */
    int pendingCounted() {
        return pendingCounted;
    }

    /** The router's account of the chosen replica, where the request counts; null when it counts nowhere. */
    ReplicaLedger.Account account() {
        return account;
    }

    /**
     * What the policy added about its decision ({@link dev.cart.core.spi.Choice#detail()}), or null: for
     * logs through its {@code toString()}, which never contains prompt text.
     */
    public Object detail() {
        return detail;
    }

    /** The router's {@linkplain Router.Builder#ticker ticker} reading when the decision was made. */
    long startNanos() {
        return startNanos;
    }

    /** Length of the request's key in units. */
    public int keyLength() {
        return keyLength;
    }

    /** {@link #matchedLength()} over {@link #keyLength()}, 0 for an empty key. */
    public double matchedRatio() {
        return keyLength == 0 ? 0.0 : (double) matchedLength / keyLength;
    }

    /** Time spent in {@link Router#choose}, in nanoseconds. */
    public long decisionNanos() {
        return decisionNanos;
    }

    /** The request's {@link RouteRequest#attempt()}: 0 for a first attempt, n for the n-th retry. */
    public int attempt() {
        return attempt;
    }

    /** The in-flight guard; a no-op lease for a decision without a replica. */
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
