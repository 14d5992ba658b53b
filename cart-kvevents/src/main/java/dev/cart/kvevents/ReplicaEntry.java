package dev.cart.kvevents;

import org.jspecify.annotations.Nullable;

/**
 * One replica the index follows: its streams (one per data-parallel rank), its ordinal in lookups, its
 * tokenization record and the mode last computed for it ({@link Replicas#mode}).
 *
 * <p>Concurrency: {@link #streams} and {@link #streamBits} are replaced on registration (under the index's
 * write lock) and read by any thread; the tokenization count and the last mode are written by request
 * threads without a lock (a lost update delays a verdict or a mode-change report by one request).
 */
final class ReplicaEntry {
    final String id;
    final int ord;
    volatile StreamState[] streams = new StreamState[0];
    volatile long streamBits;
    volatile int tokenizeFailures;
    /** The mode last computed; null before the first. */
    volatile @Nullable ReplicaMode lastMode;

    ReplicaEntry(String id, int ord) {
        this.id = id;
        this.ord = ord;
    }
}
