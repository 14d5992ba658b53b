package dev.cart.kvevents;

import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The index as a stream's {@link KvFeed} sees it: where its decoded batches are applied and its resets done
 * ({@link BlockWriter}), where the publish-to-applied lag is recorded, the feed's timing settings, and the
 * notice that an engine emptied its cache.
 *
 * <p>An engine that empties its cache (a restart, {@code AllBlocksCleared}) takes the blocks that requests just
 * routed to its replica were to create there: the replica's {@link Overlay} records are dropped and the host's
 * handler ({@link KvIndex.Builder#onEngineReset}) hears the replica's id; a handler's failure is logged once
 * and does not stop the events.
 *
 * <p>Concurrency: called on the streams' threads, any number at once; the writer serialises the tables'
 * changes, the lag histogram and the overlay are thread-safe.
 */
final class FeedSink {

    private static final Logger LOG = LoggerFactory.getLogger(KvIndex.class);

    private final BlockWriter writer;
    private final Replicas replicas;
    private final Overlay overlay;
    private final LagHistogram lag;
    private final java.time.Clock clock;
    private final long gapHoldNanos;
    private final long replayTimeoutNanos;
    private final Consumer<String> engineResets;
    private volatile boolean engineResetFailureLogged;

    FeedSink(
            BlockWriter writer,
            Replicas replicas,
            Overlay overlay,
            LagHistogram lag,
            java.time.Clock clock,
            long gapHoldNanos,
            long replayTimeoutNanos,
            Consumer<String> engineResets) {
        this.writer = writer;
        this.replicas = replicas;
        this.overlay = overlay;
        this.lag = lag;
        this.clock = clock;
        this.gapHoldNanos = gapHoldNanos;
        this.replayTimeoutNanos = replayTimeoutNanos;
        this.engineResets = engineResets;
    }

    /** The wall clock the engines' batch timestamps are compared with for the lag. */
    java.time.Clock clock() {
        return clock;
    }

    void recordLag(long nanos) {
        lag.record(Math.max(0, nanos));
    }

    long gapHoldNanos() {
        return gapHoldNanos;
    }

    long replayTimeoutNanos() {
        return replayTimeoutNanos;
    }

    /** Applies one decoded batch's events to {@code s} ({@link BlockWriter#apply}). */
    BlockWriter.Applied apply(StreamState s, List<KvEvent> events) {
        return writer.apply(s, events);
    }

    /** Drops every block of {@code s}. */
    void reset(StreamState s) {
        writer.reset(s);
    }

    /**
     * {@code s}'s engine emptied its cache (it restarted, or said {@code AllBlocksCleared}): the replica's
     * overlay records are dropped, and the host hears it. Called on the stream's thread, after its blocks were
     * dropped.
     */
    void engineReset(StreamState s) {
        ReplicaEntry r = replicas.entry(s.config.replica());
        if (r == null) {
            return;
        }
        overlay.dropReplica(r.ord);
        try {
            engineResets.accept(r.id);
        } catch (RuntimeException e) {
            if (!engineResetFailureLogged) {
                engineResetFailureLogged = true;
                LOG.error("the engine-reset handler failed (logged once; events go on)", e);
            }
        }
    }
}
