package dev.cart.core;

import dev.cart.core.spi.Match;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The baseline the concurrent tree is measured against: a plain uncompressed trie over block hashes (one
 * node per block, children in a {@code HashMap}), every method {@code synchronized}. The simplest thing
 * that works; no eviction.
 */
final class SynchronizedTree {

    private static final class Node {
        final Map<Long, Node> children = new HashMap<>(2);
        final Map<Replica, Long> holders = new HashMap<>(2);
    }

    private final Node root = new Node();

    synchronized Match match(PromptKey key) {
        long[] b = key.blocks();
        Node node = root;
        Map<Replica, Integer> deepest = new HashMap<>();
        int i = 0;
        for (; i < b.length; i++) {
            Node next = node.children.get(b[i]);
            if (next == null) {
                break;
            }
            node = next;
            for (Replica r : node.holders.keySet()) {
                deepest.put(r, i + 1);
            }
        }
        List<Match.Holding> holders = new ArrayList<>();
        int matched = 0;
        for (Map.Entry<Replica, Integer> e : deepest.entrySet()) {
            holders.add(new Match.Holding(e.getKey(), e.getValue() * key.blockSize()));
            matched = Math.max(matched, e.getValue() * key.blockSize());
        }
        holders.sort((x, y) -> Integer.compare(y.matchedLength(), x.matchedLength()));
        return new Match(matched, key.length(), holders);
    }

    synchronized void insert(PromptKey key, Replica replica, long now) {
        Node node = root;
        for (long block : key.blocks()) {
            node = node.children.computeIfAbsent(block, x -> new Node());
            node.holders.put(replica, now);
        }
    }
}
