package dev.cart.core;

import java.util.List;
import java.util.random.RandomGenerator;

/**
 * Everything a {@link RoutingPolicy} may look at for one decision. Created by the router per request;
 * not shared between threads. The tree match is computed on first use, so policies that ignore the
 * cache do not pay for it.
 */
public final class RoutingContext {

    private final RouteRequest request;
    private final List<Replica> candidates;
    private final PrefixTree tree;
    private final RandomGenerator random;
    private Match match;

    /** @param tree the tree to match against, or null when the key cannot match it (another unit) */
    RoutingContext(RouteRequest request, List<Replica> candidates, PrefixTree tree, RandomGenerator random) {
        this.request = request;
        this.candidates = candidates;
        this.tree = tree;
        this.random = random;
    }

    /** Creates a context outside a router, for testing a policy on its own. */
    public static RoutingContext forTest(RouteRequest request, List<Replica> candidates, PrefixTree tree,
                                         RandomGenerator random) {
        return new RoutingContext(request, candidates, tree, random);
    }

    public RouteRequest request() {
        return request;
    }

    public PromptKey key() {
        return request.key();
    }

    /**
     * Replicas that may take the request: available, below their cap and not excluded. Never empty
     * when a policy is called. Read-only for policies.
     */
    public List<Replica> candidates() {
        return candidates;
    }

    /** The tree's match for the request's key (computed once, on first call). */
    public Match match() {
        Match m = match;
        if (m == null) {
            m = tree == null ? Match.none(request.key().length()) : tree.match(request.key());
            match = m;
        }
        return m;
    }

    /** Randomness for tie-breaking; injected so tests are deterministic. */
    public RandomGenerator random() {
        return random;
    }

    /** True if {@code replica} is one of the candidates (compared by identity). */
    public boolean isCandidate(Replica replica) {
        for (int i = 0; i < candidates.size(); i++) {
            if (candidates.get(i) == replica) {
                return true;
            }
        }
        return false;
    }

    /**
     * The candidate with the lowest {@link Replica#load()}; among equals, one chosen uniformly at random
     * (never the first, which would pile every miss on one replica at low concurrency).
     */
    public Replica leastLoaded() {
        Replica best = null;
        long bestLoad = Long.MAX_VALUE;
        int ties = 0;
        for (int i = 0; i < candidates.size(); i++) {
            Replica r = candidates.get(i);
            long load = r.load();
            if (load < bestLoad) {
                best = r;
                bestLoad = load;
                ties = 1;
            } else if (load == bestLoad && random.nextInt(++ties) == 0) {
                best = r; // reservoir sampling keeps each tied replica with probability 1/ties
            }
        }
        return best;
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
