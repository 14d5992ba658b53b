package dev.cart.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.time.Clock;

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
final class CircuitBreaker {

    interface Listener {
        void onTransition(CircuitState from, CircuitState to);
    }

    private final CircuitBreakerConfig config;
    private final Clock clock;
    private final Listener listener;
    private volatile CircuitState state = CircuitState.CLOSED;
    private volatile long generation;
    private volatile long openedAtMillis;
    private volatile int consecutiveFailures;

    @GuardedBy("this")
    private int halfOpenSuccesses;

    @GuardedBy("this")
    private int trials;

    CircuitBreaker(CircuitBreakerConfig config, Clock clock, Listener listener) {
        this.config = config;
        this.clock = clock;
        this.listener = listener;
    }

    /** The state now, moving OPEN to HALF_OPEN once the timeout has passed. */
    CircuitState state() {
        CircuitState s = state;
        if (s == CircuitState.OPEN
                && clock.millis() - openedAtMillis >= config.openTimeout().toMillis()) {
            synchronized (this) {
                if (state == CircuitState.OPEN
                        && clock.millis() - openedAtMillis
                                >= config.openTimeout().toMillis()) {
                    transition(CircuitState.HALF_OPEN);
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
        return state != CircuitState.HALF_OPEN || trials < config.halfOpenMaxRequests();
    }

    /** Admits one request: its generation, or -1 if refused (open, or no trial slot free). */
    long admit() {
        CircuitState s = state();
        if (s == CircuitState.CLOSED) {
            long g = generation;
            if (state == CircuitState.CLOSED) {
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
        if (g == generation && state == CircuitState.HALF_OPEN && trials > 0) {
            trials--;
        }
    }

    /** Records the outcome of a request admitted under generation {@code g}. */
    void record(long g, Outcome outcome) {
        if (g != generation) {
            return; // evidence from before the last transition
        }
        if (state == CircuitState.CLOSED && outcome == Outcome.SUCCESS && consecutiveFailures == 0) {
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
                        transition(CircuitState.OPEN);
                    }
                }
                case HALF_OPEN -> {
                    trials--;
                    if (outcome == Outcome.FAILURE) {
                        transition(CircuitState.OPEN);
                    } else if (outcome == Outcome.SUCCESS && ++halfOpenSuccesses >= config.successThreshold()) {
                        transition(CircuitState.CLOSED);
                    }
                }
                case OPEN -> {} // cannot happen: no admission under an open generation
            }
        }
    }

    @GuardedBy("this")
    private void transition(CircuitState to) {
        CircuitState from = state;
        if (from == to) {
            return;
        }
        generation++;
        trials = 0;
        halfOpenSuccesses = 0;
        consecutiveFailures = 0;
        if (to == CircuitState.OPEN) {
            openedAtMillis = clock.millis();
        }
        state = to;
        listener.onTransition(from, to);
    }
}
