package dev.cart.core.spi;

import dev.cart.core.Outcome;
import dev.cart.core.RouteDecision;

/**
 * Chooses a replica for one request among the candidates the router offers. The router has already
 * removed replicas that are unhealthy, circuit-open, at their {@code max_load} or excluded, so any
 * candidate is acceptable; a policy only decides which is best.
 *
 * <p><b>Contract: choose a candidate.</b> {@link #choose} must return one of
 * {@link RoutingContext#candidates()} (compared by identity). The tree's match does not know about
 * candidates: {@link Match#holders()} names every replica that holds part of the key, including those
 * that may not take this request (the replica a retry excludes because it just failed, one at its cap,
 * one that is down or does not serve the model). A policy that returns the top holder as it is works on
 * a first attempt and fails on a retry: the router then throws {@link IllegalStateException}. Read the
 * holders through {@link RoutingContext#candidateHolders()}, which keeps only candidates, or test each
 * with {@link RoutingContext#isCandidate}.
 *
 * <p>Implementations are called concurrently from many threads and must be thread-safe. They must not
 * block or do I/O: {@code choose} is on the path of every request.
 *
 * <p>A policy is made available by name through {@link RoutingPolicyProvider} and
 * {@link java.util.ServiceLoader}.
 */
public interface RoutingPolicy {

    /**
     * Picks one of {@code context.candidates()}, which is never empty.
     *
     * @return a choice whose replica is one of the candidates (by identity), never a holder that is not one
     * @param context the decision's request, candidates and match; not to be kept after the call
     */
    Choice choose(RoutingContext context);

    /**
     * Whether the router should record the routed prefix in the tree after this policy's decisions.
     * Policies that never look at the tree can say no and save the insert.
     *
     * @return true (the default) to have routed prefixes recorded
     */
    default boolean usesPrefixTree() {
        return true;
    }

    /**
     * Observes that a request this policy routed had its first token, {@code nanos} after its decision
     * (measured by the router's {@linkplain dev.cart.core.Router.Builder#ticker ticker}). Called once per
     * reported first token ({@link dev.cart.core.Lease#firstToken()}), on the host's thread; a policy that
     * learns from it must be quick and thread-safe. No-op by default.
     *
     * @param decision the decision this policy's choice made (its {@link RouteDecision#detail()} is the choice's)
     * @param nanos    time from the decision to the first token, 0 or more
     */
    default void onFirstToken(RouteDecision decision, long nanos) {}

    /**
     * Observes that a request this policy routed ended: its lease closed with {@code outcome},
     * {@code nanos} after its decision; {@code firstToken} says whether a first token was reported before.
     * Called once per routed lease, on the closing thread. No-op by default.
     *
     * @param decision   the decision this policy's choice made
     * @param outcome    how the lease closed
     * @param firstToken true if a first token was reported before it closed
     * @param nanos      time from the decision to the close, 0 or more
     */
    default void onLeaseClosed(RouteDecision decision, Outcome outcome, boolean firstToken, long nanos) {}

    /**
     * Name used in logs and configuration.
     *
     * @return the policy's name, as its {@link RoutingPolicyProvider#name()}
     */
    String name();
}
