package com.example.host;

import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;

/** Makes {@link PrefixAffinityPolicy} available by name: {@code Router.builder().policy("prefix_affinity")}. */
public final class PrefixAffinityProvider implements RoutingPolicyProvider {
    static final String NAME = "prefix_affinity";

    private static final PolicySettings.Setting<Integer> MIN_MATCH = PolicySettings.integer(
            "min_match", 64, 1, Integer.MAX_VALUE, "characters a holder must match to be chosen over the least loaded");

    /** Made by {@link java.util.ServiceLoader}. */
    public PrefixAffinityProvider() {}

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public PolicySettings settings() {
        return PolicySettings.of(NAME, MIN_MATCH);
    }

    @Override
    public RoutingPolicy create(PolicySettings.Values settings) {
        return new PrefixAffinityPolicy(settings.get(MIN_MATCH));
    }
}
