package dev.cart.core;

/**
 * How probe results turn into a health state (config section {@code health}). The probing itself
 * (endpoint, interval, timeout) is the host's business; it reports each result to
 * {@link ManagedReplicaSet.Member#recordProbe(boolean)}.
 *
 * @param failureThreshold consecutive failed probes that mark a healthy replica unhealthy
 * @param successThreshold consecutive good probes that mark an unhealthy replica healthy
 */
public record HealthConfig(int failureThreshold, int successThreshold) {

    public static final HealthConfig DEFAULTS = new HealthConfig(3, 2);

    public HealthConfig {
        Checks.atLeast("health.failure_threshold", failureThreshold, 1);
        Checks.atLeast("health.success_threshold", successThreshold, 1);
    }
}
