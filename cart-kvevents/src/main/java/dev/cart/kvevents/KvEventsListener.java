package dev.cart.kvevents;

/**
 * Hears what the KV-event index and its subscribers do, for metrics and logs: a small SPI with a no-op
 * default ({@link #NONE}), so the library needs no metrics library. The host maps it to its own (the proxy:
 * Micrometer counters, a lag histogram, gauges read from {@link KvIndex#status()}).
 *
 * <p>Called on the stream's I/O thread (and, for {@link #onTokenized}, on the thread that tokenized), so an
 * implementation must be quick, thread-safe and must not throw (what it throws is caught and dropped).
 * {@code replica} is the replica's id; {@code rank} the stream's data-parallel rank.
 */
public interface KvEventsListener {

    /** Hears nothing. */
    KvEventsListener NONE = new KvEventsListener() {};

    /**
     * A batch was applied: {@code stored} and {@code removed} blocks; {@code lagNanos} from the engine's
     * timestamp to applied (the two clocks' offset included), or -1 when the batch was replayed.
     */
    default void onBatchApplied(String replica, int rank, int stored, int removed, long lagNanos) {}

    /** A live sequence number skipped ahead of the one expected: batches were lost on the wire. */
    default void onGap(String replica, int rank, long expected, long received) {}

    /** A replay was asked for from {@code fromSeq} ({@code reason}: connect, gap, restart, orphans). */
    default void onReplayRequested(String replica, int rank, long fromSeq, String reason) {}

    /**
     * A replay ended: {@code batches} replayed; {@code complete} false when the engine no longer held the
     * first batch asked for (what it missed is lost) or the replay timed out.
     */
    default void onReplayEnded(String replica, int rank, int batches, boolean complete) {}

    /** The replica's blocks were dropped from the index ({@code cause}: restart, cleared, lost events). */
    default void onReset(String replica, int rank, String cause) {}

    /** {@code blocks} stored blocks named a parent the index does not know: not indexed (never guessed). */
    default void onOrphans(String replica, int rank, int blocks) {}

    /** Decoding skipped {@code fields} unknown fields and {@code tags} events of an unknown kind. */
    default void onSkipped(String replica, int rank, int fields, int tags) {}

    /** Something malformed was dropped: {@code what} is {@code frame}, {@code batch} or {@code event}. */
    default void onMalformed(String replica, int rank, String what, int count) {}

    /** The index's memory cap evicted {@code blocks} of the stream's oldest blocks. */
    default void onCapEvicted(String replica, int rank, int blocks) {}

    /** A replica's mode changed (seen by the stream's thread; a silence is noticed when a request reads it). */
    default void onModeChanged(String replica, ReplicaMode from, ReplicaMode to, String reason) {}

    /**
     * A request's tokens were asked of {@code replica}'s engine: {@code ok} or not, in {@code nanos}.
     * {@code reason} is null on success, else why it failed (timeout, status, connect, body).
     */
    default void onTokenized(String replica, boolean ok, long nanos, String reason) {}
}
