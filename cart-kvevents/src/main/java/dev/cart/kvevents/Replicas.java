package dev.cart.kvevents;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * The streams a {@link KvIndex} follows and the replicas they belong to: registration, each replica's mode
 * and its status.
 *
 * <p>Design: a stream takes one of {@link KvIndex#MAX_STREAMS} slots; the slot is its bit in the key table's
 * masks. The replicas by id and the {@link Snapshot} a lookup reads (replicas by ordinal, each slot's replica,
 * every stream's bit) are copied on registration and published whole through volatile fields, so a lookup
 * reads a consistent registration without a lock. A replica's mode is computed when asked: approximate after
 * {@code tokenizeFailureLimit} tokenization failures in a row, else the worst of its streams' modes; a change
 * from the mode last computed is reported to the listener then (a silence is noticed by the next reader).
 *
 * <p>Concurrency: registration takes the index's write lock (shared with {@link BlockWriter}; the slots are
 * read under it for the memory figure); everything else runs on any thread without a lock.
 */
final class Replicas {

    /** What a lookup reads of the registration, published as one (copy on write). */
    static final class Snapshot {
        final ReplicaEntry[] ordered;
        /** The ordinal of each slot's replica. */
        final int[] slotOrd;
        /** The bits of every registered stream. */
        final long bits;

        Snapshot(ReplicaEntry[] ordered, int[] slotOrd, long bits) {
            this.ordered = ordered;
            this.slotOrd = slotOrd;
            this.bits = bits;
        }
    }

    private final ReentrantLock lock;
    private final long silenceNanos;
    private final int tokenizeFailureLimit;
    private final KvEventsListener listener;

    private final @Nullable StreamState[] slots = new StreamState[KvIndex.MAX_STREAMS];
    /** Replicas by id, replaced whole on registration (copy on write). */
    private volatile Map<String, ReplicaEntry> byId = Map.of();
    /** Replicas by ordinal, each stream's replica, every stream's bit: replaced whole on registration. */
    volatile Snapshot snapshot = new Snapshot(new ReplicaEntry[0], new int[KvIndex.MAX_STREAMS], 0);

    Replicas(ReentrantLock lock, long silenceNanos, int tokenizeFailureLimit, KvEventsListener listener) {
        this.lock = lock;
        this.silenceNanos = silenceNanos;
        this.tokenizeFailureLimit = tokenizeFailureLimit;
        this.listener = listener;
    }

    /** The replica of that id, or null if no stream of it is followed. */
    @Nullable
    ReplicaEntry entry(String replica) {
        return byId.get(replica);
    }

    /**
     * Follows {@code stream}: gives it a free slot and adds it to its replica (registered on its first stream).
     *
     * @throws IllegalStateException when every slot is taken, or this replica's rank is followed already
     */
    StreamState register(KvStream stream) {
        lock.lock();
        try {
            int slot = -1;
            for (int i = 0; i < KvIndex.MAX_STREAMS; i++) {
                if (slots[i] == null) {
                    slot = i;
                    break;
                }
                if (slots[i].config.replica().equals(stream.replica()) && slots[i].config.rank() == stream.rank()) {
                    throw new IllegalStateException(
                            "replica " + stream.replica() + " rank " + stream.rank() + " is followed already");
                }
            }
            if (slot < 0) {
                throw new IllegalStateException("an index follows at most " + KvIndex.MAX_STREAMS + " streams");
            }
            StreamState st = new StreamState(stream, slot);
            slots[slot] = st;
            Map<String, ReplicaEntry> m = new LinkedHashMap<>(byId);
            Snapshot reg = snapshot;
            ReplicaEntry[] ordered = reg.ordered;
            ReplicaEntry r = m.get(stream.replica());
            if (r == null) {
                r = new ReplicaEntry(stream.replica(), m.size());
                m.put(stream.replica(), r);
                ordered = Arrays.copyOf(ordered, ordered.length + 1);
                ordered[r.ord] = r;
            }
            StreamState[] ss = Arrays.copyOf(r.streams, r.streams.length + 1);
            ss[ss.length - 1] = st;
            r.streams = ss;
            r.streamBits |= st.bit;
            int[] slotOrd = reg.slotOrd.clone();
            slotOrd[slot] = r.ord;
            byId = Map.copyOf(new HashMap<>(m));
            snapshot = new Snapshot(ordered, slotOrd, reg.bits | st.bit);
            return st;
        } finally {
            lock.unlock();
        }
    }

    /** The bytes of every stream's engine map. The caller holds the write lock. */
    long mapBytes() {
        long b = 0;
        for (StreamState s : slots) {
            if (s != null) {
                b += s.map.bytes();
            }
        }
        return b;
    }

    /** The replica's mode at {@code now}; its reason in {@code why[0]} when given. */
    ReplicaMode mode(ReplicaEntry r, long now, String @Nullable [] why) {
        if (r.tokenizeFailures >= tokenizeFailureLimit) {
            if (why != null) {
                why[0] = "tokenization failing";
            }
            return ReplicaMode.APPROXIMATE;
        }
        StreamState[] ss = r.streams;
        ReplicaMode worst = ReplicaMode.APPROXIMATE;
        String reason = "no stream";
        String @Nullable [] w = why == null ? null : new String[1];
        for (int i = 0; i < ss.length; i++) {
            ReplicaMode m = ss[i].mode(now, silenceNanos, w);
            if (i == 0 || m.ordinal() > worst.ordinal()) {
                worst = m;
                reason = w == null ? "" : w[0];
            }
        }
        if (why != null) {
            why[0] = reason;
        }
        ReplicaMode last = r.lastMode;
        if (last != worst) {
            r.lastMode = worst;
            if (last != null) {
                listener.onModeChanged(r.id, last, worst, reason);
            }
        }
        return worst;
    }

    /** Every replica's status at {@code now}, in registration order. */
    List<ReplicaStatus> status(long now) {
        List<ReplicaStatus> out = new ArrayList<>();
        for (ReplicaEntry r : snapshot.ordered) {
            out.add(status(r, now));
        }
        return out;
    }

    ReplicaStatus status(ReplicaEntry r, long now) {
        String[] why = new String[1];
        ReplicaMode m = mode(r, now, why);
        List<StreamStatus> ss = new ArrayList<>();
        for (StreamState st : r.streams) {
            ss.add(st.status(now, silenceNanos));
        }
        return new ReplicaStatus(r.id, m, why[0], ss);
    }
}
