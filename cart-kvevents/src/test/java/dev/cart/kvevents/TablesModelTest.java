package dev.cart.kvevents;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The index's two hash tables against java.util maps, over long random sequences (several growths). */
class TablesModelTest {

    @Test
    void keyTableAgreesWithAMapOfMasks() {
        for (long seed = 1; seed <= 5; seed++) {
            SplittableRandom rnd = new SplittableRandom(seed);
            KeyTable t = new KeyTable();
            Map<Long, Long> model = new HashMap<>();
            int universe = 5_000;
            for (int op = 0; op < 60_000; op++) {
                long key = BlockKeys.normalize(rnd.nextInt(universe) * 0x9E3779B97F4A7C15L);
                long bit = 1L << rnd.nextInt(4);
                if (rnd.nextInt(3) > 0) {
                    t.add(key, bit);
                    model.merge(key, bit, (a, b) -> a | b);
                } else {
                    t.remove(key, bit);
                    model.computeIfPresent(key, (k, m) -> (m & ~bit) == 0 ? null : m & ~bit);
                }
                if (op % 997 == 0) {
                    for (int u = 0; u < universe; u++) {
                        long k = BlockKeys.normalize(u * 0x9E3779B97F4A7C15L);
                        assertEquals(model.getOrDefault(k, 0L), t.holders(k), "seed " + seed + " op " + op);
                    }
                    assertEquals(model.size(), t.size());
                }
            }
        }
    }

    @Test
    void engineMapAgreesWithAMapAndEvictsInStoreOrder() {
        for (long seed = 1; seed <= 5; seed++) {
            SplittableRandom rnd = new SplittableRandom(seed);
            EngineMap m = new EngineMap();
            LinkedHashMap<Long, Long> model = new LinkedHashMap<>();
            int universe = 3_000;
            for (int op = 0; op < 60_000; op++) {
                long h = rnd.nextInt(universe) - 10L; // zero and negatives too
                int kind = rnd.nextInt(10);
                if (kind < 6) {
                    long v = (rnd.nextLong() & ~3L) | 1;
                    if (!model.containsKey(h)) {
                        model.put(h, v);
                    } else {
                        model.replace(h, v);
                    }
                    m.put(h, v);
                } else if (kind < 9) {
                    assertEquals(model.getOrDefault(h, 0L).longValue(), m.remove(h));
                    model.remove(h);
                } else if (!model.isEmpty()) {
                    long[] out = new long[2];
                    assertTrue(m.removeOldest(out));
                    assertTrue(model.containsKey(out[0]), "evicted a block that is held");
                    assertEquals(model.remove(out[0]).longValue(), out[1]);
                }
                assertEquals(model.size(), m.size());
                if (op % 1009 == 0) {
                    for (long u = -10; u < universe; u++) {
                        assertEquals(model.getOrDefault(u, 0L).longValue(), m.get(u), "seed " + seed + " op " + op);
                    }
                }
            }
        }
    }

    @Test
    void removeOldestFollowsFirstStoreOrderWhenNothingIsStoredTwice() {
        EngineMap m = new EngineMap();
        List<Long> order = new ArrayList<>();
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < 1_000; i++) {
            long h = rnd.nextLong();
            if (m.get(h) == 0) {
                m.put(h, 4);
                order.add(h);
            }
        }
        // removals in between leave stale order entries that are skipped
        for (int i = 0; i < order.size(); i += 3) {
            m.remove(order.get(i));
        }
        long[] out = new long[2];
        for (int i = 0; i < order.size(); i++) {
            if (i % 3 == 0) {
                continue;
            }
            assertTrue(m.removeOldest(out));
            assertEquals(order.get(i).longValue(), out[0]);
        }
        assertFalse(m.removeOldest(out));
    }
}
