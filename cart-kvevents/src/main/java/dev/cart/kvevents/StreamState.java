package dev.cart.kvevents;

import org.jspecify.annotations.Nullable;

/**
 * What the index keeps for one stream: its bit in the key table, its engine-hash map, its mode inputs and
 * its counters.
 *
 * <p>Concurrency: the map and the group set are touched only under the index's lock (by the stream's
 * thread). Counters and mode inputs are volatile with a single writer, the stream's thread, except the
 * routing notes ({@link #routedSince}, {@link #routedCount}), written by routing threads and cleared by the
 * stream's thread: a lost update there only delays or advances a silence verdict by one request.
 */
final class StreamState {

    /** Why a stream is where it is; the first matching row of {@link #mode} wins. */
    enum Phase {
        /** Created, nothing received, no replay asked (no replay endpoint): nothing is known. */
        NO_HISTORY,
        /** A replay is running: the index is being rebuilt. */
        REPLAYING,
        /** In sequence. */
        LIVE
    }

    final KvStream config;
    final int slot;
    final long bit;
    final EngineMap map = new EngineMap();
    /** Groups this stream said are not full attention: their removals are ignored like their stores. */
    final java.util.BitSet otherGroups = new java.util.BitSet();

    volatile Phase phase = Phase.NO_HISTORY;
    /** Until when (ticker nanos) the stream stays approximate after losing events; 0 when not held. */
    volatile long heldUntil;

    volatile boolean incomplete;
    volatile long nextSeq = -1;
    volatile long lastEventNanos;
    volatile long routedSince;
    volatile int routedCount;

    volatile long blocks;
    volatile long offloadBlocks;
    volatile long batches;
    volatile long storedBlocks;
    volatile long removedBlocks;
    volatile long gaps;
    volatile long replays;
    volatile long replayFailures;
    volatile long resets;
    volatile long orphans;
    volatile long skippedFields;
    volatile long unknownTags;
    volatile long malformed;
    volatile long capEvicted;
    volatile long otherGroupBlocks;
    volatile long blockSizeMismatches;

    StreamState(KvStream config, int slot) {
        this.config = config;
        this.slot = slot;
        this.bit = 1L << slot;
    }

    /** The stream's mode at {@code now} (ticker nanos), with its reason in {@code why[0]} when given. */
    ReplicaMode mode(long now, long silenceNanos, String @Nullable [] why) {
        Phase p = phase;
        String reason;
        ReplicaMode m;
        if (p == Phase.NO_HISTORY) {
            m = ReplicaMode.APPROXIMATE;
            reason = "no events yet";
        } else if (p == Phase.REPLAYING) {
            m = ReplicaMode.CATCHING_UP;
            reason = "replaying";
        } else if (heldUntil != 0 && now - heldUntil < 0) {
            m = ReplicaMode.APPROXIMATE;
            reason = "events lost";
        } else if (silent(now, silenceNanos)) {
            m = ReplicaMode.APPROXIMATE;
            reason = "silent";
        } else {
            m = ReplicaMode.PRECISE;
            reason = incomplete ? "live, incomplete history" : "live";
        }
        if (why != null) {
            why[0] = reason;
        }
        return m;
    }

    /** Requests were routed to the replica a while ago and its engine has said nothing since. */
    boolean silent(long now, long silenceNanos) {
        long since = routedSince;
        return since != 0 && routedCount >= 3 && now - since > silenceNanos;
    }

    /** A request was routed to the replica at {@code now}. */
    void noteRouted(long now) {
        if (routedSince == 0) {
            routedSince = now == 0 ? 1 : now;
        }
        routedCount++;
    }

    /** The engine said something at {@code now}: it is not silent. */
    void noteEvent(long now) {
        lastEventNanos = now;
        if (routedSince != 0) {
            routedSince = 0;
            routedCount = 0;
        }
    }

    StreamStatus status(long now, long silenceNanos) {
        String[] why = new String[1];
        ReplicaMode m = mode(now, silenceNanos, why);
        return new StreamStatus(
                config.rank(),
                m,
                why[0],
                incomplete,
                nextSeq,
                blocks,
                batches,
                storedBlocks,
                removedBlocks,
                offloadBlocks,
                gaps,
                replays,
                replayFailures,
                resets,
                orphans,
                skippedFields,
                unknownTags,
                malformed,
                capEvicted,
                otherGroupBlocks);
    }
}
