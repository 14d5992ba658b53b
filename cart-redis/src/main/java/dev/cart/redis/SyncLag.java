package dev.cart.redis;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * How long route events took from the instance that published them to this one: for each event applied
 * while tailing, the time it was applied here minus the time its router published it (the origin's
 * clock; on one host, or hosts with synchronized clocks, that is the whole path: the buffer, the batch
 * wait, the {@code XADD}, the {@code XREAD} and the apply). Counted in fixed millisecond buckets, so a
 * snapshot is cheap and percentiles are the bucket's upper bound (a figure never better than measured).
 * Events replayed at start are not counted (their age is the window's). Thread-safe; recorded by the
 * tailer thread only.
 */
public final class SyncLag {

    /** Upper bounds (inclusive, milliseconds) of the buckets; a last bucket holds everything above. */
    static final long[] BOUNDS = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000};

    private final AtomicLongArray counts = new AtomicLongArray(BOUNDS.length + 1);
    private final LongAdder sum = new LongAdder();

    void record(long millis) {
        long m = Math.max(0, millis);
        int i = Arrays.binarySearch(BOUNDS, m);
        counts.incrementAndGet(i >= 0 ? i : -i - 1);
        sum.add(m);
    }

    /** The counts now. */
    public Snapshot snapshot() {
        long[] c = new long[counts.length()];
        for (int i = 0; i < c.length; i++) {
            c[i] = counts.get(i);
        }
        return new Snapshot(BOUNDS.clone(), c, sum.sum());
    }

    /**
     * Counts per bucket.
     *
     * @param upperBoundsMillis the buckets' inclusive upper bounds; {@code counts} has one more entry
     *                          (above the last bound)
     * @param counts            events per bucket
     * @param sumMillis         the sum of all lags
     */
    public record Snapshot(long[] upperBoundsMillis, long[] counts, long sumMillis) {

        /** Events counted. */
        public long count() {
            long n = 0;
            for (long c : counts) {
                n += c;
            }
            return n;
        }

        /**
         * The upper bound of the bucket holding the {@code q} quantile (0 &lt; q &le; 1), in milliseconds;
         * -1 with nothing counted, {@link Long#MAX_VALUE} when it lies above the last bound.
         */
        public long quantileMillis(double q) {
            long n = count();
            if (n == 0) {
                return -1;
            }
            long rank = (long) Math.ceil(q * n);
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= rank) {
                    return i < upperBoundsMillis.length ? upperBoundsMillis[i] : Long.MAX_VALUE;
                }
            }
            return Long.MAX_VALUE;
        }
    }
}
