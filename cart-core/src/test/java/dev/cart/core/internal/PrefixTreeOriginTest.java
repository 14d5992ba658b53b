package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.MutableClock;
import dev.cart.core.PromptKey;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Entries learned from a peer ({@link PrefixTree#insertRemote}): marked remote, evicted before local
 * entries of the same age, made local by local use, stamped no later than now; a peer's reset
 * ({@link PrefixTree#dropUntil}) keeps what was used after it. Deterministic: the clock is moved by hand.
 */
class PrefixTreeOriginTest {

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
        return KeyAccess.forBlocks(blocks(letters), 1);
    }

    private static PrefixTree.Route route(PrefixTree tree, String prefix, Replica r) {
        Map<Replica, PrefixTree.Route> m = tree.snapshot()
                .get(java.util.Arrays.stream(blocks(prefix)).boxed().toList());
        return m == null ? null : m.get(r);
    }

    @Test
    void evictionDropsRemoteEntriesBeforeLocalOnesOfTheSameAge() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(8).build();
        long t = clock.millis();
        // Same depth, same time: only the origin tells them apart. Inserted in both orders, so neither
        // insertion order nor table position decides.
        assertTrue(tree.insert(key("ABCD"), r1));
        assertTrue(tree.insertRemote(blocks("WXYZ"), r2, t));
        assertTrue(tree.insertRemote(blocks("EFGH"), r1, t));
        assertTrue(tree.insert(key("STUV"), r2));
        assertEquals(16, tree.stats().size());
        EvictionReport report = tree.evict();
        assertEquals(2, report.evicted());
        assertEquals(8, tree.stats().size());
        assertEquals(4, tree.match(key("ABCD")).matchedLength(), "local route kept");
        assertEquals(4, tree.match(key("STUV")).matchedLength(), "local route kept");
        assertEquals(0, tree.match(key("WXYZ")).matchedLength(), "remote route evicted first");
        assertEquals(0, tree.match(key("EFGH")).matchedLength(), "remote route evicted first");
        tree.checkInvariants();
        assertEquals(tree.recount(), tree.stats());
    }

    @Test
    void age_stillComesFirst_anOlderLocalEntryGoesBeforeANewerRemoteOne() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(4).build();
        assertTrue(tree.insert(key("ABCD"), r1));
        clock.advance(Duration.ofMillis(5));
        assertTrue(tree.insertRemote(blocks("WXYZ"), r2, clock.millis()));
        tree.evict();
        assertEquals(0, tree.match(key("ABCD")).matchedLength());
        assertEquals(4, tree.match(key("WXYZ")).matchedLength());
    }

    @Test
    void localUseMakesARemoteEntryLocal() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(100).build();
        assertTrue(tree.insertRemote(blocks("ABCD"), r1, clock.millis()));
        assertTrue(route(tree, "ABCD", r1).remote());
        clock.advance(Duration.ofMillis(3));
        assertTrue(tree.insert(key("AB"), r1)); // a local prefix splits the edge: the mid node is local
        assertFalse(route(tree, "AB", r1).remote());
        assertTrue(route(tree, "ABCD", r1).remote(), "below the local prefix it is still a peer's route");
        assertTrue(tree.insert(key("ABCD"), r1)); // the lock-free refresh path
        assertFalse(route(tree, "ABCD", r1).remote());
        assertEquals(clock.millis(), route(tree, "ABCD", r1).time());
        // a peer's later report never makes a local entry remote again
        clock.advance(Duration.ofMillis(3));
        assertTrue(tree.insertRemote(blocks("ABCDE"), r1, clock.millis()));
        assertFalse(route(tree, "ABCD", r1).remote());
        assertTrue(route(tree, "ABCDE", r1).remote());
        tree.checkInvariants();
        assertEquals(tree.recount(), tree.stats());
    }

    @Test
    void aPeersTimeIsNeverLaterThanNowAndAnOlderReportDoesNotMoveTimeBack() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(100).build();
        long now = clock.millis();
        assertTrue(tree.insertRemote(blocks("ABC"), r1, now + 60_000)); // a peer whose clock runs ahead
        assertEquals(now, route(tree, "ABC", r1).time());
        assertTrue(tree.insertRemote(blocks("ABC"), r1, now - 1_000)); // a late, older report
        assertEquals(now, route(tree, "ABC", r1).time());
    }

    @Test
    void aPeersResetDropsWhatWasUsedUpToItsTimeOnly() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(100).build();
        assertTrue(tree.insert(key("ABCD"), r1));
        long resetAt = clock.millis();
        clock.advance(Duration.ofMillis(1));
        assertTrue(tree.insert(key("ABXY"), r2));
        assertEquals(2, tree.dropUntil(resetAt)); // r1's two nodes (AB, CD); r2 keeps AB and XY
        assertEquals(
                0,
                tree.match(key("ABCD")).holders().stream()
                        .filter(h -> h.replica() == r1)
                        .count());
        assertEquals(4, tree.match(key("ABXY")).matchedLength());
        tree.checkInvariants();
        assertEquals(tree.recount(), tree.stats());
    }
}
