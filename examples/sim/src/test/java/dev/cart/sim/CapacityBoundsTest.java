package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The two capacity figures the precise-mode report prints beside its hit ratios ({@link CapacityBounds}):
 * against what they must equal with room for every block, against the order any cache size must keep, and,
 * on a small workload, against plain implementations of the same two caches (a list scanned for the least
 * recently used block; Belady's replacement choosing by scanning each cached block's next use).
 */
class CapacityBoundsTest {

    private static PreparedWorkload workload(long seed) {
        Workload w = Workloads.multiTurn(seed, new Workloads.ChatSpec(48, 4, 256, 16, 48, 32, 64))
                .poisson(60, seed);
        return PreparedWorkload.of(w, EngineConfig.defaults());
    }

    private static long distinctBlocks(PreparedWorkload p) {
        Set<Long> all = new HashSet<>();
        for (long[] b : p.blocks) {
            for (long h : b) {
                all.add(h);
            }
        }
        return all.size();
    }

    /** Request {@code i}'s prompt blocks that count: those before its last token, as the engines count them. */
    private static int counted(PreparedWorkload p, int i) {
        return Math.min(p.blocks[i].length, (p.promptTokens[i] - 1) / RequestKeys.BLOCK_TOKENS);
    }

    /** Every counted prompt block that some request before it touched, over the prompt tokens: no eviction. */
    private static double everyBlockSeenBefore(PreparedWorkload p) {
        Set<Long> seen = new HashSet<>();
        long hit = 0;
        for (int i = 0; i < p.size(); i++) {
            long[] b = p.blocks[i];
            int counted = counted(p, i);
            for (int k = 0; k < counted; k++) {
                if (seen.contains(b[k])) {
                    hit += RequestKeys.BLOCK_TOKENS;
                }
            }
            for (long h : b) {
                seen.add(h);
            }
        }
        return (double) hit / p.totalPromptTokens;
    }

    @Test
    void withRoomForEveryBlockBothAreWhatNoEvictionGives() {
        for (long seed = 1; seed <= 3; seed++) {
            PreparedWorkload p = workload(seed);
            long room = distinctBlocks(p);
            // LRU never evicts, and counts each prompt's leading run of blocks seen before: the ideal's definition
            assertEquals(p.idealHitRatio(), CapacityBounds.pooledLru(p, room), 1e-12, "seed " + seed);
            // the optimum keeps every block used again, and counts every counted block seen before
            assertEquals(everyBlockSeenBefore(p), CapacityBounds.pooledOptimal(p, room), 1e-12, "seed " + seed);
            assertTrue(p.idealHitRatio() > 0.3, "a multi-turn workload reuses its prefixes: " + p.idealHitRatio());
        }
    }

    @Test
    void aLargerCacheNeverHitsLessAndLruNeverBeatsTheOptimum() {
        for (long seed = 1; seed <= 3; seed++) {
            PreparedWorkload p = workload(seed);
            long room = distinctBlocks(p);
            double lastLru = 0;
            double lastOptimal = 0;
            for (long capacity : new long[] {1, 2, 4, room / 16, room / 8, room / 4, room / 2, room}) {
                double lru = CapacityBounds.pooledLru(p, Math.max(1, capacity));
                double optimal = CapacityBounds.pooledOptimal(p, Math.max(1, capacity));
                assertTrue(
                        lru <= optimal + 1e-12,
                        "seed " + seed + ", " + capacity + " blocks: LRU " + lru + " above the optimum " + optimal);
                // LRU is a stack algorithm and the offline optimum can do whatever a smaller cache did
                assertTrue(lru >= lastLru - 1e-12, "seed " + seed + ", " + capacity + " blocks: LRU fell");
                assertTrue(optimal >= lastOptimal - 1e-12, "seed " + seed + ", " + capacity + " blocks: optimum fell");
                lastLru = lru;
                lastOptimal = optimal;
            }
            // a cache of a sixteenth of the blocks loses something: the figures are not the ideal's by construction
            assertTrue(CapacityBounds.pooledLru(p, Math.max(1, room / 16)) < p.idealHitRatio(), "seed " + seed);
        }
    }

