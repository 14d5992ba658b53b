package dev.cart.core;

import java.time.Duration;

/**
 * Settings of the per-replica circuit breaker of a {@link ManagedReplicaSet}.
 *
 * @param failureThreshold    consecutive failures that open the circuit ({@code failure_threshold})
 * @param successThreshold    successes in half-open that close it again ({@code success_threshold})
 * @param openTimeout         how long it stays open before half-opening ({@code timeout_secs})
 * @param halfOpenMaxRequests requests admitted at once while half-open ({@code half_open_max_requests})
 */
public record CircuitBreakerConfig(
        int failureThreshold, int successThreshold, Duration openTimeout, int halfOpenMaxRequests) {

    private static final CircuitBreakerConfig DEFAULTS = new CircuitBreakerConfig(5, 2, Duration.ofSeconds(30), 2);

    /** Checks that the thresholds and the trial count are at least 1 and the timeout positive. */
    public CircuitBreakerConfig {
        Checks.atLeast("CircuitBreakerConfig.failureThreshold", failureThreshold, 1);
        Checks.atLeast("CircuitBreakerConfig.successThreshold", successThreshold, 1);
        Checks.positive("CircuitBreakerConfig.openTimeout", openTimeout);
        Checks.atLeast("CircuitBreakerConfig.halfOpenMaxRequests", halfOpenMaxRequests, 1);
    }

    /**
     * The defaults: open after 5 consecutive failures, stay open 30 s, then admit 2 trials at once and
     * close after 2 successful ones.
     *
     * @return the default settings
     */
    public static CircuitBreakerConfig defaults() {
        return DEFAULTS;
    }
}
