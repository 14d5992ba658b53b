package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.MutableClock;
import dev.cart.core.PromptKey;
import dev.cart.core.spi.Replica;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The lock-free walk every insert starts with: it refreshes the last-use times of the path's nodes the replica
 * already holds on its way down, also when the insert then needs the writer (and when the writer is refused
 * under maintenance), never the time of a node the key ends or leaves inside; and it tells
 * {@link PrefixTree#insertNoting}'s flags in both cases; and the writer that may follow keeps no node in its
 * scratch after it. Deterministic: the clock is moved by hand.
 */
class PrefixTreeRefreshTest {

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
        Map<Replica, PrefixTree.Route> m =
                tree.snapshot().get(Arrays.stream(blocks(prefix)).boxed().toList());
        return m == null ? null : m.get(r);
    }

    @Test
    void anInsertRefusedUnderMaintenanceStillRefreshesWhatTheReplicaHeld() throws Exception {
        // A clock that, when the maintenance pass reads it (holding the tree), lets another thread insert a
        // key that needs the writer: that insert is refused, but its walk refreshed the prefix r1 holds.
        AtomicBoolean armed = new AtomicBoolean();
        boolean[] refused = {false};
        PrefixTree[] holder = new PrefixTree[1];
        Clock passHook = new Clock() {
            @Override
            public ZoneId getZone() {
                return clock.getZone();
            }

            @Override
            public Clock withZone(ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                return Instant.ofEpochMilli(millis());
            }

            @Override
            public long millis() {
                if (armed.compareAndSet(true, false)) {
                    Thread t = new Thread(() -> refused[0] = !holder[0].insert(key("ABCDXY"), r1));
                    t.start();
                    try {
                        t.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
                return clock.millis();
            }
        };
        PrefixTree tree = PrefixTree.builder()
                .clock(passHook)
                .maxSize(100)
                .ttl(Duration.ofHours(1))
                .build();
        holder[0] = tree;
        assertTrue(tree.insert(key("ABCD"), r1));
        long first = clock.millis();
        clock.advance(Duration.ofSeconds(5));
        long later = clock.millis();
        armed.set(true);
        tree.evict(); // its clock read inserts ABCDXY from another thread while the pass holds the tree
        assertTrue(refused[0], "the insert that needed the writer was refused under maintenance");
        assertEquals(1, tree.stats().skippedInserts());
        assertEquals(later, route(tree, "ABCD", r1).time(), "what r1 held was refreshed by the walk");
        assertNull(route(tree, "ABCDX", r1), "nothing was written");
        assertTrue(later > first);
        tree.checkInvariants();
    }

    @Test
    void theWritersScratchKeepsNoNodeAliveAfterAWrite() throws Exception {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(100).build();
        assertTrue(tree.insert(key("ABCD"), r1));
        assertTrue(tree.insert(key("ABCDEF"), r1));
        assertTrue(tree.insert(key("ABCDEFGH"), r2)); // a write through three levels
        tree.clear(); // what the scratch still held would keep the old tree alive
        java.lang.reflect.Field f = PrefixTree.class.getDeclaredField("writePath");
        f.setAccessible(true);
        for (Object node : (Object[]) f.get(tree)) {
            assertNull(node);
        }
    }

    @Test
    void aNodeTheKeyEndsInsideKeepsItsTime() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(100).build();
        assertTrue(tree.insert(key("ABCD"), r1));
        long first = clock.millis();
        clock.advance(Duration.ofSeconds(1));
        assertTrue(tree.insert(key("AB"), r1)); // splits ABCD: AB is used now, CD is not
        assertEquals(clock.millis(), route(tree, "AB", r1).time());
        assertEquals(first, route(tree, "ABCD", r1).time());
        clock.advance(Duration.ofSeconds(1));
        assertTrue(tree.insert(key("ABCX"), r2)); // r2's walk meets only r1's nodes: r1's times stay
        assertEquals(first, route(tree, "ABC", r1).time());
        assertEquals(first + 1_000, route(tree, "AB", r1).time());
        tree.checkInvariants();
    }

    @Test
    void theFlagsComeFromTheSameWalkWhetherOrNotTheInsertWrites() {
        PrefixTree tree = PrefixTree.builder().clock(clock).maxSize(100).build();
        long now = clock.millis();
        assertTrue(tree.insertRemote(blocks("ABCD"), r1, now));
        // a hit on a route only a peer reported, whose key goes on past it: the writer adds EF
        int outcome = tree.insertNoting(key("ABCDEF"), r1, 4, 0);
        assertEquals(PrefixTree.WAS_REMOTE, outcome);
        assertFalse(route(tree, "ABCD", r1).remote(), "made local by this insert");
        assertEquals(0, tree.insertNoting(key("ABCDEF"), r1, 4, 0), "local now");
        // the whole key held: no write, and the deepest node was used in this window
        assertEquals(PrefixTree.USED_IN_WINDOW, tree.insertNoting(key("ABCDEF"), r1, 0, 60_000));
        clock.advance(Duration.ofMinutes(1));
        assertEquals(0, tree.insertNoting(key("ABCDEF"), r1, 0, 60_000), "a new window");
        assertTrue(tree.insertRemote(blocks("ABXY"), r2, clock.millis()));
        // r2 holds AB only from a peer; the key leaves the tree inside CD: the write splits it
        assertEquals(PrefixTree.WAS_REMOTE, tree.insertNoting(key("ABCQ"), r2, 2, 0));
        assertFalse(route(tree, "AB", r2).remote());
        tree.checkInvariants();
        assertEquals(tree.recount(), tree.stats());
    }
}
