package dev.cart.kvevents;

import dev.cart.core.RouteDecision;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * The approximate mode's knowledge kept as a short-lived overlay on the confirmed index: the blocks a request
 * just routed to a replica will create there, which its engine reports only once computed. A record lives
 * from the decision until the request's lease ends plus a time tied to the event lag (set by
 * {@link #ended}); a record whose lease end is never heard dies after {@link #MAX_LIFE_NANOS}, and at most
 * {@link #MAX_RECORDS} live at once (the oldest go first).
 *
 * <p>Design: a lookup compares its block keys with each live record's by their common prefix (one
 * vectorised mismatch, after a first-key test): the overlay holds about as many records as there are
 * requests in flight, so a list beats an index here. Thread-safe: concurrent queue and map; a record's expiry
 * is volatile.
 */
final class Overlay {

    static final long MAX_LIFE_NANOS = TimeUnit.MINUTES.toNanos(10);
    static final int MAX_RECORDS = 100_000;

    private static final class Routed {
        final RouteDecision decision;
        final int ord;
        final long[] keys;
        final long born;
        volatile long expiresAt = Long.MAX_VALUE;

        Routed(RouteDecision decision, int ord, long[] keys, long born) {
            this.decision = decision;
            this.ord = ord;
            this.keys = keys;
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

    Overlay(LongSupplier ticker) {
        this.ticker = ticker;
    }

    void add(RouteDecision decision, int ord, long[] keys) {
        Routed r = new Routed(decision, ord, keys, ticker.getAsLong());
        records.add(r);
        open.put(decision, r);
        if (size.incrementAndGet() > MAX_RECORDS) {
            Routed old = records.poll();
            if (old != null) {
                size.decrementAndGet();
                open.remove(old.decision, old);
            }
        }
    }

    /** The request of {@code decision} ended: its record expires at {@code at}. */
    void ended(RouteDecision decision, long at) {
        Routed r = open.remove(decision);
        if (r != null) {
            r.expiresAt = at;
        }
    }

    /** Raises {@code blocks[ord]} to each live record's common prefix with {@code keys}; drops expired ones. */
    void extend(long[] keys, int[] blocks, long now) {
        if (size.get() == 0 || keys.length == 0) {
            return;
        }
        for (Iterator<Routed> it = records.iterator(); it.hasNext(); ) {
            Routed r = it.next();
            if (r.expired(now)) {
                it.remove();
                size.decrementAndGet();
                open.remove(r.decision, r);
                continue;
            }
            if (r.keys[0] != keys[0] || r.ord >= blocks.length) {
                continue;
            }
            int m = Arrays.mismatch(keys, 0, keys.length, r.keys, 0, r.keys.length);
            int common = m < 0 ? keys.length : m;
            if (common > blocks[r.ord]) {
                blocks[r.ord] = common;
            }
        }
    }

    int size() {
        return size.get();
    }
}
