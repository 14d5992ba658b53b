package com.example.host;

import dev.cart.core.Reason;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;

/**
 * The host's own policy: the candidate holding the longest known prefix of the prompt, if it holds at
 * least {@code minMatch} units of it; otherwise the least loaded candidate.
 */
final class PrefixAffinityPolicy implements RoutingPolicy {
    private final int minMatch;

    PrefixAffinityPolicy(int minMatch) {
        this.minMatch = minMatch;
    }

    @Override
    public Choice choose(RoutingContext context) {
        Match match = context.match();
        for (Match.Holding h : match.holders()) { // longest first
            if (h.matchedLength() >= minMatch && context.isCandidate(h.replica())) {
                return new Choice(h.replica(), Reason.CACHE_HIT, h.matchedLength());
            }
        }
        Replica least = context.leastLoaded();
        return new Choice(least, Reason.MISS, match.matchedLength(least));
    }

    @Override
    public String name() {
        return PrefixAffinityProvider.NAME;
    }
}
