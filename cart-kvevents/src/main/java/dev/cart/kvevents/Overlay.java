package dev.cart.kvevents;

import dev.cart.core.RouteDecision;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The approximate mode's knowledge kept as a short-lived overlay on the confirmed index: the blocks a request
 * just routed to a replica will create there, which its engine reports only once computed. A record lives
 * from the decision until the request's lease ends plus a time tied to the event lag (set by
 * {@link #ended}); a record whose lease end is never heard dies after {@link #MAX_LIFE_NANOS}; at most
 * {@link #MAX_RECORDS} records and {@link #MAX_TOKENS} tokens live at once (the oldest go first). A
 * replica whose engine emptied its cache (a restart, {@code AllBlocksCleared}) loses its records
 * ({@link #dropReplica}).
 *
 * <p>Design: a record keeps the request's engine tokens (the lookup's array, not a copy), its chain's seed and
 * its first block's key. A lookup compares its tokens with those of each live record of the same seed and first
 * key by their common prefix (one vectorised mismatch), in whole blocks: the same tokens on the same seed are
 * the same chain of keys, so the request's later blocks need not be hashed for it. The overlay holds about as
 * many records as there are requests in flight, so a list beats an index here. Thread-safe: concurrent queue
 * and map; a record's expiry is volatile.
 */
final class Overlay {

    static final long MAX_LIFE_NANOS = TimeUnit.MINUTES.toNanos(10);
    static final int MAX_RECORDS = 100_000;
    /** Tokens all records may keep together (4 bytes each). */
    static final long MAX_TOKENS = 1L << 24;

    private static final class Routed {
        final RouteDecision decision;
        final int ord;
        final int[] tokens;
        final int blocks;
        final long root;
        final long first;
        final long born;
        volatile long expiresAt = Long.MAX_VALUE;
        /** Set once by whoever takes the record out, so its counts are given back once. */
        final java.util.concurrent.atomic.AtomicBoolean gone = new java.util.concurrent.atomic.AtomicBoolean();

        Routed(RouteDecision decision, int ord, PreciseMatch m, long born) {
            this.decision = decision;
            this.ord = ord;
            this.tokens = m.tokens();
            this.blocks = m.blocks();
            this.root = m.root();
            this.first = m.firstKey();
            this.born = born;
        }

        boolean expired(long now) {
            long e = expiresAt;
            return (e != Long.MAX_VALUE && now - e > 0) || now - born > MAX_LIFE_NANOS;
        }
    }

    private final LongSupplier ticker;
    private final ConcurrentLinkedQueue<Routed> records = new ConcurrentLinkedQueue<>();
    private final Map<RouteDecision, Routed> open = new ConcurrentHashMap<>();
    private final AtomicInteger size = new AtomicInteger();
    private final AtomicLong tokens = new AtomicLong();

    Overlay(LongSupplier ticker) {
        this.ticker = ticker;
    }

    /** {@code decision} routed the request of {@code match} (at least one block) to the replica {@code ord}. */
    void add(RouteDecision decision, int ord, PreciseMatch match) {
        Routed r = new Routed(decision, ord, match, ticker.getAsLong());
        records.add(r);
        open.put(decision, r);
        size.incrementAndGet();
        tokens.addAndGet(r.tokens.length);
        while (size.get() > MAX_RECORDS || tokens.get() > MAX_TOKENS) {
            Routed old = records.poll();
            if (old == null) {
                break;
            }
            release(old);
        }
    }

    /** Gives back {@code r}'s counts and forgets its decision, once (it has left the queue or is leaving it). */
    private void release(Routed r) {
        if (r.gone.compareAndSet(false, true)) {
            size.decrementAndGet();
            tokens.addAndGet(-r.tokens.length);
            open.remove(r.decision, r);
        }
    }

    /** The request of {@code decision} ended: its record expires at {@code at}. */
    void ended(RouteDecision decision, long at) {
        Routed r = open.remove(decision);
        if (r != null) {
            r.expiresAt = at;
        }
    }

    /** Drops every record of the replica {@code ord}: its engine no longer holds what they stand for. */
    void dropReplica(int ord) {
        for (Iterator<Routed> it = records.iterator(); it.hasNext(); ) {
            Routed r = it.next();
            if (r.ord == ord) {
                it.remove();
                release(r);
            }
        }
    }

    /**
     * Raises {@code held[ord]} to each live record's common prefix, in whole blocks, with the {@code blocks}
     * whole blocks of {@code tokens} on the chain {@code root} (whose first block's key is {@code first});
     * drops expired records.
     */
    void extend(int[] tokens, int blocks, int blockSize, long root, long first, int[] held, long now) {
        if (size.get() == 0) {
            return;
        }
        for (Iterator<Routed> it = records.iterator(); it.hasNext(); ) {
            Routed r = it.next();
            if (r.expired(now)) {
                it.remove();
                release(r);
                continue;
            }
            if (r.first != first || r.root != root || r.ord >= held.length) {
                continue;
            }
            int n = Math.min(blocks, r.blocks);
            if (n <= held[r.ord]) {
                continue;
            }
            int m = Arrays.mismatch(tokens, 0, n * blockSize, r.tokens, 0, n * blockSize);
            int common = m < 0 ? n : m / blockSize;
            if (common > held[r.ord]) {
                held[r.ord] = common;
            }
        }
    }

    int size() {
        return size.get();
    }
}
