package dev.cart.core;

import java.time.Clock;

/**
 * One replica's circuit breaker: CLOSED counts consecutive failures and opens at the threshold; OPEN
 * refuses traffic until the timeout passes; HALF_OPEN admits at most {@code halfOpenMaxRequests} requests
 * at once (the caller enforces that through the in-flight count), closes after {@code successThreshold}
 * successes and reopens on any failure.
 *
 * <p>Concurrency: the state is a volatile field read without locking on the hot path ({@link #state});
 * every transition and counter update happens under the object's monitor. The clock is injected so the
 * open timeout is testable without sleeping.
 */
final class CircuitBreaker {

    interface Listener {
        void onTransition(CircuitState from, CircuitState to);
    }

    private final CircuitBreakerConfig config;
    private final Clock clock;
    private final Listener listener;
    private volatile CircuitState state = CircuitState.CLOSED;
    private int consecutiveFailures;
    private int halfOpenSuccesses;
    private long openedAtMillis;

    CircuitBreaker(CircuitBreakerConfig config, Clock clock, Listener listener) {
        this.config = config;
        this.clock = clock;
        this.listener = listener;
    }

    /** The state now, moving OPEN to HALF_OPEN once the timeout has passed. */
    CircuitState state() {
        CircuitState s = state;
        if (s == CircuitState.OPEN) {
            synchronized (this) {
                if (state == CircuitState.OPEN
                        && clock.millis() - openedAtMillis >= config.openTimeout().toMillis()) {
                    halfOpenSuccesses = 0;
                    transition(CircuitState.HALF_OPEN);
                }
                return state;
            }
        }
        return s;
    }

    /** Most requests admitted at once in the current state (0 when open). */
    int admissionLimit(int maxLoad) {
        return switch (state()) {
            case CLOSED -> maxLoad;
            case HALF_OPEN -> Math.min(maxLoad, config.halfOpenMaxRequests());
            case OPEN -> 0;
        };
    }

    void onSuccess() {
        CircuitState s = state;
        if (s == CircuitState.CLOSED && consecutiveFailures == 0) {
            return; // the common case: nothing to write
        }
        synchronized (this) {
            switch (state) {
                case CLOSED -> consecutiveFailures = 0;
                case HALF_OPEN -> {
                    if (++halfOpenSuccesses >= config.successThreshold()) {
                        consecutiveFailures = 0;
                        transition(CircuitState.CLOSED);
                    }
                }
                case OPEN -> { } // a request admitted before the circuit opened; it proves nothing new
            }
        }
    }

    synchronized void onFailure() {
        switch (state) {
            case CLOSED -> {
                if (++consecutiveFailures >= config.failureThreshold()) {
                    open();
                }
            }
            case HALF_OPEN -> open();
            case OPEN -> { } // admitted before the circuit opened; the open period is not extended
        }
    }

    private void open() {
        openedAtMillis = clock.millis();
        halfOpenSuccesses = 0;
        transition(CircuitState.OPEN);
    }

    private void transition(CircuitState to) {
        CircuitState from = state;
        if (from == to) {
            return;
        }
        state = to;
        listener.onTransition(from, to);
    }
}
