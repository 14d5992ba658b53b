package dev.cart.redis;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * How long route events took from the instance that published them to this one: for each event applied
 * while tailing, the time it was applied here minus the time its router published it (the origin's
 * clock; on one host, or hosts with synchronized clocks, that is the whole path: the buffer, the batch
 * wait, the {@code XADD}, the {@code XREAD} and the apply). Counted in fixed millisecond buckets, so a
 * snapshot is cheap and percentiles are the bucket's upper bound (a figure never better than measured).
 * Events replayed at start are not counted (their age is the window's).
 *
 * <h2>A recent window, and the totals</h2>
 * {@link #snapshot()} counts the last minute only (more exactly: the current 10-second slot and the five
 * before it, so 50 to 60 seconds), so its percentiles say how the sync does now, not averaged over the
 * instance's life: a Redis outage an hour ago no longer shows in today's p99. {@link #total()} counts
 * every event since the start (for counters that only grow). The window is a ring of slots, each holding
 * the counts of one slot-long stretch of the clock; a slot is cleared when the clock enters it again.
 *
 * <p>Concurrency: {@link #record} is called by one thread (the tailer; it is synchronized all the same);
 * snapshots may be taken from any thread without locking, and a snapshot taken while a slot is being
 * cleared may miss part of that slot (a gauge's reading, never a lost count in the totals).
 */
public final class SyncLag {

    /** Upper bounds (inclusive, milliseconds) of the buckets; a last bucket holds everything above. */
    static final long[] BOUNDS = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000};

    /** The window's default slot length and slot count: the last 50 to 60 seconds. */
    static final long SLOT_MILLIS = 10_000;

    static final int SLOTS = 6;

    private static final int WIDTH = BOUNDS.length + 1;

    private final LongSupplier clockMillis;
    private final long slotMillis;
    private final int slots;
    /** Per slot: the clock's slot number whose counts it holds, or -1 while empty or being cleared. */
    private final AtomicLongArray slotOf;
    /** Per slot, {@link #WIDTH} bucket counts. */
    private final AtomicLongArray counts;

    private final AtomicLongArray sums;
    private final AtomicLongArray totalCounts = new AtomicLongArray(WIDTH);
    private final AtomicLongArray totalSum = new AtomicLongArray(1);

    /** The last minute on the system clock. */
    public SyncLag() {
        this(System::currentTimeMillis, SLOT_MILLIS, SLOTS);
    }

    /** A window of {@code slots} slots of {@code slotMillis} each, on {@code clockMillis}. */
    SyncLag(LongSupplier clockMillis, long slotMillis, int slots) {
        if (slotMillis < 1 || slots < 1) {
            throw new IllegalArgumentException("slots and their length must be positive");
        }
        this.clockMillis = clockMillis;
        this.slotMillis = slotMillis;
        this.slots = slots;
        this.slotOf = new AtomicLongArray(slots);
        for (int s = 0; s < slots; s++) {
            slotOf.set(s, -1);
        }
        this.counts = new AtomicLongArray(slots * WIDTH);
        this.sums = new AtomicLongArray(slots);
    }

    synchronized void record(long millis) {
        long m = Math.max(0, millis);
        int i = Arrays.binarySearch(BOUNDS, m);
        int bucket = i >= 0 ? i : -i - 1;
        long now = Math.floorDiv(clockMillis.getAsLong(), slotMillis);
        int s = (int) Math.floorMod(now, (long) slots);
        if (slotOf.get(s) != now) {
            slotOf.set(s, -1); // readers skip it while it is cleared
            for (int b = 0; b < WIDTH; b++) {
                counts.set(s * WIDTH + b, 0);
            }
            sums.set(s, 0);
            slotOf.set(s, now);
        }
        counts.incrementAndGet(s * WIDTH + bucket);
        sums.addAndGet(s, m);
        totalCounts.incrementAndGet(bucket);
        totalSum.addAndGet(0, m);
    }

    /**
     * The counts of the recent window. Any thread.
     *
     * @return the lags of the last 50 to 60 seconds (by default)
     */
    public Snapshot snapshot() {
        long now = Math.floorDiv(clockMillis.getAsLong(), slotMillis);
        long[] c = new long[WIDTH];
        long sum = 0;
        for (int s = 0; s < slots; s++) {
            long of = slotOf.get(s);
            if (of < 0 || of > now || of <= now - slots) {
                continue;
            }
            for (int b = 0; b < WIDTH; b++) {
                c[b] += counts.get(s * WIDTH + b);
            }
            sum += sums.get(s);
        }
        return new Snapshot(BOUNDS.clone(), c, sum);
    }

    /**
     * The counts since this was made. Any thread.
     *
     * @return every lag recorded
     */
    public Snapshot total() {
        long[] c = new long[WIDTH];
        for (int b = 0; b < WIDTH; b++) {
            c[b] = totalCounts.get(b);
        }
        return new Snapshot(BOUNDS.clone(), c, totalSum.get(0));
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

        /**
         * Events counted.
         *
         * @return the sum of {@link #counts()}
         */
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
         *
         * @param q the quantile, in (0, 1]
         * @return the bucket's upper bound in milliseconds, -1 or {@link Long#MAX_VALUE}
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
