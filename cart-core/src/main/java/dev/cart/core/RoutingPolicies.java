package dev.cart.core;

import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/** Finds {@link RoutingPolicyProvider}s on the class path by name. */
public final class RoutingPolicies {

    private RoutingPolicies() {}

    /** All providers visible to this class's loader, by name. */
    public static Map<String, RoutingPolicyProvider> available() {
        Map<String, RoutingPolicyProvider> all = new TreeMap<>();
        for (RoutingPolicyProvider p :
                ServiceLoader.load(RoutingPolicyProvider.class, RoutingPolicies.class.getClassLoader())) {
            all.putIfAbsent(p.name(), p);
        }
        return all;
    }

    /**
     * Creates the policy registered as {@code name}.
     *
     * @throws IllegalArgumentException if no provider has that name (the message lists those that exist)
     */
    public static RoutingPolicy create(String name, Map<String, ?> settings) {
        Map<String, RoutingPolicyProvider> all = available();
        RoutingPolicyProvider p = all.get(name);
        if (p == null) {
            throw new IllegalArgumentException(
                    "unknown routing policy '" + name + "'; available: " + String.join(", ", all.keySet()));
        }
        return p.create(settings);
    }
}
