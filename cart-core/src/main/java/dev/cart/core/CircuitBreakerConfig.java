package dev.cart.core;

import java.time.Duration;

/**
 * Settings of the per-replica circuit breaker (config section {@code circuit_breaker}).
 *
 * @param failureThreshold    consecutive failures that open the circuit ({@code failure_threshold})
 * @param successThreshold    successes in half-open that close it again ({@code success_threshold})
 * @param openTimeout         how long it stays open before half-opening ({@code timeout_secs})
 * @param halfOpenMaxRequests requests admitted at once while half-open ({@code half_open_max_requests})
 */
public record CircuitBreakerConfig(int failureThreshold, int successThreshold, Duration openTimeout,
                                   int halfOpenMaxRequests) {

    public static final CircuitBreakerConfig DEFAULTS = new CircuitBreakerConfig(5, 2, Duration.ofSeconds(30), 2);

    public CircuitBreakerConfig {
        Checks.atLeast("circuit_breaker.failure_threshold", failureThreshold, 1);
        Checks.atLeast("circuit_breaker.success_threshold", successThreshold, 1);
        Checks.positive("circuit_breaker.timeout_secs", openTimeout);
        Checks.atLeast("circuit_breaker.half_open_max_requests", halfOpenMaxRequests, 1);
    }
}
