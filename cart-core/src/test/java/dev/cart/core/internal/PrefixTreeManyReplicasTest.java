package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.TreeStats;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A pool larger than the node's holder mask (63 replicas have a bit, the rest are listed beside it): every
 * replica's holdings are matched as if all had a bit, and a number freed by a replica that left goes to a
 * newcomer without the newcomer inheriting anything.
 */
class PrefixTreeManyReplicasTest {

    private static final int POOL = 80;

    private static PromptKey key(int replica, int length) {
        long[] b = new long[length];
        for (int i = 0; i < length; i++) {
            b[i] = i < 2 ? 1000 + i : replica * 100L + i; // two shared blocks, then the replica's own
        }
        return KeyAccess.forBlocks(b, 1);
    }

    private static List<ManagedReplicaSet.Member> pool(int n, String prefix) {
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
        for (int i = 0; i < n; i++) {
            b.add(prefix + i);
        }
        return b.build().replicas();
    }

    private static Map<Replica, Integer> holdings(Match m) {
        Map<Replica, Integer> out = new HashMap<>();
        for (Match.Holding h : m.holders()) {
            assertEquals(null, out.put(h.replica(), h.matchedLength()), "each replica once");
        }
        return out;
    }

    @Test
    void replicasPastTheMaskAreMatchedLikeTheOthers() {
        PrefixTree tree = PrefixTree.builder().maxSize(1_000_000).build();
        List<ManagedReplicaSet.Member> reps = pool(POOL, "r");
        for (int r = 0; r < POOL; r++) {
            assertTrue(tree.insert(key(r, 4), reps.get(r)));
        }
        tree.checkInvariants();
        for (int r = 0; r < POOL; r++) {
            Map<Replica, Integer> held = holdings(tree.match(key(r, 6)));
            assertEquals(POOL, held.size(), "every replica holds the shared two blocks");
            assertEquals(4, held.get(reps.get(r)), "its own four blocks");
            for (int o = 0; o < POOL; o++) {
                if (o != r) {
                    assertEquals(2, held.get(reps.get(o)));
                }
            }
            assertEquals(4, tree.match(key(r, 6)).holders().get(0).matchedLength(), "longest first");
        }
        // a repeat is a refresh for every replica, past the mask or not: nothing new is stored
        TreeStats before = tree.stats();
        for (int r = 0; r < POOL; r++) {
            assertTrue(tree.insert(key(r, 4), reps.get(r)));
        }
        assertEquals(before, tree.stats());
    }

    @Test
    void aFreedNumberGoesToANewcomerWithNothingOfItsPredecessor() {
        PrefixTree tree = PrefixTree.builder().maxSize(1_000_000).build();
        List<ManagedReplicaSet.Member> reps = pool(POOL, "r");
        for (int r = 0; r < POOL; r++) {
            tree.insert(key(r, 4), reps.get(r));
        }
        List<Replica> gone = new ArrayList<>();
        for (int r : new int[] {3, 70}) { // one with a bit, one past the mask
            tree.removeReplica(reps.get(r));
            gone.add(reps.get(r));
        }
        tree.checkInvariants();
        List<ManagedReplicaSet.Member> newcomers = pool(2, "n");
        for (Replica n : newcomers) {
            assertTrue(holdings(tree.match(key(3, 4))).keySet().stream().noneMatch(gone::contains));
            assertFalse(holdings(tree.match(key(3, 4))).containsKey(n), "a newcomer holds nothing yet");
        }
        tree.insert(key(500, 3), newcomers.get(0));
        tree.insert(key(600, 3), newcomers.get(1));
        tree.checkInvariants();
        Map<Replica, Integer> atThree = holdings(tree.match(key(3, 4)));
        assertEquals(POOL, atThree.size(), "78 old ones and the two newcomers on the shared blocks");
        assertEquals(2, atThree.get(newcomers.get(0)));
        assertEquals(2, atThree.get(newcomers.get(1)));
        assertFalse(atThree.containsKey(reps.get(3)));
        assertEquals(3, holdings(tree.match(key(500, 5))).get(newcomers.get(0)));
        assertEquals(3, holdings(tree.match(key(600, 5))).get(newcomers.get(1)));
    }
}
