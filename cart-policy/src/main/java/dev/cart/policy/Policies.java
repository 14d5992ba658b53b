package dev.cart.policy;

import dev.cart.core.RoutingPolicy;
import dev.cart.core.RoutingPolicyProvider;
import java.util.Map;

/**
 * The policies shipped with CART, for code that builds a router directly. The same policies are
 * available by name through {@link dev.cart.core.RoutingPolicies#create}: {@code cache_aware},
 * {@code round_robin}, {@code random}, {@code least_loaded}, {@code power_of_two},
 * {@code consistent_hash}.
 */
public final class Policies {

    private Policies() {
    }

    /** The specification's cache-aware policy with its defaults; see {@link CacheAwarePolicy#builder()}. */
    public static CacheAwarePolicy cacheAware() {
        return CacheAwarePolicy.defaults();
    }

    /** Each usable replica in turn. */
    public static RoutingPolicy roundRobin() {
        return new Baselines.RoundRobin();
    }

    /** A usable replica uniformly at random. */
    public static RoutingPolicy random() {
        return new Baselines.Random();
    }

    /** The least-loaded usable replica, ties at random. */
    public static RoutingPolicy leastLoaded() {
        return new Baselines.LeastLoaded();
    }

    /** The less loaded of two usable replicas drawn at random. */
    public static RoutingPolicy powerOfTwo() {
        return new Baselines.PowerOfTwo();
    }

    /**
     * Rendezvous hashing on the key's anchor with a load bound {@code c} (0 for none): a replica is passed
     * over when taking the request would put it above {@code c} times the mean load.
     */
    public static RoutingPolicy consistentHash(double loadFactor) {
        if (!(loadFactor == 0.0 || loadFactor >= 1.0)) {
            throw new IllegalArgumentException("hash_load_factor must be 0 (unbounded) or at least 1, was "
                    + loadFactor);
        }
        return new Baselines.ConsistentHash(loadFactor);
    }

    /** {@link RoutingPolicyProvider}s for the shipped policies, registered with {@code ServiceLoader}. */
    public static final class CacheAwareProvider implements RoutingPolicyProvider {
        @Override
        public String name() {
            return "cache_aware";
        }

        @Override
        public RoutingPolicy create(Map<String, ?> settings) {
            return CacheAwarePolicy.fromSettings(settings);
        }
    }

    public static final class RoundRobinProvider implements RoutingPolicyProvider {
        @Override
        public String name() {
            return "round_robin";
        }

        @Override
        public RoutingPolicy create(Map<String, ?> settings) {
            return roundRobin();
        }
    }

    public static final class RandomProvider implements RoutingPolicyProvider {
        @Override
        public String name() {
            return "random";
        }

        @Override
        public RoutingPolicy create(Map<String, ?> settings) {
            return random();
        }
    }

    public static final class LeastLoadedProvider implements RoutingPolicyProvider {
        @Override
        public String name() {
            return "least_loaded";
        }

        @Override
        public RoutingPolicy create(Map<String, ?> settings) {
            return leastLoaded();
        }
    }

    public static final class PowerOfTwoProvider implements RoutingPolicyProvider {
        @Override
        public String name() {
            return "power_of_two";
        }

        @Override
        public RoutingPolicy create(Map<String, ?> settings) {
            return powerOfTwo();
        }
    }

    public static final class ConsistentHashProvider implements RoutingPolicyProvider {
        @Override
        public String name() {
            return "consistent_hash";
        }

        @Override
        public RoutingPolicy create(Map<String, ?> settings) {
            return consistentHash(new Settings(settings, "cache.")
                    .loadFactor("hash_load_factor", CacheAwarePolicy.DEFAULT_HASH_LOAD_FACTOR));
        }
    }
}
