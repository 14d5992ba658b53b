package dev.cart.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * The requests routed to each replica whose prefill is not over yet (no first token), kept so that usage
 * feedback can tell a prefix the replica lost from one it was still computing.
 *
 * <p>Why: a replica (vLLM, SGLang) serves a prefix from its cache only once the request computing it has
 * finished its prefill. The router learns a route when it sends the request, so a request B sent to the
 * same replica meanwhile is predicted a hit on the shared prefix, computes it again and reports it
 * uncached, although the replica lost nothing. Such a report is no evidence of eviction: acting on it
 * would drop the replica's claim on the very prefixes it is computing.
 *
 * <p>How: per replica (its {@link ReplicaLedger.Account}), an immutable array of entries replaced by
 * compare-and-set (copy on write). A request
 * adds its entry when it is admitted, before its route is recorded; the add copies the entries still in
 * prefill and appends the new one. Its prefill over (first token, or the lease's close), the entry is only
 * marked, and the replica's next add leaves it out. The array a request's add made, the requests in
 * prefill there when it was sent and itself, is what its decision keeps: one reference, no further copy.
 * So every request whose route a later request's match could have seen, and that had not reached its
 * first token when that later request was sent, is in the later request's array. The array is read only
 * where a report falls short of the prediction ({@link #explained}).
 *
 * <p>Concurrency: lock free. An add costs one array of the replica's requests in prefill
 * (bounded by its admission cap) and a compare-and-set; the end of a prefill one volatile write. Entries
 * hold keys, not decisions or arrays, so a kept array holds nothing else alive.
 */
final class InPrefill {

    /** No request in prefill. */
    static final Entry[] NONE = new Entry[0];

    private static final VarHandle DONE;

    static {
        try {
            DONE = MethodHandles.lookup().findVarHandle(Entry.class, "done", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private InPrefill() {}

    /** One request in prefill: its key and the prefix the tree predicted its replica held. */
    static final class Entry {
        final PromptKey key;
        final int matched;
        final AtomicReference<Entry[]> queue;
        volatile boolean done;

        Entry(PromptKey key, int matched, AtomicReference<Entry[]> queue) {
            this.key = key;
            this.matched = matched;
            this.queue = queue;
        }
    }

    /**
     * A replica's queue as it is now. Never null: a queue starts as {@link #NONE} and is only ever set to an
     * array.
     */
    @SuppressWarnings("NullAway") // AtomicReference.get() is modelled as nullable; these are never set to null
    static Entry[] current(AtomicReference<Entry[]> queue) {
        return queue.get();
    }

    /**
     * Adds {@code e} to its replica's queue, leaving out the entries whose prefill is over.
     *
     * @return the queue with {@code e} last: the requests in prefill on that replica when {@code e} joined
     *     (never modified)
     */
    static Entry[] add(Entry e) {
        AtomicReference<Entry[]> q = e.queue;
        while (true) {
            Entry[] cur = current(q);
            // the done flags read once (a mask for up to 64 entries): an entry marked done meanwhile is either
            // copied or not, never left as a hole in an array sized by an earlier count
            Entry[] next;
            if (cur.length <= 64) {
                long live = 0;
                for (int i = 0; i < cur.length; i++) {
                    if (!cur[i].done) {
                        live |= 1L << i;
                    }
                }
                next = new Entry[Long.bitCount(live) + 1];
                // the live entries in runs, one array copy each (prefills end in about the order they began,
                // so the live ones are mostly one run: the newest)
                int n = 0;
                while (live != 0) {
                    int from = Long.numberOfTrailingZeros(live);
                    int length = Long.numberOfTrailingZeros(~(live >>> from));
                    System.arraycopy(cur, from, next, n, length);
                    n += length;
                    live &= length + from >= 64 ? 0 : -1L << (from + length);
                }
                next[n] = e;
            } else {
                next = new Entry[cur.length + 1];
                int n = 0;
                for (Entry x : cur) {
                    if (!x.done) {
                        next[n++] = x;
                    }
                }
                next[n++] = e;
                if (n < next.length) {
                    next = Arrays.copyOf(next, n);
                }
            }
            if (q.compareAndSet(cur, next)) {
                return next;
            }
        }
    }

    /**
     * Marks {@code e}'s prefill over: the replica's next add leaves it out. A release store, not a full
     * fence: an add that does not see it yet keeps the entry one add longer, which only errs towards
     * inconclusive.
     */
    static void done(Entry e) {
        DONE.setRelease(e, true);
    }

    /**
     * How much of {@code key} its replica could not have held when it was sent, as a prefix length: from
     * {@code delivered} (what the replica did serve from its cache) on, the longest stretch that requests
     * still in prefill then were computing. A request ahead counts when it shares the key beyond what is
     * explained so far and was itself predicted no more than that (give or take {@code slack}): it was
     * computing the next part, so that part was not there to serve. Requests predicted more than what is
     * explained were relying on the same prefix and explain nothing. Repeated to a fixed point, so a chain
     * (one request computing the shared instructions, the next one its document after them) counts.
     *
     * @param ahead     the snapshot kept at routing (its own entry included); null when not tracked
     * @param self      the request's own entry, skipped
     * @param matched   the prefix predicted for {@code key}: nothing beyond it needs explaining
     * @return a length in units, at least {@code delivered} and at most {@code max(delivered, matched)}
     */
    static int explained(
            Entry @Nullable [] ahead, @Nullable Entry self, PromptKey key, int delivered, int matched, int slack) {
        int explained = delivered;
        if (ahead == null || ahead.length <= 1) {
            return explained;
        }
        long[] blocks = key.blocks();
        int blockSize = key.blockSize();
        int capBlocks = Math.min(blocks.length, matched / blockSize);
        boolean grew = true;
        while (grew && explained < matched) {
            grew = false;
            for (Entry a : ahead) {
                if (a == self
                        || a.matched > explained + slack
                        || a.key.blockSize() != blockSize
                        || a.key.unit() != key.unit()) {
                    continue;
                }
                long[] other = a.key.blocks();
                int n = Math.min(capBlocks, other.length);
                int common = 0;
                while (common < n && other[common] == blocks[common]) {
                    common++;
                }
                int shared = common * blockSize;
                if (shared > explained) {
                    explained = Math.min(shared, matched);
                    grew = true;
                }
            }
        }
        return explained;
    }

    /** True when every entry's prefill is over. */
    static boolean allDone(Entry[] entries) {
        for (Entry e : entries) {
            if (!e.done) {
                return false;
            }
        }
        return true;
    }
}
