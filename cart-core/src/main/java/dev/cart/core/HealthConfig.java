package dev.cart.core;

/**
 * How probe results turn into a health state. The probing itself
 * (endpoint, interval, timeout) is the host's business; it reports each result to
 * {@link ManagedReplicaSet.Member#recordProbe(boolean)}.
 *
 * @param failureThreshold consecutive failed probes that mark a healthy replica unhealthy
 * @param successThreshold consecutive good probes that mark an unhealthy replica healthy
 */
public record HealthConfig(int failureThreshold, int successThreshold) {

    private static final HealthConfig DEFAULTS = new HealthConfig(3, 2);

    /** Checks that both thresholds are at least 1. */
    public HealthConfig {
        Checks.atLeast("HealthConfig.failureThreshold", failureThreshold, 1);
        Checks.atLeast("HealthConfig.successThreshold", successThreshold, 1);
    }

    /**
     * The defaults: 3 failed probes mark a replica unhealthy, 2 good ones healthy again.
     *
     * @return the default thresholds
     */
    public static HealthConfig defaults() {
        return DEFAULTS;
    }
}
