package dev.cart.proxy.observe;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The last {@link #SIZE} routed decisions (retries included; no-replica decisions are not routed and not
 * kept), for {@code GET /workers}: each replica's share of them and of the cache hits among them.
 *
 * <p>How: a ring of immutable entries and a sequence counter; a writer claims a slot with one atomic
 * increment and stores its entry with one atomic write, so recording never blocks. An entry being immutable,
 * a caller may keep a replica's two entries and record them again and again ({@link RequestMeters} does:
 * nothing is allocated per decision). A reader counts the slots it sees: under concurrent writes a snapshot
 * may mix entries a few decisions apart, which is fine for a share over a thousand.
 */
public final class DecisionWindow {

    /** Decisions kept. */
    public static final int SIZE = 1000;

    /** One decision: the replica's id and whether it was a cache hit. Immutable: one instance may fill many slots. */
    public record Entry(String replica, boolean hit) {}

    /** Counts over the window: decisions and cache hits in total and per replica id. */
    public record Snapshot(
            int decisions, int hits, Map<String, Integer> decisionsByReplica, Map<String, Integer> hitsByReplica) {

        public double decisionShare(String replica) {
            return decisions == 0 ? 0.0 : (double) decisionsByReplica.getOrDefault(replica, 0) / decisions;
        }

        public double hitShare(String replica) {
            return hits == 0 ? 0.0 : (double) hitsByReplica.getOrDefault(replica, 0) / hits;
        }
    }

    private final AtomicReferenceArray<Entry> ring = new AtomicReferenceArray<>(SIZE);
    private final AtomicLong next = new AtomicLong();

    public void record(Entry decision) {
        long seq = next.getAndIncrement();
        ring.set((int) (seq % SIZE), decision);
    }

    /** Forgets everything (a reload starts a new replica set and a cold tree). */
    public void clear() {
        for (int i = 0; i < SIZE; i++) {
            ring.set(i, null);
        }
    }

    public Snapshot snapshot() {
        int decisions = 0;
        int hits = 0;
        Map<String, Integer> byReplica = new HashMap<>();
        Map<String, Integer> hitsByReplica = new HashMap<>();
        for (int i = 0; i < SIZE; i++) {
            Entry e = ring.get(i);
            if (e == null) {
                continue;
            }
            decisions++;
            byReplica.merge(e.replica(), 1, Integer::sum);
            if (e.hit()) {
                hits++;
                hitsByReplica.merge(e.replica(), 1, Integer::sum);
            }
        }
        return new Snapshot(decisions, hits, byReplica, hitsByReplica);
    }
}
