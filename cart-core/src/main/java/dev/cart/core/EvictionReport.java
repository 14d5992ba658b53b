package dev.cart.core;

import dev.cart.core.internal.PrefixTree;

/**
 * What one maintenance pass of a {@link PrefixTree} did.
 *
 * @param expired        entries dropped because they outlived the TTL
 * @param evicted        entries dropped, least recently used first, to get under the size cap
 * @param nodesRemoved   nodes detached or merged away
 * @param sizeBefore     size (blocks) when the pass started
 * @param sizeAfter      size (blocks) when it ended
 * @param durationNanos  time the pass held the tree's exclusive lock
 */
public record EvictionReport(
        long expired, long evicted, long nodesRemoved, long sizeBefore, long sizeAfter, long durationNanos) {

    static final EvictionReport NOTHING = new EvictionReport(0, 0, 0, 0, 0, 0);

    /**
     * Entries dropped for either reason.
     *
     * @return {@code expired + evicted}
     */
    public long removed() {
        return expired + evicted;
    }
}
