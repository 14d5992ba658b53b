package dev.cart.core.spi;

/**
 * Chooses a replica for one request among the candidates the router offers. The router has already
 * removed replicas that are unhealthy, circuit-open, at their {@code max_load} or excluded, so any
 * candidate is acceptable; a policy only decides which is best.
 *
 * <p>Implementations are called concurrently from many threads and must be thread-safe. They must not
 * block or do I/O: {@code choose} is on the path of every request.
 *
 * <p>A policy is made available by name through {@link RoutingPolicyProvider} and
 * {@link java.util.ServiceLoader}.
 */
public interface RoutingPolicy {

    /** Picks one of {@code context.candidates()}, which is never empty. */
    Choice choose(RoutingContext context);

    /**
     * Whether the router should record the routed prefix in the tree after this policy's decisions.
     * Policies that never look at the tree can say no and save the insert.
     */
    default boolean usesPrefixTree() {
        return true;
    }

    /** Name used in logs and configuration. */
    String name();
}
