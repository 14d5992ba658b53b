package dev.cart.kvevents;

import org.jspecify.annotations.Nullable;

/**
 * Hears what the KV-event index and its subscribers do, for metrics and logs: a small SPI with a no-op
 * default ({@link #NONE}), so the library needs no metrics library. The host maps it to its own (the proxy:
 * Micrometer counters, a lag histogram, gauges read from {@link KvIndex#status()}).
 *
 * <p>Called on the stream's I/O thread (and, for {@link #onTokenized}, on the thread that tokenized; for
 * {@link #onModeChanged}, on whichever thread read the mode), so an implementation must be quick, thread-safe
 * and must not throw (what it throws is caught, logged once and dropped). In every method {@code replica} is
 * the replica's id ({@link KvStream#replica()}) and {@code rank} the stream's data-parallel rank (at least 0).
 */
public interface KvEventsListener {

    /** Hears nothing. */
    KvEventsListener NONE = new KvEventsListener() {};

    /**
     * A batch was applied to the index.
     *
     * @param replica  the replica's id
     * @param rank     the stream's rank
     * @param stored   blocks the batch stored (at least 0)
     * @param removed  blocks the batch removed (at least 0)
     * @param lagNanos from the engine's timestamp to applied (the two clocks' offset included, so possibly
     *                 negative), or -1 when the batch was replayed
     */
    default void onBatchApplied(String replica, int rank, int stored, int removed, long lagNanos) {}

    /**
     * A live sequence number skipped ahead of the one expected: batches were lost on the wire (a replay
     * follows when the stream has a replay endpoint).
     *
     * @param replica  the replica's id
     * @param rank     the stream's rank
     * @param expected the sequence number expected
     * @param received the one received, greater than {@code expected}
     */
    default void onGap(String replica, int rank, long expected, long received) {}

    /**
     * A replay was asked of the engine.
     *
     * @param replica the replica's id
     * @param rank    the stream's rank
     * @param fromSeq the first sequence number asked for (at least 0)
     * @param reason  why: {@code connect}, {@code subscribed} (the live socket's connection came up: what was
     *                published before it took effect), {@code gap}, {@code restart} or {@code orphans}
     */
    default void onReplayRequested(String replica, int rank, long fromSeq, String reason) {}

    /**
     * A replay ended.
     *
     * @param replica  the replica's id
     * @param rank     the stream's rank
     * @param batches  batches replayed (at least 0)
     * @param complete false when the replay timed out; true when the engine sent its end marker, even if it
     *                 began later than asked (no longer holding the first batch): what that lost is reported
     *                 by {@link #onReset} for a gap, and shows as an incomplete history otherwise
     */
    default void onReplayEnded(String replica, int rank, int batches, boolean complete) {}

    /**
     * The stream's blocks were dropped from the index.
     *
     * @param replica the replica's id
     * @param rank    the stream's rank
     * @param cause   {@code restart}, {@code cleared}, or {@code lost events (why)}
     */
    default void onReset(String replica, int rank, String cause) {}

    /**
     * Stored blocks named a parent the index does not know: they are not indexed (never guessed).
     *
     * @param replica the replica's id
     * @param rank    the stream's rank
     * @param blocks  the blocks left out (at least 1)
     */
    default void onOrphans(String replica, int rank, int blocks) {}

    /**
     * Decoding one batch skipped what it does not know (newer engines add fields and events).
     *
     * @param replica the replica's id
     * @param rank    the stream's rank
     * @param fields  unknown fields skipped (at least 0)
     * @param tags    events of an unknown kind skipped (at least 0; the two together at least 1)
     */
    default void onSkipped(String replica, int rank, int fields, int tags) {}

    /**
     * Something malformed was dropped.
     *
     * @param replica the replica's id
     * @param rank    the stream's rank
     * @param what    {@code frame}, {@code batch} or {@code event}
     * @param count   how many (at least 1)
     */
    default void onMalformed(String replica, int rank, String what, int count) {}

    /**
     * The index's memory cap ({@link KvIndex.Builder#maxBlocksPerStream}) evicted the stream's oldest blocks.
     *
     * @param replica the replica's id
     * @param rank    the stream's rank
     * @param blocks  the blocks evicted (at least 1)
     */
    default void onCapEvicted(String replica, int rank, int blocks) {}

    /**
     * A replica's mode changed, as its streams' states make it. A change is noticed when the mode is read (a
     * lookup, a status), so a silence is reported by the request that finds it, not when it began. A replica
     * made approximate by failing tokenizations is not reported here ({@link #onTokenized} tells of those).
     *
     * @param replica the replica's id
     * @param from    the mode before
     * @param to      the mode now, not {@code from}
     * @param reason  why, in a word or two ({@code live}, {@code live, incomplete history}, {@code replaying},
     *                {@code no events yet}, {@code events lost}, {@code silent}, {@code no stream})
     */
    default void onModeChanged(String replica, ReplicaMode from, ReplicaMode to, String reason) {}

    /**
     * A request's tokens were asked of {@code replica}'s engine.
     *
     * @param replica the replica whose engine was asked
     * @param ok      whether the tokens were obtained
     * @param nanos   how long the call took
     * @param reason  null on success, else why it failed ({@code timeout}, {@code status N}, {@code connect},
     *                {@code body}, {@code io}, ...)
     */
    default void onTokenized(String replica, boolean ok, long nanos, @Nullable String reason) {}
}
