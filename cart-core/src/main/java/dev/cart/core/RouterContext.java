package dev.cart.core;

import dev.cart.core.spi.Match;
import dev.cart.core.spi.RoutingContext;
import java.util.List;
import java.util.random.RandomGenerator;

/** The router's {@link RoutingContext} for one decision: the tree is matched on first use. Not shared. */
final class RouterContext implements RoutingContext {

    private final RouteRequest request;
    private final List<Replica> candidates;
    private final PrefixTree tree;
    private final RandomGenerator random;
    private Match match;

    /** @param tree the tree to match against, or null when the key cannot match it (another unit) */
    RouterContext(RouteRequest request, List<Replica> candidates, PrefixTree tree, RandomGenerator random) {
        this.request = request;
        this.candidates = candidates;
        this.tree = tree;
        this.random = random;
    }

    @Override
    public RouteRequest request() {
        return request;
    }

    @Override
    public List<Replica> candidates() {
        return candidates;
    }

    @Override
    public Match match() {
        Match m = match;
        if (m == null) {
            m = tree == null ? Match.none(request.key().length()) : tree.match(request.key());
            match = m;
        }
        return m;
    }

    @Override
    public RandomGenerator random() {
        return random;
    }

    /** Candidates are updated by the router when an acquisition races and fails. */
    void drop(Replica replica) {
        for (int i = 0; i < candidates.size(); i++) {
            if (candidates.get(i) == replica) {
                candidates.remove(i);
                return;
            }
        }
    }
}
