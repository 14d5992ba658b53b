package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A node one replica holds is that replica's holder itself (no holder object of its own). When such a node
 * is replaced by a copy (an edge split or merged), the copy takes its place as the holder: the times carry
 * over, a refresh that touched the original after the copy was made reaches the copy, an eviction pass that
 * listed the original's entry still finds it, and no holder keeps a retired node alive
 * ({@link PrefixTree#checkInvariants}). Deterministic: the clock is moved by hand.
 */
class PrefixTreeOwnHolderTest {

    private final MutableClock clock = new MutableClock();
    private Replica r1;
    private Replica r2;

    @BeforeEach
    void setUp() {
        List<ManagedReplicaSet.Member> reps =
                ManagedReplicaSet.builder().add("r1").add("r2").build().replicas();
        r1 = reps.get(0);
        r2 = reps.get(1);
    }

    private static long[] blocks(String letters) {
        long[] b = new long[letters.length()];
        for (int i = 0; i < b.length; i++) {
            b[i] = letters.charAt(i);
        }
        return b;
    }

    private static PromptKey key(String letters) {
        return PromptKey.forBlocks(blocks(letters), 1);
    }

    private static PrefixTree.Route route(PrefixTree tree, String prefix, Replica r) {
        Map<Replica, PrefixTree.Route> m =
                tree.snapshot().get(Arrays.stream(blocks(prefix)).boxed().toList());
        return m == null ? null : m.get(r);
    }

    @Test
    void aSplitCarriesTheHolderAndALateRefreshOver() {
        PrefixTree tree = PrefixTree.builder().clock(clock).build();
        clock.set(Instant.ofEpochMilli(10));
        tree.insert(key("abcd"), r1);
        PrefixTree.Holder original = tree.holderAt(blocks("abcd"), r1);
        assertNotNull(original);
        clock.set(Instant.ofEpochMilli(20));
        tree.insert(key("abx"), r2); // splits "abcd" into "ab" and a copy of the leaf with "cd"
        tree.checkInvariants();
        PrefixTree.Holder copy = tree.holderAt(blocks("abcd"), r1);
        assertNotSame(original, copy);
        assertEquals(10, route(tree, "abcd", r1).time());
        assertEquals(10, route(tree, "ab", r1).time());
        // A lock-free refresh that walked to the leaf before the split touches it after: the copy gets it.
        original.touch(30, false);
        assertEquals(30, route(tree, "abcd", r1).time());
        assertSame(copy, tree.holderAt(blocks("abcd"), r1));
    }

    @Test
    void anEvictionPassFindsAnEntryWhoseNodeWasMergedDuringThePass() {
        PrefixTree tree =
                PrefixTree.builder().clock(clock).ttl(Duration.ofMillis(100)).build();
        clock.set(Instant.ofEpochMilli(0));
        tree.insert(key("abcd"), r1);
        tree.insert(key("abx"), r2); // "ab" [r1 r2] with children "cd" [r1] and "x" [r2]
        clock.set(Instant.ofEpochMilli(1_000));
        // The pass lists ab.r1, ab.r2, cd.r1, x.r2; dropping cd.r1 detaches "cd" and merges "x" into "ab",
        // replacing "x" (its own holder) by a copy: its entry, listed before, must still be found.
        EvictionReport report = tree.evict();
        assertEquals(4, report.expired());
        assertNull(route(tree, "abx", r2));
        assertEquals(0, tree.recount().entries());
        tree.checkInvariants();
    }
}
