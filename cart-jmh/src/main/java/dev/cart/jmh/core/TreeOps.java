package dev.cart.jmh.core;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Replica;
import java.util.List;

/**
 * A package-private {@link PrefixTree} for timing harnesses outside this package: filled with
 * {@link TreeWorkload}'s keys (each for replica {@code k % REPLICAS}, as the route benchmarks fill their
 * routers), and one key held by one replica, so that {@link #match} and {@link #refresh} of that key time
 * what a router's {@code choose} does to its tree on a hit. Not thread-safe beyond the tree's own contract.
 */
public final class TreeOps {
    private final PrefixTree tree = PrefixTree.builder().build();
    private final PromptKey key;
    private final Replica holder;

    public TreeOps(TreeWorkload w, PromptKey key) {
        List<ManagedReplicaSet.Member> rs = w.replicas;
        for (int k = 0; k < TreeWorkload.KEYS; k++) {
            tree.insert(w.keys[k], rs.get(k % TreeWorkload.REPLICAS));
        }
        this.key = key;
        this.holder = rs.get(3);
        tree.insert(key, holder);
    }

    /** The match of the key: its matched length for the holder. */
    public int match() {
        return tree.match(key).matchedLength(holder);
    }

    /** The refreshing insert a routed hit records. */
    public boolean refresh() {
        return tree.insert(key, holder);
    }
}
