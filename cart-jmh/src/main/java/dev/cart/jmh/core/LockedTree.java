package dev.cart.jmh.core;

import dev.cart.core.PromptKey;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;

/**
 * The baseline the concurrent tree is measured against: the same {@link PrefixTree} (same layout, same
 * code), every call made under one monitor, as a host that did not trust the tree's concurrency would
 * wrap it. The difference between the two is then what the lock-free reads and the short writer
 * mutex buy, not the data structure.
 */
final class LockedTree {

    private final PrefixTree tree;

    LockedTree(PrefixTree tree) {
        this.tree = tree;
    }

    synchronized Match match(PromptKey key) {
        return tree.match(key);
    }

    synchronized boolean insert(PromptKey key, Replica replica) {
        return tree.insert(key, replica);
    }
}
