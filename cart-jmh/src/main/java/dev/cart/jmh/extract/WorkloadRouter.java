package dev.cart.jmh.extract;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.Router;
import dev.cart.jmh.core.TreeWorkload;
import dev.cart.policy.Policies;
import java.time.Duration;

/**
 * The router the route's benchmarks and timings share: {@link TreeWorkload#REPLICAS} replicas, the
 * cache-aware policy, character keys, no eviction thread, and the workload's 10,000 keys recorded on the
 * replicas in turn, so that a measured route matches on a tree of realistic size.
 */
final class WorkloadRouter {

    private WorkloadRouter() {}

    static Router build(TreeWorkload w) {
        ManagedReplicaSet.Builder replicas = ManagedReplicaSet.builder();
        for (int i = 0; i < TreeWorkload.REPLICAS; i++) {
            replicas.add(new ReplicaSpec("http://replica-" + i + ":8000", 1 << 20, 0));
        }
        ManagedReplicaSet set = replicas.build();
        Router router = Router.builder()
                .replicas(set)
                .policy(Policies.cacheAware())
                .keyFormat(PromptKey.Unit.CHARS, PromptKey.DEFAULT_BLOCK_CHARS)
                .evictionInterval(Duration.ZERO)
                .build();
        for (int k = 0; k < TreeWorkload.KEYS; k++) {
            router.record(w.keys[k], set.replicas().get(k % TreeWorkload.REPLICAS));
        }
        return router;
    }
}
