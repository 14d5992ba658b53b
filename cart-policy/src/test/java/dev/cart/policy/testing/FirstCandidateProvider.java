package dev.cart.policy.testing;

import dev.cart.core.Reason;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;

/**
 * A third-party policy, as another jar would ship it: registered in this test tree's
 * META-INF/services and selectable by name.
 */
public final class FirstCandidateProvider implements RoutingPolicyProvider {

    @Override
    public String name() {
        return "first_candidate";
    }

    @Override
    public RoutingPolicy create(PolicySettings.Values settings) {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                return Choice.of(ctx.candidates().get(0), Reason.POLICY);
            }

            @Override
            public boolean usesPrefixTree() {
                return false;
            }

            @Override
            public String name() {
                return "first_candidate";
            }
        };
    }
}
