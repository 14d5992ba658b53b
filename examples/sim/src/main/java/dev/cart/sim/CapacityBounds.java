package dev.cart.sim;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * What a cluster of a given total cache size can reach on a workload: an upper bound on the prefix-cache hit
 * ratio and a reference point under LRU eviction, to read a measured hit ratio against what the capacity allows
 * rather than against the infinite cache of the ideal.
 *
 * <p>Both pool the cluster's caches into one cache of their summed size (a pooled cache can do anything
 * the separate caches can, so it bounds every placement) and take the requests in the workload's order, each
 * request touching its blocks (prompt, then answer) in order; a prompt's blocks before its last token count,
 * as the engines count them. {@link #pooledLru} evicts the least recently used block and counts each prompt's
 * leading run of cached blocks: a reference, not a bound (separate caches behind sticky routing can beat one
 * pooled LRU cache, since one workload's churn then cannot evict another's blocks). {@link #pooledOptimal} is Belady's offline replacement with bypass (keep the blocks whose next use
 * comes soonest, never keep one that is not used again) and counts every counted block found cached, prefix or
 * not: no replacement policy, routing or index can do better under that capacity. Neither counts the space that
 * requests in flight need, so real systems stay below both.
 *
 * <p>Single-threaded; a few hundred milliseconds per workload of the reports' size.
 */
final class CapacityBounds {

    private CapacityBounds() {}

    /** The prompt blocks of request {@code i} that count (those before its last token). */
    private static int counted(PreparedWorkload p, int i) {
        return Math.min(p.blocks[i].length, (p.promptTokens[i] - 1) / RequestKeys.BLOCK_TOKENS);
    }

    /**
     * The hit ratio (cached prompt tokens over prompt tokens) of one LRU cache of {@code capacityBlocks}.
     *
     * @param capacityBlocks the cluster's cache, in blocks (at least 1)
     */
    static double pooledLru(PreparedWorkload p, long capacityBlocks) {
        LinkedHashMap<Long, Boolean> cache = new LinkedHashMap<>(16, 0.75f, true);
        long hit = 0;
        for (int i = 0; i < p.size(); i++) {
            long[] b = p.blocks[i];
            int k = 0;
            int m = counted(p, i);
            while (k < m && cache.containsKey(b[k])) {
                k++;
            }
            hit += (long) k * RequestKeys.BLOCK_TOKENS;
            for (long h : b) {
                cache.put(h, Boolean.TRUE);
                if (cache.size() > capacityBlocks) {
                    Iterator<Long> eldest = cache.keySet().iterator();
                    eldest.next();
                    eldest.remove();
                }
            }
        }
        return p.totalPromptTokens == 0 ? 0 : (double) hit / p.totalPromptTokens;
    }

    /**
     * The hit ratio of one cache of {@code capacityBlocks} under Belady's offline replacement with bypass,
     * counting every counted block found cached.
     *
     * @param capacityBlocks the cluster's cache, in blocks (at least 1)
     */
    static double pooledOptimal(PreparedWorkload p, long capacityBlocks) {
        int total = 0;
        for (long[] b : p.blocks) {
            total += b.length;
        }
        long[] block = new long[total];
        boolean[] counts = new boolean[total];
        int t = 0;
        for (int i = 0; i < p.size(); i++) {
            int m = counted(p, i);
            for (int j = 0; j < p.blocks[i].length; j++, t++) {
                block[t] = p.blocks[i][j];
                counts[t] = j < m;
            }
        }
        // each access's block's next counted use (a use that does not count is no reason to keep a block)
        int[] next = new int[total];
        Map<Long, Integer> later = new HashMap<>();
        for (int x = total - 1; x >= 0; x--) {
            Integer n = later.get(block[x]);
            next[x] = n == null ? Integer.MAX_VALUE : n;
            if (counts[x]) {
                later.put(block[x], x);
            }
        }
        Map<Long, Integer> cached = new HashMap<>(); // block -> its next counted use
        TreeSet<long[]> byNextUse =
                new TreeSet<>((u, v) -> u[0] != v[0] ? Long.compare(u[0], v[0]) : Long.compare(u[1], v[1]));
        long hit = 0;
        for (int x = 0; x < total; x++) {
            long h = block[x];
            Integer held = cached.remove(h);
            if (held != null) {
                if (counts[x]) {
                    hit += RequestKeys.BLOCK_TOKENS;
                }
                byNextUse.remove(new long[] {held, h});
            }
            if (next[x] == Integer.MAX_VALUE) {
                continue; // not used again: bypassed
            }
            if (cached.size() < capacityBlocks) {
                cached.put(h, next[x]);
                byNextUse.add(new long[] {next[x], h});
            } else {
                long[] furthest = byNextUse.last();
                if (furthest[0] > next[x]) {
                    byNextUse.pollLast();
                    cached.remove(furthest[1]);
                    cached.put(h, next[x]);
                    byNextUse.add(new long[] {next[x], h});
                }
            }
        }
        return p.totalPromptTokens == 0 ? 0 : (double) hit / p.totalPromptTokens;
    }
}
