package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.MutableClock;
import dev.cart.core.PromptKey;
import dev.cart.core.TreeStats;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The tree's shape after splits, merges and detaches, compared as an ASCII drawing. Blocks are written
 * as letters: key "ABC" is three blocks A, B, C.
 */
class PrefixTreeShapeTest {

    private final MutableClock clock = new MutableClock();
    private PrefixTree tree;
    private Replica r1;
    private Replica r2;

    @BeforeEach
    void setUp() {
        tree = PrefixTree.builder().clock(clock).maxSize(1_000).build();
        List<ManagedReplicaSet.Member> reps =
                ManagedReplicaSet.builder().add("r1").add("r2").build().replicas();
        r1 = reps.get(0);
        r2 = reps.get(1);
    }

    private static PromptKey key(String letters) {
        long[] b = new long[letters.length()];
        for (int i = 0; i < b.length; i++) {
            b[i] = letters.charAt(i);
        }
        return KeyAccess.forBlocks(b, 1);
    }

    private String drawing() {
        tree.checkInvariants();
        return tree.draw(b -> String.valueOf((char) b));
    }

    private void insert(String k, Replica r) {
        clock.advance(Duration.ofMillis(1));
        tree.insert(key(k), r);
    }

    @Test
    void firstInsertIsOneEdge() {
        insert("ABCD", r1);
        assertEquals("""
                ○
                └── ABCD [r1]
                """, drawing());
        assertEquals(new TreeStats(4, 1, 1, 0), tree.stats());
    }

    @Test
    void divergingKeySplitsTheEdge() {
        insert("ABCD", r1);
        insert("ABXY", r2);
        assertEquals("""
                ○
                └── AB [r1 r2]
                    ├── CD [r1]
                    └── XY [r2]
                """, drawing());
        assertEquals(6, tree.stats().size());
        assertEquals(3, tree.stats().nodes());
    }

    @Test
    void shorterKeySplitsInsideTheEdge() {
        insert("ABCD", r1);
        insert("AB", r2);
        assertEquals("""
                ○
                └── AB [r1 r2]
                    └── CD [r1]
                """, drawing());
    }

    @Test
    void longerKeyExtendsALeaf() {
        insert("AB", r1);
        insert("ABCD", r2);
        assertEquals("""
                ○
                └── AB [r1 r2]
                    └── CD [r2]
                """, drawing());
    }

    @Test
    void disjointKeysAreSiblingsInOrder() {
        insert("XY", r1);
        insert("AB", r1);
        insert("MN", r2);
        assertEquals("""
                ○
                ├── AB [r1]
                ├── MN [r2]
                └── XY [r1]
                """, drawing());
    }

    @Test
    void aSplitNearTheEndOfALongEdgeReadsOnlyItsOwnPartOfTheSharedBlocks() {
        insert("ABCDEFGH", r1);
        // Split two blocks before the edge's end (GH moves to the copy below the middle node), then again
        // inside the middle node, one block before its end.
        insert("ABCDEFXY", r2);
        insert("ABCDEZ", r1);
        assertEquals("""
                ○
                └── ABCDE [r1 r2]
                    ├── F [r1 r2]
                    │   ├── GH [r1]
                    │   └── XY [r2]
                    └── Z [r1]
                """, drawing());
        tree.removeReplica(r1);
        assertEquals("""
                ○
                └── ABCDE [r2]
                    └── F [r2]
                        └── XY [r2]
                """, drawing());
        // A match reads a node's label only, whatever the blocks it was split from went on with.
        assertEquals(6, tree.match(key("ABCDEFGH")).matchedLength());
        assertEquals(5, tree.match(key("ABCDEGH")).matchedLength());
        insert("ABCDEFGH", r1);
        assertEquals(8, tree.match(key("ABCDEFGH")).matchedLength(r1));
        assertEquals(new TreeStats(10, 4, 6, 0), tree.stats());
        assertEquals(tree.stats(), tree.recount());
    }

    @Test
    void removingABranchMergesTheHolderlessParentIntoItsOnlyChild() {
        insert("ABCD", r1);
        insert("ABXY", r2);
        tree.removeReplica(r1);
        // AB keeps r2; CD (held by r1 only) is detached; AB now has one child and a holder: no merge.
        assertEquals("""
                ○
                └── AB [r2]
                    └── XY [r2]
                """, drawing());
        tree.removeReplica(r2);
        assertEquals("○\n", drawing());
        assertEquals(new TreeStats(0, 0, 0, 0), tree.stats());
    }

    @Test
    void holderlessBranchNodeMergesWhenItIsLeftWithOneChild() {
        insert("ABCD", r1);
        insert("ABXY", r1);
        insert("ABCD", r2);
        insert("ABXY", r2);
        insert("AB", r2);
        // Drop r1 everywhere and the A-B route of r2 by TTL-like surgery: evict only what is oldest.
        tree.removeReplica(r1);
        assertEquals("""
                ○
                └── AB [r2]
                    ├── CD [r2]
                    └── XY [r2]
                """, drawing());
    }

