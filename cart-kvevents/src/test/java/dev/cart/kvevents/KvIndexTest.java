package dev.cart.kvevents;

import static dev.cart.kvevents.TestBatches.concat;
import static dev.cart.kvevents.TestBatches.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The block index fed through a feed without a replay socket: what a lookup sees after each kind of event. */
class KvIndexTest {

    private final AtomicLong now = new AtomicLong(1_000);
    private final KvIndex index = KvIndex.builder().ticker(now::get).build();
    private long seq;

    private KvFeed stream(String replica) {
        KvFeed f = index.feed(KvStream.of(replica, "tcp://unused:1", null, "m"), null);
        f.start();
        return f;
    }

    private void send(KvFeed f, TestBatches b) {
        f.live(seq++, b.build(1.0));
    }

    /** A prompt of {@code blocks} whole blocks plus one token (the last token is never a hit). */
    private static int[] prompt(int[]... blocks) {
        return concat(concat(blocks), new int[] {7});
    }

    @Test
    void aStoredChainMatchesItsPrefixAndARemovalShortensIt() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1), b1 = tokens(200, 1), b2 = tokens(300, 1);
        send(a, TestBatches.positional().stored(new long[] {11, 12}, null, concat(b0, b1)));
        send(a, TestBatches.positional().stored(new long[] {13}, 12L, b2));
        PreciseMatch m = index.lookup(prompt(b0, b1, b2), "m", null);
        assertEquals(48, m.confirmedTokens("a"));
        assertEquals(ReplicaMode.PRECISE, m.mode("a"));
        // a different third block matches two
        assertEquals(32, index.lookup(prompt(b0, b1, tokens(999, 1)), "m", null).confirmedTokens("a"));
        // the middle block evicted: the prefix stops before it, whatever follows
        send(a, TestBatches.positional().removed(new long[] {12}, "GPU"));
        assertEquals(16, index.lookup(prompt(b0, b1, b2), "m", null).confirmedTokens("a"));
        // another model's request matches nothing
        assertEquals(0, index.lookup(prompt(b0, b1, b2), "other", null).confirmedTokens("a"));
    }

    @Test
    void replicasAreMatchedEachToTheirOwnPrefix() {
        KvFeed a = stream("a");
        KvFeed b = stream("b");
        int[] b0 = tokens(100, 1), b1 = tokens(200, 1);
        send(a, TestBatches.positional().stored(new long[] {1, 2}, null, concat(b0, b1)));
        send(b, TestBatches.of(true, true).stored(new long[] {77}, null, b0)); // other hashes, same tokens
        PreciseMatch m = index.lookup(prompt(b0, b1), "m", null);
        assertEquals(32, m.confirmedTokens("a"));
        assertEquals(16, m.confirmedTokens("b"));
        assertEquals(2, index.size());
    }

    @Test
    void anOrphanIsNeverGuessed() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1), b1 = tokens(200, 1);
        send(a, TestBatches.positional().stored(new long[] {2}, 1L, b1)); // parent 1 never seen
        assertEquals(0, index.lookup(prompt(b0, b1), "m", null).confirmedTokens("a"));
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(1, st.orphans());
        assertTrue(st.incomplete());
        assertEquals(0, st.blocks());
    }

    @Test
    void adaptersAndSaltsKeepTheirBlocksApart() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1), b1 = tokens(200, 1);
        send(a, TestBatches.positional().stored(new long[] {1, 2}, null, concat(b0, b1), null, "sql", "s1", null));
        assertEquals(32, index.lookup(prompt(b0, b1), "sql", "s1").confirmedTokens("a"));
        assertEquals(0, index.lookup(prompt(b0, b1), "sql", null).confirmedTokens("a"));
        assertEquals(0, index.lookup(prompt(b0, b1), "m", "s1").confirmedTokens("a"));
        assertEquals(0, index.lookup(prompt(b0, b1), "sql", "s2").confirmedTokens("a"));
    }

    @Test
    void onlyFullAttentionGroupsAreIndexedAndOtherGroupsRemovalsIgnored() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1);
        send(a, TestBatches.positional().stored(new long[] {5}, null, b0, null, null, null, "full_attention"));
        // the sliding-window group reuses the hash: its store and its removal must not touch the index
        send(a, TestBatches.positional().stored(new long[] {5}, null, b0, null, null, null, "sliding_window"));
        assertEquals(16, index.lookup(prompt(b0), "m", null).confirmedTokens("a"));
        assertEquals(1, index.status("a").streams().get(0).otherGroupBlocks());
    }

    @Test
    void anOffloadedBlockStillMatchesUntilItLeavesEveryTier() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1);
        send(a, TestBatches.positional().stored(new long[] {5}, null, b0));
        send(a, TestBatches.positional().stored(new long[] {5}, null, b0, "CPU", null, null, null));
        assertEquals(1, index.status("a").streams().get(0).offloadBlocks());
        send(a, TestBatches.positional().removed(new long[] {5}, "GPU"));
        assertEquals(16, index.lookup(prompt(b0), "m", null).confirmedTokens("a"));
        send(a, TestBatches.positional().removed(new long[] {5}, "CPU"));
        assertEquals(0, index.lookup(prompt(b0), "m", null).confirmedTokens("a"));
        assertEquals(0, index.status("a").streams().get(0).offloadBlocks());
    }

    @Test
    void allBlocksClearedEmptiesTheReplica() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1);
        send(a, TestBatches.positional().stored(new long[] {5}, null, b0));
        send(a, TestBatches.positional().cleared());
        assertEquals(0, index.lookup(prompt(b0), "m", null).confirmedTokens("a"));
        assertEquals(0, index.size());
    }

    @Test
    void theMemoryCapEvictsTheOldestBlocks() {
        KvIndex small = KvIndex.builder().ticker(now::get).maxBlocksPerStream(2).build();
        KvFeed a = small.feed(KvStream.of("a", "tcp://unused:1", null, "m"), null);
        int[] x = tokens(100, 1), y = tokens(200, 1), z = tokens(300, 1);
        a.live(0, TestBatches.positional().stored(new long[] {1}, null, x).build(1));
        a.live(1, TestBatches.positional().stored(new long[] {2}, null, y).build(1));
        a.live(2, TestBatches.positional().stored(new long[] {3}, null, z).build(1));
        assertEquals(0, small.lookup(prompt(x), "m", null).confirmedTokens("a"));
        assertEquals(16, small.lookup(prompt(y), "m", null).confirmedTokens("a"));
        assertEquals(16, small.lookup(prompt(z), "m", null).confirmedTokens("a"));
        assertEquals(1, small.status("a").streams().get(0).capEvicted());
    }

    @Test
    void theLastTokenAndPartialBlocksNeverCount() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1);
        send(a, TestBatches.positional().stored(new long[] {5}, null, b0));
        assertEquals(0, index.lookup(b0, "m", null).confirmedTokens("a")); // exactly one block: its last token
        assertEquals(16, index.lookup(prompt(b0), "m", null).confirmedTokens("a"));
    }
}
