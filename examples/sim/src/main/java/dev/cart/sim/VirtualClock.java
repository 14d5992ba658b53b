package dev.cart.sim;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * The simulation's clock: time stands still until the event loop moves it. Starts at a fixed instant so
 * runs are reproducible. Only the event loop's thread moves it; readers on that thread see every move.
 */
final class VirtualClock extends Clock {

    /** 2025-01-01T00:00:00Z: an arbitrary, fixed origin. */
    static final long ORIGIN_MILLIS = 1_735_689_600_000L;

    private long nanos;

    /** Nanoseconds since the start of the run. */
    long nanos() {
        return nanos;
    }

    void set(long nanos) {
        if (nanos < this.nanos) {
            throw new IllegalStateException("time cannot go back: " + nanos + " < " + this.nanos);
        }
        this.nanos = nanos;
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("the virtual clock is UTC only");
    }

    @Override
    public long millis() {
        return ORIGIN_MILLIS + nanos / 1_000_000L;
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(ORIGIN_MILLIS).plusNanos(nanos);
    }
}
