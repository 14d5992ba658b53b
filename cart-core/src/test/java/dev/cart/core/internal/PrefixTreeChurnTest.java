package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.MutableClock;
import dev.cart.core.TreeStats;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Hundreds of thousands of unique prompts through a small cap: after every pass the tree is within the
 * cap, the accounting matches a recount, and once the replicas leave, the tree is empty again.
 */
class PrefixTreeChurnTest {

    @Test
    void memoryReturnsToBaselineUnderPromptChurn() {
        MutableClock clock = new MutableClock();
        long cap = 20_000;
        PrefixTree tree = PrefixTree.builder().maxSize(cap).clock(clock).build();
        List<ManagedReplicaSet.Member> reps = ManagedReplicaSet.builder()
                .add("a")
                .add("b")
                .add("c")
                .add("d")
                .build()
                .replicas();
        SplittableRandom rnd = new SplittableRandom(42);
        long[][] shared = new long[50][];
        for (int p = 0; p < shared.length; p++) {
            shared[p] = new long[8 + rnd.nextInt(24)];
            for (int i = 0; i < shared[p].length; i++) {
                shared[p][i] = rnd.nextLong();
            }
        }
        long maxNodes = 0;
        for (int n = 1; n <= 300_000; n++) {
            long[] prefix = shared[rnd.nextInt(shared.length)];
            int suffix = 1 + rnd.nextInt(16);
            long[] key = java.util.Arrays.copyOf(prefix, prefix.length + suffix);
            for (int i = prefix.length; i < key.length; i++) {
                key[i] = rnd.nextLong();
            }
            clock.advance(Duration.ofMillis(1));
            tree.insert(KeyAccess.forBlocks(key, 64), reps.get(rnd.nextInt(reps.size())));
            if (n % 5_000 == 0) {
                EvictionReport r = tree.evict();
                TreeStats stats = tree.stats();
                assertTrue(stats.size() <= cap, "size " + stats.size() + " within cap after pass " + n);
                assertTrue(stats.nodes() <= stats.size(), "every node stores at least one block");
                assertEquals(tree.recount(), stats, "accounting after pass " + n);
                assertTrue(r.sizeAfter() <= cap);
                maxNodes = Math.max(maxNodes, stats.nodes());
            }
        }
        tree.checkInvariants();
        for (Replica r : reps) {
            tree.removeReplica(r);
        }
        assertEquals(new TreeStats(0, 0, 0, 0), tree.stats());
        assertEquals(new TreeStats(0, 0, 0, 0), tree.recount());
        assertTrue(maxNodes > 1_000, "the test really filled the tree: " + maxNodes);
    }

    @Test
    void ttlAloneEmptiesAnIdleTree() {
        MutableClock clock = new MutableClock();
        PrefixTree tree =
                PrefixTree.builder().ttl(Duration.ofMinutes(60)).clock(clock).build();
        Replica r = ManagedReplicaSet.builder().add("a").build().replicas().get(0);
        SplittableRandom rnd = new SplittableRandom(7);
        for (int n = 0; n < 10_000; n++) {
            long[] key = new long[1 + rnd.nextInt(20)];
            key[0] = rnd.nextInt(30);
            for (int i = 1; i < key.length; i++) {
                key[i] = rnd.nextLong();
            }
            tree.insert(KeyAccess.forBlocks(key, 64), r);
        }
        clock.advance(Duration.ofMinutes(59));
        assertEquals(0, tree.evict().expired());
        clock.advance(Duration.ofMinutes(2));
        EvictionReport report = tree.evict();
        assertTrue(report.expired() > 0);
        assertEquals(new TreeStats(0, 0, 0, 0), tree.stats());
    }
}
