package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
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
 * Inserts (local and a peer's), matches, eviction passes, peers' resets and replica removals racing on one tree: nothing throws, and once
 * quiet, the accounting equals a recount and the shape invariants hold.
 */
class PrefixTreeConcurrencyTest {

    /** Writers that never stop must not keep maintenance out: each pass gets in and ends under the cap. */
    @Test
    @org.junit.jupiter.api.Timeout(120)
    void continuousInsertsDoNotStarveMaintenance() throws Exception {
        PrefixTree tree = PrefixTree.builder().maxSize(20_000).build();
        List<ManagedReplicaSet.Member> reps =
                ManagedReplicaSet.builder().add("a").add("b").build().replicas();
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
                        tree.insert(KeyAccess.forBlocks(key, 16), reps.get(rnd.nextInt(2)));
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
        List<ManagedReplicaSet.Member> reps =
                ManagedReplicaSet.builder().add("a").add("b").add("c").build().replicas();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        long refusedInserts = 0;
        AtomicBoolean stop = new AtomicBoolean();
        try {
            List<Future<Long>> workers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int seed = t;
                workers.add(pool.submit(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    long refused = 0;
                    for (int i = 0; i < 60_000; i++) {
                        long[] key = new long[1 + rnd.nextInt(12)];
                        for (int j = 0; j < key.length; j++) {
                            key[j] = j < 3 ? rnd.nextInt(4) : rnd.nextInt(1_000);
                        }
                        PromptKey k = KeyAccess.forBlocks(key, 16);
                        if (rnd.nextBoolean()) {
                            Replica r = reps.get(rnd.nextInt(reps.size()));
                            boolean done = rnd.nextBoolean()
                                    ? tree.insert(k, r) // local, or a peer's route
                                    : tree.insertRemote(key, r, System.currentTimeMillis() - rnd.nextInt(100));
                            if (!done) {
                                refused++;
                            }
                        } else {
                            Match m = tree.match(k);
                            assertTrue(m.matchedLength() <= k.length());
                        }
                    }
                    return refused;
                }));
            }
            Future<?> maintenance = pool.submit(() -> {
                SplittableRandom rnd = new SplittableRandom(99);
                while (!stop.get()) {
                    int pick = rnd.nextInt(20);
                    if (pick == 0) {
                        tree.removeReplica(reps.get(rnd.nextInt(reps.size())));
                    } else if (pick == 1) {
                        tree.dropUntil(System.currentTimeMillis() - 50); // a peer's reset
                    } else {
                        tree.evict();
                    }
                }
                return null;
            });
            for (Future<Long> f : workers) {
                refusedInserts += f.get(120, TimeUnit.SECONDS);
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
        assertEquals(
                refusedInserts,
                tree.stats().skippedInserts(),
                "every insert that returned false, and only those, is counted as skipped");
    }

    /**
     * Matches racing inserts report only what some linearization allows. With no maintenance the tree only
     * grows, so a match linearized anywhere between its start and its end reports, for each replica, at
     * least the longest prefix of an insert for that replica that had returned before the match began, and
     * at most the longest prefix of an insert for it that had begun before the match returned. The order of
     * starts and ends comes from one shared counter: an insert takes a ticket before it starts and one after
     * it returns; a match takes one before and one after.
     */
    @Test
    void concurrentMatchesReportOnlyWhatSomeLinearizationAllows() throws Exception {
        PrefixTree tree = PrefixTree.builder().build();
        List<ManagedReplicaSet.Member> reps =
                ManagedReplicaSet.builder().add("a").add("b").add("c").build().replicas();
        int threads = 3;
        int opsPerThread = 20_000;
        // a small universe of keys that share prefixes, so inserts split edges that matches are walking
        List<long[]> universe = new ArrayList<>();
        SplittableRandom gen = new SplittableRandom(7);
        for (int i = 0; i < 150; i++) {
            long[] key = new long[1 + gen.nextInt(7)];
            for (int j = 0; j < key.length; j++) {
                key[j] = j < 4 ? gen.nextInt(3) : gen.nextInt(50);
            }
            universe.add(key);
        }
        int n = universe.size();
        long[][] firstStart = new long[n][reps.size()]; // earliest start ticket of an insert of key k for replica r
        long[][] firstEnd = new long[n][reps.size()]; // earliest end ticket of one that had returned
        for (int k = 0; k < n; k++) {
            java.util.Arrays.fill(firstStart[k], Long.MAX_VALUE);
            java.util.Arrays.fill(firstEnd[k], Long.MAX_VALUE);
        }
        java.util.concurrent.atomic.AtomicLong ticket = new java.util.concurrent.atomic.AtomicLong();
        record Observed(int key, long before, long after, Match match) {}
        List<List<Observed>> observed = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<long[][]>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int seed = t;
                List<Observed> mine = new ArrayList<>();
                observed.add(mine);
                workers.add(pool.submit(() -> {
                    long[][] local = new long[n * reps.size()][2];
                    for (long[] cell : local) {
                        cell[0] = Long.MAX_VALUE;
                        cell[1] = Long.MAX_VALUE;
                    }
                    SplittableRandom rnd = new SplittableRandom(100 + seed);
                    for (int i = 0; i < opsPerThread; i++) {
                        int k = rnd.nextInt(n);
                        PromptKey key = KeyAccess.forBlocks(universe.get(k), 16);
                        if (rnd.nextInt(3) == 0) {
                            int r = rnd.nextInt(reps.size());
                            long start = ticket.incrementAndGet();
                            assertTrue(tree.insert(key, reps.get(r)), "no maintenance runs, so no insert is skipped");
                            long end = ticket.incrementAndGet();
                            long[] cell = local[k * reps.size() + r];
                            cell[0] = Math.min(cell[0], start);
                            cell[1] = Math.min(cell[1], end);
                        } else {
                            long before = ticket.incrementAndGet();
                            Match m = tree.match(key);
                            long after = ticket.incrementAndGet();
                            mine.add(new Observed(k, before, after, m));
                        }
                    }
                    return local;
                }));
            }
            for (Future<long[][]> f : workers) {
                long[][] local = f.get(120, TimeUnit.SECONDS);
                for (int k = 0; k < n; k++) {
                    for (int r = 0; r < reps.size(); r++) {
                        long[] cell = local[k * reps.size() + r];
                        firstStart[k][r] = Math.min(firstStart[k][r], cell[0]);
                        firstEnd[k][r] = Math.min(firstEnd[k][r], cell[1]);
                    }
                }
            }
        } finally {
            pool.shutdownNow();
        }
        int checked = 0;
        for (List<Observed> list : observed) {
            for (Observed o : list) {
                long[] q = universe.get(o.key());
                int longest = 0;
                for (int r = 0; r < reps.size(); r++) {
                    int atLeast = 0;
                    int atMost = 0;
                    for (int k = 0; k < n; k++) {
                        int common = commonBlocks(q, universe.get(k)) * 16;
                        if (firstEnd[k][r] < o.before()) {
                            atLeast = Math.max(atLeast, common);
                        }
                        if (firstStart[k][r] < o.after()) {
                            atMost = Math.max(atMost, common);
                        }
                    }
                    int seen = o.match().matchedLength(reps.get(r));
                    assertTrue(
                            seen >= atLeast && seen <= atMost,
                            "replica " + r + " reported " + seen + " units of key " + o.key()
                                    + ", but any linearization gives " + atLeast + ".." + atMost);
                    longest = Math.max(longest, seen);
                }
                assertEquals(longest, o.match().matchedLength(), "the match's length is its longest holding");
                checked++;
            }
        }
        assertTrue(checked > threads * opsPerThread / 2, "most operations were matches: " + checked);
        assertEquals(tree.recount(), tree.stats());
    }

    private static int commonBlocks(long[] a, long[] b) {
        int len = Math.min(a.length, b.length);
        int mm = java.util.Arrays.mismatch(a, 0, len, b, 0, len);
        return mm < 0 ? len : mm;
    }
}
