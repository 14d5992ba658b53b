package dev.cart.core;

import dev.cart.core.internal.PrefixTree;

/**
 * Size figures of a {@link PrefixTree}.
 *
 * @param size           stored blocks, the unit {@code max_tree_size} bounds (one block is
 *                       {@link PromptKey#blockSize()} units of a prompt, stored as an 8-byte hash)
 * @param nodes          nodes, not counting the root
 * @param entries        (node, replica) entries: the routes the tree remembers
 * @param skippedInserts inserts skipped because an eviction pass held the tree (since creation)
 */
public record TreeStats(long size, long nodes, long entries, long skippedInserts) {}
