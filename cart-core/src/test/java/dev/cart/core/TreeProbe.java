package dev.cart.core;

import dev.cart.core.spi.Replica;

/** Test access to a router's tree for modules outside this package (shipped in cart-core's test jar). */
public final class TreeProbe {
    private TreeProbe() {}

    /** True if the tree's size counters equal a full recount (no insert may be running). */
    public static boolean countsMatchRecount(Router router) {
        return router.tree().recount().equals(router.tree().stats());
    }

    /** Records that {@code replica} holds {@code key}, whatever the policy. */
    public static void insert(Router router, PromptKey key, Replica replica) {
        router.tree().insert(key, replica);
    }

    /** Forgets every route of {@code replica}. */
    public static void removeReplica(Router router, Replica replica) {
        router.tree().removeReplica(replica);
    }
}
