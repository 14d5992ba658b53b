package com.example.host;

import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.util.Map;

/** Makes {@link PrefixAffinityPolicy} available by name: {@code Router.builder().policy("prefix_affinity")}. */
public final class PrefixAffinityProvider implements RoutingPolicyProvider {
    static final String NAME = "prefix_affinity";

    /** Made by {@link java.util.ServiceLoader}. */
    public PrefixAffinityProvider() {}

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public RoutingPolicy create(Map<String, ?> settings) {
        Object minMatch = settings.containsKey("min_match") ? settings.get("min_match") : 64;
        if (!(minMatch instanceof Number n) || n.intValue() < 1) {
            throw new IllegalArgumentException("min_match must be a number >= 1, was " + minMatch);
        }
        return new PrefixAffinityPolicy(n.intValue());
    }
}