    /**
     * Belady's replacement with bypass written the plain way, as an oracle: on each access, the cached block whose
     * next counted use is furthest (or never) is the one to give up, found by scanning the cache; a block not
     * used again, or used later than every cached one when the cache is full, is not kept.
     */
    private static double beladyByScan(PreparedWorkload p, int capacity) {
        List<Long> trace = new ArrayList<>();
        List<Boolean> counts = new ArrayList<>();
        for (int i = 0; i < p.size(); i++) {
            int counted = counted(p, i);
            for (int k = 0; k < p.blocks[i].length; k++) {
                trace.add(p.blocks[i][k]);
                counts.add(k < counted);
            }
        }
        List<Long> cache = new ArrayList<>();
        long hit = 0;
        for (int x = 0; x < trace.size(); x++) {
            long h = trace.get(x);
            if (cache.remove(h) && counts.get(x)) {
                hit += RequestKeys.BLOCK_TOKENS;
            }
            int mine = nextCountedUse(trace, counts, h, x);
            if (mine == Integer.MAX_VALUE) {
                continue;
            }
            if (cache.size() < capacity) {
                cache.add(h);
                continue;
            }
            int furthest = -1;
            int furthestUse = -1;
            for (int c = 0; c < cache.size(); c++) {
                int use = nextCountedUse(trace, counts, cache.get(c), x);
                if (use > furthestUse) {
                    furthestUse = use;
                    furthest = c;
                }
            }
            if (furthestUse > mine) {
                cache.set(furthest, h);
            }
        }
        return (double) hit / p.totalPromptTokens;
    }

    private static int nextCountedUse(List<Long> trace, List<Boolean> counts, long h, int after) {
        for (int y = after + 1; y < trace.size(); y++) {
            if (trace.get(y) == h && counts.get(y)) {
                return y;
            }
        }
        return Integer.MAX_VALUE;
    }

    @Test
    void theOptimumIsBeladysReplacement() {
        PreparedWorkload p = smallMultiTurn();
        for (int capacity : new int[] {1, 2, 3, 5, 8, 13, 21}) {
            assertEquals(
                    beladyByScan(p, capacity), CapacityBounds.pooledOptimal(p, capacity), 1e-12, capacity + " blocks");
        }
        assertTrue(beladyByScan(p, 8) > CapacityBounds.pooledLru(p, 8), "the optimum gains over LRU at 8 blocks");
    }

    /** The small multi-turn workload the list-scan oracles run on (their scans grow with the blocks held). */
    private static PreparedWorkload smallMultiTurn() {
        return PreparedWorkload.of(
                Workloads.multiTurn(5, new Workloads.ChatSpec(12, 3, 128, 8, 24, 16, 32))
                        .poisson(60, 5),
                EngineConfig.defaults());
    }

    /** One LRU cache kept as a list in order of use, as an oracle: each prompt's leading run of cached blocks. */
    private static double lruByScan(PreparedWorkload p, int capacity) {
        List<Long> byUse = new ArrayList<>(); // least recently used first
        long hit = 0;
        for (int i = 0; i < p.size(); i++) {
            long[] b = p.blocks[i];
            int counted = counted(p, i);
            int run = 0;
            while (run < counted && byUse.contains(b[run])) {
                run++;
            }
            hit += (long) run * RequestKeys.BLOCK_TOKENS;
            for (long h : b) {
                byUse.remove(h);
                byUse.add(h);
                if (byUse.size() > capacity) {
                    byUse.remove(0);
                }
            }
        }
        return (double) hit / p.totalPromptTokens;
    }

    @Test
    void theReferenceIsOneLruCache() {
        PreparedWorkload p = smallMultiTurn();
        for (int capacity : new int[] {1, 2, 3, 5, 8, 13, 21, 34}) {
            assertEquals(lruByScan(p, capacity), CapacityBounds.pooledLru(p, capacity), 1e-12, capacity + " blocks");
        }
    }
}
