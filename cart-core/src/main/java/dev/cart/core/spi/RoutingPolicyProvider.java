package dev.cart.core.spi;

import java.util.Map;

/**
 * Makes a {@link RoutingPolicy} available by name. Register an implementation in
 * {@code META-INF/services/dev.cart.core.RoutingPolicyProvider}; {@link dev.cart.core.RoutingPolicies#create} finds it.
 */
public interface RoutingPolicyProvider {

    /** The name used in configuration, e.g. {@code cache_aware}. */
    String name();

    /**
     * Creates a policy from settings (keys as in the config file's {@code cache} section, values as parsed
     * from YAML: numbers, strings, booleans).
     *
     * @throws IllegalArgumentException naming the bad setting and its allowed range
     */
    RoutingPolicy create(Map<String, ?> settings);
}
