package dev.cart.core.spi;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteRequest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.random.RandomGenerator;

/**
 * Everything a {@link RoutingPolicy} may look at for one decision. The router makes one per request; it
 * is not shared between threads. The router's implementation computes the tree match on first use, so
 * policies that ignore the cache do not pay for it.
 *
 * <p>To test a policy on its own, implement this interface in the test with the candidates and the
 * {@link Match} the test wants; nothing else is needed.
 */
public interface RoutingContext {

    /**
     * The request being routed.
     *
     * @return the request as the host gave it to {@link dev.cart.core.Router#choose}
     */
    RouteRequest request();

    /**
     * The request's prompt key.
     *
     * @return {@code request().key()}
     */
    default PromptKey key() {
        return request().key();
    }

    /**
     * Replicas that may take the request: serving its model (if it names one), available, below their
     * cap and not excluded. Never empty when a policy is called. Read-only for policies. A policy's choice
     * must be one of them.
     *
     * @return the candidates, at least one, in the replica set's order
     */
    List<Replica> candidates();

    /**
     * The tree's match for the request's key (computed once, on first call). Its holders may include
     * replicas that are not {@linkplain #candidates() candidates}: see {@link #candidateHolders()}.
     *
     * @return the match; one without holders when no replica holds any of the key
     */
    Match match();

    /**
     * The holders of {@link #match()} that are {@linkplain #candidates() candidates}, longest first: the
     * replicas that hold part of the key and may take this request. Empty when none does (a miss for this
     * request, even if a replica that cannot take it holds the prefix). {@code candidateHolders().get(0)},
     * when there is one, is a correct cache-following choice on a first attempt and on a retry alike.
     *
     * <p>The default filters {@code match().holders()} with {@link #isCandidate} (a new list only when some
     * holder is not a candidate); like {@link #match()}, call it once per decision.
     *
     * @return the candidate holders, longest match first; unmodifiable, possibly empty
     */
    default List<Match.Holding> candidateHolders() {
        List<Match.Holding> all = match().holders();
        for (int i = 0; i < all.size(); i++) {
            if (!isCandidate(all.get(i).replica())) {
                List<Match.Holding> some = new ArrayList<>(all.size() - 1);
                some.addAll(all.subList(0, i));
                for (int j = i + 1; j < all.size(); j++) {
                    if (isCandidate(all.get(j).replica())) {
                        some.add(all.get(j));
                    }
                }
                return Collections.unmodifiableList(some);
            }
        }
        return all;
    }

    /**
     * Randomness for tie-breaking; injected so tests are deterministic.
     *
     * @return the decision's random source (not shared with another thread)
     */
    RandomGenerator random();

    /**
     * Prompt units (characters, or tokens in token mode) routed to {@code replica} whose prefill is not
     * over yet: the prefill work queued ahead of a new request there, which the in-flight count does not
     * show (a 2,000-token cold prompt and a 50-token cached one count the same there). The router keeps it
     * per replica ({@link dev.cart.core.Router#pendingPrefill}) once its host reports first tokens, and
     * adds the other instances' when they share the pool ({@link dev.cart.core.sync.RemoteLoad}).
     *
     * <p>Cheap (a map lookup) but not free: a policy that compares many replicas by it reads each once
     * ({@link Candidates#leastByPendingPrefill}). The default is 0 (a test context that does not model it).
     *
     * @param replica a candidate or a holder of this decision
     * @return the units pending there, at least 0
     */
    default long pendingPrefill(Replica replica) {
        return 0;
    }

    /**
     * Whether {@code replica} is one of the candidates (compared by identity).
     *
     * @param replica a replica
     * @return true if the policy may choose it
     */
    default boolean isCandidate(Replica replica) {
        List<Replica> c = candidates();
        for (int i = 0; i < c.size(); i++) {
            if (c.get(i) == replica) {
                return true;
            }
        }
        return false;
    }

    /**
     * The candidate with the lowest {@link Replica#load()}; among equals, one chosen uniformly at random
     * (never the first, which would pile every miss on one replica at low concurrency).
     *
     * @return the least loaded candidate
     * @throws IllegalStateException if there are no candidates (a context that breaks {@link #candidates()}'s
     *     contract)
     */
    default Replica leastLoaded() {
        Replica least = Candidates.least(candidates(), Candidates.BY_LOAD, random());
        if (least == null) {
            throw new IllegalStateException("a routing context without candidates");
        }
        return least;
    }
}
