package dev.cart.core;

import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingListener;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Owns one in-flight slot on the chosen replica. Exactly one {@link #close()} releases it: later calls,
 * from any thread, do nothing. Record how the request ended with {@link #succeeded()} or {@link #failed()}
 * before closing (the last one recorded before the close counts); a lease closed without either ends as
 * {@link Outcome#CANCELLED}, which the circuit breaker ignores. {@link #status(int)} adds the replica's
 * answer for listeners; the close reports a {@link LeaseCompletion} to {@link RoutingListener}.
 *
 * <p>{@link #succeeded(ServedUsage)} also hands the router what the replica reported about its prefix
 * cache: with {@code learn: on_success} the route is recorded then, and a predicted hit the replica did not
 * deliver corrects the tree. It returns what the router concluded ({@link CacheFeedback}), so a host that
 * logs or counts it needs no listener.
 *
 * <pre>{@code
 * RouteDecision d = router.choose(request);
 * try (Lease lease = d.lease()) {
 *     Response r = send(d.replica(), body);
 *     if (r.status() < 500) lease.succeeded(); else lease.failed();
 * }
 * }</pre>
 */
public final class Lease implements AutoCloseable {

    // What has happened to the lease, one bit each in {@link #state}, each set once by compare-and-set (one
    // field rather than an atomic object per step: a lease is made per request). Bits set by one call go in
    // one compare-and-set: REPORTED with PREFILLED (so a close that lost the prefill to a first token sees
    // that it was reported), LEARNED with FED_BACK for a usage that is known.
    private static final int CLOSED = 1;
    private static final int LEARNED = 2;
    private static final int FED_BACK = 4;
    private static final int PREFILLED = 8;
    private static final int REPORTED = 16;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Lease.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RouteDecision decision;
    private final Router router;
    private volatile int state;
    private volatile Outcome outcome = Outcome.CANCELLED;
    private volatile int status;
    /** What the comparison of this lease's usage gave, once made (null before). */
    private volatile @Nullable CacheFeedback feedback;

    Lease(RouteDecision decision, Router router) {
        this.decision = decision;
        this.router = router;
        if (decision.replica() == null) {
            state = CLOSED | PREFILLED;
        }
    }

    /** Sets {@code bit} in the state; true for the one call that set it. */
    private boolean set(int bit) {
        return claim(bit, 0) != 0;
    }

    /**
     * Sets those of {@code bits} not set yet, and {@code with} along with them when any is, in one
     * compare-and-set.
     *
     * @return the bits of {@code bits} this call set; 0 when all were set already
     */
    private int claim(int bits, int with) {
        int s = state;
        while ((s & bits) != bits) {
            int witness = (int) STATE.compareAndExchange(this, s, s | bits | with);
            if (witness == s) {
                return bits & ~s;
            }
            s = witness;
        }
        return 0;
    }

    /**
     * Records that the replica has computed the prompt: its first token arrived (for a host, the first
     * bytes of the answer's body: the first chunk of a stream, or a whole unstreamed answer). The
     * request's {@linkplain RouteDecision#prefillEstimate() prefill estimate} leaves the replica's
     * {@linkplain Router#pendingPrefill pending prefill}, so policies see the prefill work still queued there, and a
     * diverted request's route, held back until the replica holds the prefix, is recorded (see
     * {@link Router.Builder#deferDivertedRoutes}). The router counts pending prefill only once its host
     * has reported a first token. Idempotent and thread-safe; a lease closed without it does the same
     * when it closes (but a diverted route is not recorded if it closes as failed).
     */
    public void firstToken() {
        prefillDone(true);
    }

    private void prefillDone(boolean reported) {
        if (claim(PREFILLED, reported ? REPORTED : 0) != 0) {
            router.prefillDone(decision, reported, outcome);
        }
    }

    /** Records that the replica served the request (it reported nothing about its cache). */
    public void succeeded() {
        succeeded(ServedUsage.unknown());
    }

    /**
     * Records that the replica served the request and what it reported about its prefix cache, and returns
     * what the router concluded from it. May be called twice: when the answer starts (usage unknown yet)
     * and when its usage arrives (at the end of a stream). The first call learns the route (with
     * {@code learn: on_success}); the first call with a {@linkplain ServedUsage#known() known} usage is
     * compared with the prediction, and the listener hears the result.
     *
     * @param usage what the replica reported; {@link ServedUsage#unknown()} when it reported nothing
     * @return never null: the comparison's {@link CacheFeedback} (a later call returns the same one); or
     *     {@link CacheFeedback#notCompared()} when nothing was compared: the usage is unknown, the key was
     *     empty, the decision had no replica, the lease is closed, or another thread's call is comparing
     *     this lease's usage right now. With the router's feedback off, the figures are compared and the
     *     verdict is {@link CacheFeedback.Verdict#FEEDBACK_OFF}
     */
    public CacheFeedback succeeded(ServedUsage usage) {
        Objects.requireNonNull(usage, "usage");
        if (outcome != Outcome.SUCCESS) { // a second call (its usage, at the end of a stream) writes nothing
            outcome = Outcome.SUCCESS;
        }
        if ((state & CLOSED) != 0) {
            return CacheFeedback.notCompared();
        }
        boolean known = usage.known();
        int won = claim(known ? LEARNED | FED_BACK : LEARNED, 0);
        if ((won & LEARNED) != 0) {
            router.learnOnSuccess(decision);
        }
        if (!known) {
            return CacheFeedback.notCompared();
        }
        if ((won & FED_BACK) != 0) {
            CacheFeedback f = router.feedback(decision, usage);
            feedback = f;
            return f;
        }
        CacheFeedback f = feedback;
        return f != null ? f : CacheFeedback.notCompared();
    }

    /** Records that the replica failed the request (counts towards opening its circuit). */
    public void failed() {
        outcome = Outcome.FAILURE;
    }

    /**
     * Records the status the replica answered with (for an HTTP host, the response status), reported to
     * listeners with the close. Informational only: the circuit breaker goes by {@link #succeeded()} and
     * {@link #failed()}. The last value recorded before the close counts.
     *
     * @param status the replica's status, such as an HTTP status code
     */
    public void status(int status) {
        this.status = status;
    }

    /**
     * The status recorded so far; 0 when none was.
     *
     * @return the status, or 0
     */
    public int status() {
        return status;
    }

    /**
     * The outcome recorded so far.
     *
     * @return {@link Outcome#CANCELLED} until {@link #succeeded()} or {@link #failed()} says otherwise
     */
    public Outcome outcome() {
        return outcome;
    }

    /**
     * True once {@link #close()} has been called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return (state & CLOSED) != 0;
    }

    /**
     * Releases the slot with the recorded outcome. Idempotent and thread-safe: only the first call does
     * anything. The admission is released even if taking back the prefill estimate throws, and the
     * listener hears of the close even if the release throws.
     */
    @Override
    public void close() {
        if (!set(CLOSED)) {
            return;
        }
        Outcome o = outcome;
        try {
            try {
                prefillDone(false);
            } finally {
                Replica.Admission admission = decision.admission();
                if (admission != null) { // null only for a decision without a replica, closed from the start
                    admission.release(o);
                }
            }
        } finally {
            router.closed(decision, o, status, (state & REPORTED) != 0);
        }
    }
}
