/**
 * CART's routing policies, each provided by name to {@code Router.Builder.policy(String)}: {@code cache_aware},
 * {@code predicted_ttft}, and the baselines {@code round_robin}, {@code random}, {@code least_loaded},
 * {@code power_of_two} and {@code consistent_hash}.
 */
module dev.cart.policy {
    exports dev.cart.policy;

    requires transitive dev.cart.core;
    // the nullness annotations of the API (@Nullable in signatures): read by hosts that compile against it
    requires static transitive org.jspecify;

    provides dev.cart.core.spi.RoutingPolicyProvider with
            dev.cart.policy.Policies.CacheAwareProvider,
            dev.cart.policy.Policies.PredictedTtftProvider,
            dev.cart.policy.Policies.RoundRobinProvider,
            dev.cart.policy.Policies.RandomProvider,
            dev.cart.policy.Policies.LeastLoadedProvider,
            dev.cart.policy.Policies.PowerOfTwoProvider,
            dev.cart.policy.Policies.ConsistentHashProvider;
}
