package dev.cart.kvevents;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One stream's sequence state machine: what a transport (the ZMQ subscriber, or a simulation in process)
 * hands an engine's frames to. It decodes each batch, applies it to the {@link KvIndex} in sequence order,
 * and keeps the stream's mode.
 *
 * <ul>
 *   <li><b>Connect</b> ({@link #start}): a replay from sequence 0 is asked for; live batches that arrive
 *       meanwhile are held and applied after it, those the replay already covered skipped. Without a replay
 *       endpoint, the first live batch starts the stream (its history is incomplete unless it is batch 0).
 *   <li><b>Subscribed</b> ({@link #subscribed}: the live socket's connection is up, at its first connect and
 *       every reconnect): what the engine published before the subscription took effect reached no one, so
 *       the batches from the one expected are asked for (after the replay running, if one is). A late start
 *       of that replay loses events, as for a gap; its timeout loses nothing.
 *   <li><b>Gap</b> (a live sequence number past the one expected): a replay from the one expected. A replay
 *       that starts later than asked (the engine's buffer no longer holds it), or times out, means events were
 *       lost for good: the stream's blocks are dropped, it is marked incomplete and held approximate for
 *       {@link KvIndex.Builder#gapHold} while new events refill it. Without a replay endpoint likewise.
 *   <li><b>Restart</b> (a live sequence number below the one expected; the engine counts from 0 again when it
 *       restarts): the stream's blocks are dropped and a replay from 0 is asked for.
 *   <li><b>AllBlocksCleared</b>: the blocks are dropped, in order with the batch's other events.
 *   <li><b>Orphans</b> (stored blocks whose parent the index never saw): not indexed; the stream is marked
 *       incomplete and a replay from 0 is asked for, at most once a minute (it helps only if the parent is
 *       still in the engine's buffer).
 *   <li><b>Malformed</b> frames and batches are counted and dropped; the stream goes on.
 * </ul>
 *
 * <p>Replays re-apply what they carry in order; the final state is right because every later event of a
 * block is in the same replay. While a replay runs the stream is {@link ReplicaMode#CATCHING_UP}.
 *
 * <p>Not thread-safe: one thread (the transport's) makes every call. The {@link Replayer} is called at the
 * end of the call that decided on a replay; it may answer at once (calling {@link #replayed} and
 * {@link #replayEnded} from inside) or later from the same thread.
 */
public final class KvFeed {

    /** Asks the engine for its batches from a sequence number on (vLLM's replay socket). */
    @FunctionalInterface
    public interface Replayer {
        /**
         * Asks for every batch from {@code fromSeq} on; the answers go to {@link #replayed} and
         * {@link #replayEnded} on the feed's thread. Called on the feed's thread; must not block for long.
         *
         * @param fromSeq the first sequence number wanted, at least 0
         */
        void request(long fromSeq);
    }

    static final int BUFFER_LIMIT = 20_000;
    static final long ORPHAN_REPLAY_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(60);

    private record Held(long seq, byte[] payload) {}

    private final FeedSink sink;
    private final StreamState s;
    private @Nullable Replayer replayer;
    private final java.util.function.LongSupplier ticker;
    private final KvEventsListener listener;
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    private final BatchDecoder.Tally tally = new BatchDecoder.Tally();
    private final java.time.Clock clock;

    /** Whether the replay running fills a gap (a late start or a timeout then loses events) or rebuilds history. */
    private boolean replayForGap;
    /**
     * Whether the replay running catches up after a subscription: a late start loses events (the engine no longer
     * holds batches that reached no one), a timeout proves nothing (there may have been none), and the sequence
     * stays known either way.
     */
    private boolean replayForCatchUp;
    /** Where the last replay began: a held batch below it was not covered by it, so it means a restart. */
    private long replayFrom;

    private long replayExpect;
    private int replayCount;
    private long replayDeadline;
    private long pendingReplay = -1;
    private long lastOrphanReplay = Long.MIN_VALUE;
    private boolean draining;
    /** The live socket connected while a replay ran (whose answer may predate it): catch up once it ends. */
    private boolean catchUpAfterReplay;

    KvFeed(
            FeedSink sink,
            StreamState s,
            @Nullable Replayer replayer,
            java.util.function.LongSupplier ticker,
            KvEventsListener l) {
        this.sink = sink;
        this.s = s;
        this.replayer = replayer;
        this.ticker = ticker;
        this.listener = l;
        this.clock = sink.clock();
    }

    /** Sets the replayer before {@link #start} (a transport whose replay socket is made on the feed's thread). */
    void replayVia(Replayer r) {
        this.replayer = r;
    }

    /**
     * The stream this feed follows.
     *
     * @return the stream, as registered with the index
     */
    public KvStream stream() {
        return s.config;
    }

    /** The stream is connected: asks for its history (a replay from 0), if it has a replay endpoint. */
    public void start() {
        if (replayer != null) {
            startReplay(0, "connect");
        }
        flush();
    }

    /**
     * The live socket's connection to the engine is up: its first connect, or a reconnect. A subscription takes
     * effect some time after its connect, and what the engine published before that reached no one; the next
     * live batch would show the gap, but an engine with nothing more to say sends none. So the batches from the
     * one expected are asked for now (a replay, reason {@code subscribed}; from 0 while nothing is known of the
     * sequence), or once the replay running ends, as its answer may predate the subscription. Nothing without
     * a replay endpoint.
     */
    public void subscribed() {
        if (replayer == null) {
            return;
        }
        if (s.phase == StreamState.Phase.REPLAYING) {
            catchUpAfterReplay = true;
        } else {
            catchUp();
        }
        flush();
    }

    private void catchUp() {
        catchUpAfterReplay = false;
        long next = s.nextSeq;
        if (next < 0) {
            startReplay(0, "connect");
        } else {
            startReplay(next, "subscribed");
        }
    }

    /**
     * A live batch from the engine's PUB socket, applied in sequence order (held while a replay runs; a gap or
     * a restart starts one). A payload that cannot be decoded is counted and dropped.
     *
     * @param seq     its sequence number (unsigned 64-bit on the wire, read as a long)
     * @param payload its msgpack {@code EventBatch}; kept (not copied) while held, so not reused by the caller
     */
    public void live(long seq, byte[] payload) {
        s.noteEvent(ticker.getAsLong());
        onLive(seq, payload, false);
        flush();
    }

    private void onLive(long seq, byte[] payload, boolean fromBuffer) {
        if (s.phase == StreamState.Phase.REPLAYING) {
            hold(seq, payload, fromBuffer);
            return;
        }
        long next = s.nextSeq;
        if (next < 0) {
            if (seq != 0) {
                s.incomplete = true; // what the engine published before is unknown
            }
            accept(seq, payload, true);
        } else if (seq == next) {
            accept(seq, payload, true);
        } else if (seq > next) {
            s.gaps++;
            listener.onGap(id(), rank(), next, seq);
            if (replayer != null) {
                startReplay(next, "gap");
                hold(seq, payload, fromBuffer);
            } else {
                lost("gap without replay");
                accept(seq, payload, true);
            }
        } else if (!fromBuffer || seq < replayFrom) {
            // the engine counts from 0 again: it restarted, and its cache with it (a held batch below where the
            // replay began cannot be one the replay covered: live batches held came after the one that asked)
            s.resets++;
            sink.reset(s);
            s.incomplete = false;
            s.nextSeq = -1;
            listener.onReset(id(), rank(), "restart");
            sink.engineReset(s);
            if (replayer != null) {
                startReplay(0, "restart");
                hold(seq, payload, fromBuffer);
            } else {
                onLive(seq, payload, false);
            }
        }
        // else: a held batch the replay already covered is skipped
    }

    /**
     * A replayed batch (an answer to a {@link Replayer#request}); ignored when no replay is running (a late
     * answer to one given up) or when it repeats one already applied.
     *
     * @param seq     its sequence number
     * @param payload its msgpack {@code EventBatch}
     */
    public void replayed(long seq, byte[] payload) {
        if (s.phase != StreamState.Phase.REPLAYING) {
            return; // a late answer to a replay given up
        }
        long now = ticker.getAsLong();
        s.noteEvent(now);
        replayDeadline = now + sink.replayTimeoutNanos();
        if (seq != replayExpect) {
            if (seq < replayExpect) {
                return; // a repeat
            }
            // the engine no longer holds [replayExpect, seq)
            if (replayForGap || replayForCatchUp) {
                lost("replay began at " + seq + ", not " + replayExpect);
            } else {
                s.incomplete = true; // a late subscriber (or a long-lived engine): earlier history is unknown
            }
        }
        accept(seq, payload, false);
        replayExpect = seq + 1;
        replayCount++;
        flush();
    }

    /**
     * The replay's end marker (sequence -1 with an empty payload): the held live batches are applied after
     * what the replay covered. Ignored when no replay is running.
     */
    public void replayEnded() {
        if (s.phase != StreamState.Phase.REPLAYING) {
            return;
        }
        listener.onReplayEnded(id(), rank(), replayCount, true);
        endReplay(false);
        flush();
    }

    /** Checks the replay's time limit; the transport calls it now and then (every poll). */
    public void tick() {
        if (s.phase == StreamState.Phase.REPLAYING && ticker.getAsLong() - replayDeadline > 0) {
            s.replayFailures++;
            listener.onReplayEnded(id(), rank(), replayCount, false);
            if (replayForGap) {
                lost("replay timed out");
            } else if (!replayForCatchUp) {
                s.incomplete = true;
            }
            endReplay(!replayForCatchUp);
        }
        flush();
    }

    /** A frame that is not {@code [topic, 8-byte seq, payload]} (or a replay frame out of shape) was dropped. */
    public void malformedFrame() {
        s.malformed++;
        listener.onMalformed(id(), rank(), "frame", 1);
    }

    /**
     * Back to live: the held batches are applied after what the replay covered. After a replay that timed
     * out ({@code sequenceLost}; not a catch-up's, which started from a known one), nothing is known of the
     * sequence: the first held batch starts it again (there is no point asking the silent replay socket for the
     * gap before it). Then the catch-up a subscription asked for during the replay, if any.
     */
    private void endReplay(boolean sequenceLost) {
        s.phase = StreamState.Phase.LIVE;
        if (sequenceLost && replayCount == 0) {
            s.nextSeq = -1;
        } else if (s.nextSeq < replayExpect) {
            s.nextSeq = replayExpect;
        }
        draining = true;
        try {
            while (!held.isEmpty() && s.phase != StreamState.Phase.REPLAYING) {
                Held h = held.pollFirst();
                onLive(h.seq, h.payload, true);
            }
        } finally {
            draining = false;
        }
        if (catchUpAfterReplay && s.phase != StreamState.Phase.REPLAYING) {
            catchUp();
        }
    }

    private void hold(long seq, byte[] payload, boolean fromBuffer) {
        if (held.size() >= BUFFER_LIMIT) {
            held.pollFirst(); // the gap this leaves is seen, and replayed, after the replay
        }
        if (fromBuffer || draining) {
            held.addFirst(new Held(seq, payload));
        } else {
            held.addLast(new Held(seq, payload));
        }
    }

    private void startReplay(long from, String reason) {
        s.phase = StreamState.Phase.REPLAYING;
        replayForGap = reason.equals("gap");
        replayForCatchUp = reason.equals("subscribed");
        replayFrom = from;
        replayExpect = from;
        replayCount = 0;
        replayDeadline = ticker.getAsLong() + sink.replayTimeoutNanos();
        s.replays++;
        listener.onReplayRequested(id(), rank(), from, reason);
        pendingReplay = from;
    }

    private void flush() {
        long from = pendingReplay;
        Replayer r = replayer;
        if (from >= 0 && r != null) { // a replay is only ever started with a replayer
            pendingReplay = -1;
            r.request(from);
        }
    }

    /** Events were lost for good: drop the stream's blocks, mark it incomplete, hold it approximate. */
    private void lost(String why) {
        s.resets++;
        sink.reset(s);
        s.incomplete = true;
        long hold = sink.gapHoldNanos();
        if (hold > 0) {
            long until = ticker.getAsLong() + hold;
            s.heldUntil = until == 0 ? 1 : until;
        }
        listener.onReset(id(), rank(), "lost events (" + why + ")");
    }

    /** Decodes and applies one batch in sequence. */
    private void accept(long seq, byte[] payload, boolean live) {
        if (s.phase != StreamState.Phase.REPLAYING) {
            s.phase = StreamState.Phase.LIVE;
        }
        s.nextSeq = live ? seq + 1 : Math.max(s.nextSeq, seq + 1);
        tally.skippedFields = 0;
        tally.unknownTags = 0;
        tally.badEvents = 0;
        BatchDecoder.Batch b;
        try {
            b = BatchDecoder.decode(payload, tally);
        } catch (BatchDecoder.MalformedBatchException | RuntimeException e) {
            s.malformed++;
            s.incomplete = true; // its events are lost
            listener.onMalformed(id(), rank(), "batch", 1);
            return;
        }
        if (tally.skippedFields + tally.unknownTags > 0) {
            s.skippedFields += tally.skippedFields;
            s.unknownTags += tally.unknownTags;
            listener.onSkipped(id(), rank(), tally.skippedFields, tally.unknownTags);
        }
        if (tally.badEvents > 0) {
            s.malformed += tally.badEvents;
            s.incomplete = true;
            listener.onMalformed(id(), rank(), "event", tally.badEvents);
        }
        BlockWriter.Applied a = sink.apply(s, b.events());
        s.batches++;
        s.storedBlocks += a.stored;
        s.removedBlocks += a.removed;
        long lag = -1;
        if (live) {
            java.time.Instant now = clock.instant();
            lag = now.getEpochSecond() * 1_000_000_000L + now.getNano() - (long) (b.ts() * 1e9);
            sink.recordLag(lag);
        }
        if (a.cleared) {
            s.resets++;
            s.incomplete = false; // everything before the clear is gone: the history is whole again
            listener.onReset(id(), rank(), "cleared");
            sink.engineReset(s);
        }
        if (a.capEvicted > 0) {
            s.capEvicted += a.capEvicted;
            listener.onCapEvicted(id(), rank(), a.capEvicted);
        }
        if (a.orphans > 0) {
            s.orphans += a.orphans;
            s.incomplete = true;
            listener.onOrphans(id(), rank(), a.orphans);
            long now = ticker.getAsLong();
            if (replayer != null
                    && s.phase != StreamState.Phase.REPLAYING
                    && (lastOrphanReplay == Long.MIN_VALUE || now - lastOrphanReplay > ORPHAN_REPLAY_INTERVAL_NANOS)) {
                lastOrphanReplay = now;
                startReplay(0, "orphans");
            }
        }
        listener.onBatchApplied(id(), rank(), a.stored, a.removed, lag);
    }

    private String id() {
        return s.config.replica();
    }

    private int rank() {
        return s.config.rank();
    }
}
