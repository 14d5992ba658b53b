package dev.cart.core;

import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;

/** Minimal policies for core tests (the real ones live in cart-policy). */
final class TestPolicies {
    private TestPolicies() {}

    /** Longest holder if it is a candidate, else least loaded: just enough to exercise the router. */
    static RoutingPolicy followTheTree() {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                Match m = ctx.match();
                for (Match.Holding h : m.holders()) {
                    if (ctx.isCandidate(h.replica())) {
                        return new Choice(h.replica(), Reason.CACHE_HIT, h.matchedLength());
                    }
                }
                return Choice.of(ctx.leastLoaded(), ctx.key().isEmpty() ? Reason.EMPTY_TEXT : Reason.MISS);
            }

            @Override
            public String name() {
                return "follow_the_tree";
            }
        };
    }

    static RoutingPolicy leastLoadedIgnoringTree() {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                return Choice.of(ctx.leastLoaded(), Reason.POLICY);
            }

            @Override
            public boolean usesPrefixTree() {
                return false;
            }

            @Override
            public String name() {
                return "least_loaded_test";
            }
        };
    }
}
