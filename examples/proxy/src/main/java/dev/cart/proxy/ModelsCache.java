package dev.cart.proxy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * The 10-minute cache of {@code GET /v1/models}. Holds the last 200 answer (body and content type);
 * answers from it until it is older than the TTL. Cleared when a reload changes the workers.
 * Thread-safe: one volatile reference to an immutable entry; concurrent misses simply both fetch.
 */
final class ModelsCache {

    static final Duration TTL = Duration.ofMinutes(10);

    record Entry(byte[] body, String contentType, Instant fetched) {
    }

    private final Clock clock;
    private volatile Entry entry;

    ModelsCache(Clock clock) {
        this.clock = clock;
    }

    /** The cached answer if it is still fresh, else null. */
    Entry fresh() {
        Entry e = entry;
        if (e == null) {
            return null;
        }
        if (Duration.between(e.fetched(), clock.instant()).compareTo(TTL) >= 0) {
            return null;
        }
        return e;
    }

    void put(byte[] body, String contentType) {
        entry = new Entry(body, contentType, clock.instant());
    }

    void clear() {
        entry = null;
    }
}
