package dev.cart.sim;

import dev.cart.core.Choice;
import dev.cart.core.Match;
import dev.cart.core.Reason;
import dev.cart.core.Replica;
import dev.cart.core.RoutingContext;
import dev.cart.core.RoutingPolicy;
import java.util.concurrent.atomic.AtomicLong;

/** Minimal policies for tests that must not depend on the policy module. */
final class TestPolicies {

    private TestPolicies() {
    }

    /** Round robin over the candidates. */
    static RoutingPolicy roundRobin() {
        AtomicLong next = new AtomicLong();
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                int i = (int) Math.floorMod(next.getAndIncrement(), (long) ctx.candidates().size());
                return Choice.of(ctx.candidates().get(i), Reason.POLICY);
            }

            @Override
            public boolean usesPrefixTree() {
                return false;
            }

            @Override
            public String name() {
                return "test_round_robin";
            }
        };
    }

    /** The holder of the longest matched prefix, else the least-loaded candidate; no load guard. */
    static RoutingPolicy longestMatch() {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                Match m = ctx.match();
                for (Match.Holding h : m.holders()) {
                    Replica r = h.replica();
                    if (ctx.isCandidate(r)) {
                        return new Choice(r, Reason.CACHE_HIT, h.matchedLength());
                    }
                }
                return Choice.of(ctx.leastLoaded(), Reason.MISS);
            }

            @Override
            public String name() {
                return "test_longest_match";
            }
        };
    }
}
