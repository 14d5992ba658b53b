package dev.cart.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.cart.core.internal.Checks;
import java.time.Clock;
import java.time.Duration;

/**
 * One replica's circuit breaker: CLOSED counts consecutive failures and opens at the threshold; OPEN
 * refuses traffic until the timeout passes; HALF_OPEN admits at most {@code halfOpenMaxRequests} trial
 * requests at once, closes after {@code successThreshold} successful trials and reopens on a failed one.
 *
 * <p>Every transition starts a new generation. A request is admitted under the current generation and
 * reports its outcome with it; outcomes of an older generation (a request admitted before the circuit
 * opened, finishing while it is half-open) are ignored, so only trials decide a half-open circuit and
 * old requests do not take trial slots.
 *
 * <p>Concurrency: every transition and counter update happens under the object's monitor. State,
 * generation, the open time and the failure count are also read without it on the hot path (an admission
 * of a closed circuit, the outcome of an ordinary success), so they are volatile rather than
 * {@code @GuardedBy}; the half-open counters are only touched under the monitor. The clock is injected.
 */
public final class CircuitBreaker {

    interface Listener {
        void onTransition(State from, State to);
    }

    private final Config config;
    private final Clock clock;
    private final Listener listener;
    private volatile State state = State.CLOSED;
    private volatile long generation;
    private volatile long openedAtMillis;
    private volatile int consecutiveFailures;

    @GuardedBy("this")
    private int halfOpenSuccesses;

    @GuardedBy("this")
    private int trials;

    CircuitBreaker(Config config, Clock clock, Listener listener) {
        this.config = config;
        this.clock = clock;
        this.listener = listener;
    }

    /** The state now, moving OPEN to HALF_OPEN once the timeout has passed. */
    State state() {
        State s = state;
        if (s == State.OPEN
                && clock.millis() - openedAtMillis >= config.openTimeout().toMillis()) {
            synchronized (this) {
                if (state == State.OPEN
                        && clock.millis() - openedAtMillis
                                >= config.openTimeout().toMillis()) {
                    transition(State.HALF_OPEN);
                }
                return state;
            }
        }
        return s;
    }

    long generation() {
        return generation;
    }

    /** True if {@link #admit()} would admit a request now. */
    boolean admits() {
        return switch (state()) {
            case CLOSED -> true;
            case OPEN -> false;
            case HALF_OPEN -> trialsAvailable();
        };
    }

    private synchronized boolean trialsAvailable() {
        return state != State.HALF_OPEN || trials < config.halfOpenMaxRequests();
    }

    /** Admits one request: its generation, or -1 if refused (open, or no trial slot free). */
    long admit() {
        State s = state();
        if (s == State.CLOSED) {
            long g = generation;
            if (state == State.CLOSED) {
                return g;
            }
        }
        synchronized (this) {
            switch (state()) {
                case CLOSED:
                    return generation;
                case HALF_OPEN:
                    if (trials < config.halfOpenMaxRequests()) {
                        trials++;
                        return generation;
                    }
                    return -1;
                default:
                    return -1;
            }
        }
    }

    /** Gives back an admission that did not become a request (the replica was full). */
    synchronized void unadmit(long g) {
        if (g == generation && state == State.HALF_OPEN && trials > 0) {
            trials--;
        }
    }

    /** Records the outcome of a request admitted under generation {@code g}. */
    void record(long g, Outcome outcome) {
        if (g != generation) {
            return; // evidence from before the last transition
        }
        if (state == State.CLOSED && outcome == Outcome.SUCCESS && consecutiveFailures == 0) {
            return; // the common case: nothing to write
        }
        synchronized (this) {
            if (g != generation) {
                return;
            }
            switch (state) {
                case CLOSED -> {
                    if (outcome == Outcome.SUCCESS) {
                        consecutiveFailures = 0;
                    } else if (outcome == Outcome.FAILURE && ++consecutiveFailures >= config.failureThreshold()) {
                        transition(State.OPEN);
                    }
                }
                case HALF_OPEN -> {
                    trials--;
                    if (outcome == Outcome.FAILURE) {
                        transition(State.OPEN);
                    } else if (outcome == Outcome.SUCCESS && ++halfOpenSuccesses >= config.successThreshold()) {
                        transition(State.CLOSED);
                    }
                }
                case OPEN -> {} // cannot happen: no admission under an open generation
            }
        }
    }

    @GuardedBy("this")
    private void transition(State to) {
        State from = state;
        if (from == to) {
            return;
        }
        generation++;
        trials = 0;
        halfOpenSuccesses = 0;
        consecutiveFailures = 0;
        if (to == State.OPEN) {
            openedAtMillis = clock.millis();
        }
        state = to;
        listener.onTransition(from, to);
    }

    /**
     * Settings of the per-replica circuit breaker of a {@link ManagedReplicaSet}.
     *
     * @param failureThreshold    consecutive failures that open the circuit ({@code failure_threshold})
     * @param successThreshold    successes in half-open that close it again ({@code success_threshold})
     * @param openTimeout         how long it stays open before half-opening ({@code timeout_secs})
     * @param halfOpenMaxRequests requests admitted at once while half-open ({@code half_open_max_requests})
     */
    public record Config(int failureThreshold, int successThreshold, Duration openTimeout, int halfOpenMaxRequests) {

        private static final Config DEFAULTS = new Config(5, 2, Duration.ofSeconds(30), 2);

        /** Checks that the thresholds and the trial count are at least 1 and the timeout positive. */
        public Config {
            Checks.atLeast("CircuitBreaker.Config.failureThreshold", failureThreshold, 1);
            Checks.atLeast("CircuitBreaker.Config.successThreshold", successThreshold, 1);
            Checks.positive("CircuitBreaker.Config.openTimeout", openTimeout);
            Checks.atLeast("CircuitBreaker.Config.halfOpenMaxRequests", halfOpenMaxRequests, 1);
        }

        /**
         * The defaults: open after 5 consecutive failures, stay open 30 s, then admit 2 trials at once and
         * close after 2 successful ones.
         *
         * @return the default settings
         */
        public static Config defaults() {
            return DEFAULTS;
        }
    }

    /** State of a replica's circuit breaker. */
    public enum State {
        /** Traffic flows; consecutive failures are counted. */
        CLOSED,
        /** Too many consecutive failures: no traffic until the open timeout has passed. */
        OPEN,
        /** Trial traffic only (a bounded number of requests at once) until enough successes close it. */
        HALF_OPEN;

        /** Lower-case name as used in logs, metrics and the /workers endpoint. */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }
}
