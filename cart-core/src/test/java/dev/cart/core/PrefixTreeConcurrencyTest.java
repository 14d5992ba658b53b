package dev.cart.core;

import dev.cart.core.spi.Match;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Inserts, matches, eviction passes and replica removals racing on one tree: nothing throws, and once
 * quiet, the accounting equals a recount and the shape invariants hold.
 */
class PrefixTreeConcurrencyTest {

    /** Writers that never stop must not keep maintenance out: each pass gets in and ends under the cap. */
    @Test
    @org.junit.jupiter.api.Timeout(120)
    void continuousInsertsDoNotStarveMaintenance() throws Exception {
        PrefixTree tree = PrefixTree.builder().maxSize(20_000).build();
        List<ManagedReplicaSet.Member> reps = ManagedReplicaSet.builder().add("a").add("b").build().replicas();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        AtomicBoolean stop = new AtomicBoolean();
        try {
            List<Future<?>> writers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int seed = t;
                writers.add(pool.submit(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    while (!stop.get()) {
                        long[] key = new long[1 + rnd.nextInt(8)];
                        for (int j = 0; j < key.length; j++) {
                            key[j] = rnd.nextLong();
                        }
                        tree.insert(PromptKey.forBlocks(key, 16), reps.get(rnd.nextInt(2)));
                    }
                    return null;
                }));
            }
            for (int pass = 0; pass < 20; pass++) {
                EvictionReport r = tree.evict();
                assertTrue(r.sizeAfter() <= 20_000, "pass " + pass + " ended at " + r.sizeAfter());
            }
            stop.set(true);
            for (Future<?> f : writers) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
        assertEquals(tree.recount(), tree.stats());
    }

    @Test
    void maintenanceRacingWithInsertsAndMatchesKeepsTheTreeConsistent() throws Exception {
        PrefixTree tree = PrefixTree.builder().maxSize(2_000).build();
        List<ManagedReplicaSet.Member> reps = ManagedReplicaSet.builder().add("a").add("b").add("c").build().replicas();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        AtomicBoolean stop = new AtomicBoolean();
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int seed = t;
                workers.add(pool.submit(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    for (int i = 0; i < 60_000; i++) {
                        long[] key = new long[1 + rnd.nextInt(12)];
                        for (int j = 0; j < key.length; j++) {
                            key[j] = j < 3 ? rnd.nextInt(4) : rnd.nextInt(1_000);
                        }
                        PromptKey k = PromptKey.forBlocks(key, 16);
                        if (rnd.nextBoolean()) {
                            tree.insert(k, reps.get(rnd.nextInt(reps.size())));
                        } else {
                            Match m = tree.match(k);
                            assertTrue(m.matchedLength() <= k.length());
                        }
                    }
                    return null;
                }));
            }
            Future<?> maintenance = pool.submit(() -> {
                SplittableRandom rnd = new SplittableRandom(99);
                while (!stop.get()) {
                    if (rnd.nextInt(20) == 0) {
                        tree.removeReplica(reps.get(rnd.nextInt(reps.size())));
                    } else {
                        tree.evict();
                    }
                }
                return null;
            });
            for (Future<?> f : workers) {
                f.get(120, TimeUnit.SECONDS);
            }
            stop.set(true);
            maintenance.get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(tree.recount(), tree.stats());
        tree.checkInvariants();
        tree.evict();
        assertTrue(tree.stats().size() <= 2_000);
        assertEquals(tree.recount(), tree.stats());
        assertTrue(tree.stats().skippedInserts() >= 0);
    }
}
