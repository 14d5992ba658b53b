package dev.cart.kvevents;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Publish-to-applied lag, in log-spaced buckets (four per power of two from 1 µs to about 68 s): cheap to
 * record from any thread, read as quantiles for the overlay's lifetime and for reports. Thread-safe.
 */
final class LagHistogram {

    private static final int SUB = 4;
    private static final int BUCKETS = 27 * SUB;
    private final AtomicLongArray counts = new AtomicLongArray(BUCKETS);

    void record(long nanos) {
        counts.incrementAndGet(bucket(nanos));
    }

    static int bucket(long nanos) {
        long micros = Math.max(1, nanos / 1000);
        int log = 63 - Long.numberOfLeadingZeros(micros);
        int frac = log >= 2 ? (int) ((micros >>> (log - 2)) & 3) : (int) ((micros << (2 - log)) & 3);
        return Math.min(BUCKETS - 1, log * SUB + frac);
    }

    /** The upper edge of bucket {@code b} in nanoseconds. */
    static long upper(int b) {
        int log = b / SUB;
        int frac = b % SUB;
        double micros = Math.pow(2, log) * (1 + (frac + 1) / (double) SUB);
        return (long) (micros * 1000);
    }

    /** The {@code q} quantile (0 to 1) in nanoseconds (an upper bound of its bucket); 0 with no samples. */
    long quantile(double q) {
        long total = 0;
        long[] c = new long[BUCKETS];
        for (int i = 0; i < BUCKETS; i++) {
            c[i] = counts.get(i);
            total += c[i];
        }
        if (total == 0) {
            return 0;
        }
        long rank = (long) Math.ceil(q * total);
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += c[i];
            if (seen >= rank) {
                return upper(i);
            }
        }
        return upper(BUCKETS - 1);
    }

    long count() {
        long total = 0;
        for (int i = 0; i < BUCKETS; i++) {
            total += counts.get(i);
        }
        return total;
    }
}
