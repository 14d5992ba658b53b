package dev.cart.policy;

import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;

/**
 * The policies shipped with CART, each with its default settings, for code that builds a router
 * directly; to change the cache-aware policy's settings, start from {@link CacheAwarePolicy#builder()}
 * instead (a builder starts at the same defaults). No lookup by name happens here: the same policies are
 * available by name through {@link dev.cart.core.spi.RoutingPolicyProvider#named} (and
 * {@code Router.Builder.policy(name, settings)}): {@code cache_aware},
 * {@code round_robin}, {@code random}, {@code least_loaded}, {@code power_of_two},
 * {@code consistent_hash}, {@code predicted_ttft}.
 */
public final class Policies {

    private Policies() {}

    /**
     * The specification's cache-aware policy with its defaults ({@code CacheAwarePolicy.builder().build()}).
     *
     * @return a new policy; thread-safe, as every policy here
     */
    public static CacheAwarePolicy cacheAware() {
        return CacheAwarePolicy.builder().build();
    }

    /**
     * The replica with the smallest predicted time to first token, from speeds learned online
     * ({@code PredictedTtftPolicy.builder().build()}).
     *
     * @return a new policy, which has learned nothing yet
     */
    public static PredictedTtftPolicy predictedTtft() {
        return PredictedTtftPolicy.builder().build();
    }

    /**
     * Each usable replica in turn.
     *
     * @return a new policy with its own turn counter
     */
    public static RoutingPolicy roundRobin() {
        return new Baselines.RoundRobin();
    }

    /**
     * A usable replica uniformly at random.
     *
     * @return a stateless policy
     */
    public static RoutingPolicy random() {
        return new Baselines.Random();
    }

    /**
     * The least-loaded usable replica, ties at random.
     *
     * @return a stateless policy
     */
    public static RoutingPolicy leastLoaded() {
        return new Baselines.LeastLoaded();
    }

    /**
     * The less loaded of two usable replicas drawn at random.
     *
     * @return a stateless policy
     */
    public static RoutingPolicy powerOfTwo() {
        return new Baselines.PowerOfTwo();
    }

    /**
     * Rendezvous hashing on the key's anchor with a load bound {@code c} (0 for none): a replica is passed
     * over when taking the request would put it above {@code c} times the mean load.
     *
     * @param loadFactor {@code c}: 0, or in [1, 1000]
     * @return a stateless policy (it ignores the prefix tree)
     * @throws IllegalArgumentException if {@code loadFactor} is neither 0 nor in [1, 1000]
     */
    public static RoutingPolicy consistentHash(double loadFactor) {
        return new Baselines.ConsistentHash(CacheAwarePolicy.HASH_LOAD_FACTOR.check("loadFactor", loadFactor));
    }

    /**
     * Provides {@code cache_aware}; its settings keys are the snake_case names of
     * {@link CacheAwarePolicy.Builder}'s methods ({@code threshold}, {@code match_abs_threshold}, ...), as
     * {@link #settings()} describes them.
     */
    public static final class CacheAwareProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public CacheAwareProvider() {}

        @Override
        public String name() {
            return "cache_aware";
        }

        @Override
        public PolicySettings settings() {
            return CacheAwarePolicy.SETTINGS;
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return CacheAwarePolicy.fromSettings(settings);
        }
    }

    /**
     * Provides {@code predicted_ttft}; its settings keys are {@code prior_prefill_ms_per_1k_units},
     * {@code prior_decode_ms_per_request}, {@code prior_base_ms}, {@code learning_rate},
     * {@code bounded_load_factor} and {@code bounded_load_slack}.
     */
    public static final class PredictedTtftProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public PredictedTtftProvider() {}

        @Override
        public String name() {
            return "predicted_ttft";
        }

        @Override
        public PolicySettings settings() {
            return PredictedTtftPolicy.SETTINGS;
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return PredictedTtftPolicy.fromSettings(settings);
        }
    }

    /** Provides {@code round_robin}. */
    public static final class RoundRobinProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public RoundRobinProvider() {}

        @Override
        public String name() {
            return "round_robin";
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return roundRobin();
        }
    }

    /** Provides {@code random}. */
    public static final class RandomProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public RandomProvider() {}

        @Override
        public String name() {
            return "random";
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return random();
        }
    }

    /** Provides {@code least_loaded}. */
    public static final class LeastLoadedProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public LeastLoadedProvider() {}

        @Override
        public String name() {
            return "least_loaded";
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return leastLoaded();
        }
    }

    /** Provides {@code power_of_two}. */
    public static final class PowerOfTwoProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public PowerOfTwoProvider() {}

        @Override
        public String name() {
            return "power_of_two";
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return powerOfTwo();
        }
    }

    /** Provides {@code consistent_hash}; its one setting is {@code hash_load_factor}. */
    public static final class ConsistentHashProvider implements RoutingPolicyProvider {
        /** Made by {@link java.util.ServiceLoader}. */
        public ConsistentHashProvider() {}

        @Override
        public String name() {
            return "consistent_hash";
        }

        private static final PolicySettings SETTINGS =
                PolicySettings.of("consistent_hash", CacheAwarePolicy.HASH_LOAD_FACTOR);

        @Override
        public PolicySettings settings() {
            return SETTINGS;
        }

        @Override
        public RoutingPolicy create(PolicySettings.Values settings) {
            return consistentHash(settings.get(CacheAwarePolicy.HASH_LOAD_FACTOR));
        }
    }
}