    @Test
    void aNodeKeepsItsFirstChildrenBesideItWhenLaterOnesBranchOffAndFillsAnEmptiedSlotFirst() {
        insert("ABCD", r2);
        insert("ABXY", r1);
        insert("ABP", r1);
        insert("ABQ", r1);
        insert("ABR", r1);
        assertEquals("""
                ○
                └── AB [r1 r2]
                    ├── CD [r2]
                    ├── P [r1]
                    ├── Q [r1]
                    ├── R [r1]
                    └── XY [r1]
                """, drawing());
        // The path's first two continuations are found without the table; the later branches in it.
        assertEquals(0, tree.walkShape(KeyAccess.blocks(key("ABCD")))[1]);
        assertEquals(0, tree.walkShape(KeyAccess.blocks(key("ABXY")))[1]);
        assertEquals(1, tree.walkShape(KeyAccess.blocks(key("ABQ")))[1]);
        tree.removeReplica(r2); // CD goes: its slot is empty, the table keeps P, Q, R
        insert("ABS", r1);
        assertEquals("""
                ○
                └── AB [r1]
                    ├── P [r1]
                    ├── Q [r1]
                    ├── R [r1]
                    ├── S [r1]
                    └── XY [r1]
                """, drawing());
        assertEquals(0, tree.walkShape(KeyAccess.blocks(key("ABS")))[1], "the new child took the emptied slot");
        for (String k : new String[] {"ABP", "ABQ", "ABR", "ABS", "ABXY"}) {
            assertEquals(k.length(), tree.match(key(k)).matchedLength(), k);
        }
        tree.removeReplica(r1);
        assertEquals("○\n", drawing());
    }

    @Test
    void forgettingBranchesDropsWhatContinuedThroughTheLostBlockButKeepsThePathAndEarlierBranches() {
        insert("ABCDE", r1);
        insert("ABCDXY", r1);
        insert("ABCZ", r1);
        insert("ABQ", r1);
        insert("ABCZ", r2);
        insert("ABCDEFG", r1);
        // r1 served ABCDE having only AB cached: it had lost C, and with it CZ, CDXY and CDEFG beyond the
        // path. ABCDE itself was just computed again; ABQ left before C.
        assertEquals(3, tree.forgetBranches(key("ABCDE"), r1, 2));
        assertEquals("""
                ○
                └── AB [r1 r2]
                    ├── C [r1 r2]
                    │   ├── D [r1]
                    │   │   └── E [r1]
                    │   └── Z [r2]
                    └── Q [r1]
                """, drawing());
        assertEquals(0, tree.forgetBranches(key("ABCDE"), r1, 5), "nothing was lost");
        assertEquals(0, tree.forgetBranches(key("ABCDE"), r1, 9), "keep beyond the key: nothing to do");
    }

    @Test
    void forgettingBranchesFromTheFirstBlockKeepsOtherPrompts() {
        insert("ABC", r1);
        insert("ABX", r1);
        insert("QRS", r1);
        assertEquals(1, tree.forgetBranches(key("ABC"), r1, 0));
        assertEquals("""
                ○
                ├── AB [r1]
                │   └── C [r1]
                └── QRS [r1]
                """, drawing());
    }

    @Test
    void evictionDropsLeastRecentlyUsedLeavesFirstAndMergesWhatIsLeft() {
        PrefixTree small = PrefixTree.builder().clock(clock).maxSize(4).build();
        tree = small;
        insert("ABCD", r1); // t1
        insert("ABXY", r2); // t2
        insert("ABXY", r2); // t3: r2's path is fresher
        EvictionReport report = tree.evict();
        // r1's entries are oldest; among them the deepest (CD) goes first, which frees two blocks and
        // brings the tree to its cap, so r1's older AB entry stays: a pass evicts no more than it must.
        assertEquals("""
                ○
                └── AB [r1 r2]
                    └── XY [r2]
                """, drawing());
        assertEquals(1, report.evicted());
        assertEquals(4, tree.stats().size());
        insert("QR", r1);
        report = tree.evict();
        // Over the cap again (6 > 4). Oldest first: r1's AB (t1) goes but frees nothing, since r2 still
        // holds AB; then r2's XY (t3, deeper than r2's AB) goes and frees two blocks. The fresh QR stays.
        assertEquals("""
                ○
                ├── AB [r2]
                └── QR [r1]
                """, drawing());
        assertEquals(2, report.evicted());
    }

    @Test
    void ttlExpiryDetachesAndMerges() {
        tree = PrefixTree.builder().clock(clock).ttl(Duration.ofSeconds(10)).build();
        insert("ABCD", r1);
        insert("ABXY", r1);
        clock.advance(Duration.ofSeconds(20));
        insert("ABXY", r2);
        tree.evict();
        // r1's three entries expired; CD, held by nobody, is detached. AB keeps r2, so it stays a node
        // of its own (it carries its own last-use time).
        assertEquals("""
                ○
                └── AB [r2]
                    └── XY [r2]
                """, drawing());
        assertEquals(new TreeStats(4, 2, 2, 0), tree.stats());
        clock.advance(Duration.ofSeconds(20));
        tree.evict();
        assertEquals("○\n", drawing());
    }

    @Test
    void clearDropsEverything() {
        insert("ABCD", r1);
        insert("ABXY", r2);
        tree.clear();
        assertEquals("○\n", drawing());
        assertEquals(new TreeStats(0, 0, 0, 0), tree.stats());
        insert("AB", r1);
        assertEquals("""
                ○
                └── AB [r1]
                """, drawing());
    }
}
