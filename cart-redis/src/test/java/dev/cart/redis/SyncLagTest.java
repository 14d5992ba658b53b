package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The lag histogram's buckets and quantiles (no Redis). */
class SyncLagTest {

    @Test
    void quantilesAreTheUpperBoundOfTheBucketHoldingThem() {
        SyncLag lag = new SyncLag();
        assertEquals(-1, lag.snapshot().quantileMillis(0.99), "nothing counted");
        for (int i = 0; i < 98; i++) {
            lag.record(3); // bucket (2, 5]
        }
        lag.record(15); // (10, 20]
        lag.record(-4); // a peer's clock ahead: counted as 0
        SyncLag.Snapshot s = lag.snapshot();
        assertEquals(100, s.count());
        assertEquals(98 * 3 + 15, s.sumMillis());
        assertEquals(5, s.quantileMillis(0.5));
        assertEquals(5, s.quantileMillis(0.98));
        assertEquals(20, s.quantileMillis(0.995));
        lag.record(60_000);
        assertEquals(Long.MAX_VALUE, lag.snapshot().quantileMillis(1.0), "above the last bound");
    }

    @Test
    void theSnapshotForgetsLagsOlderThanTheWindowAndTheTotalKeepsThem() {
        AtomicLong now = new AtomicLong(1_000_000);
        SyncLag lag = new SyncLag(now::get, 10_000, 6); // the default: six slots of 10 s
        for (int i = 0; i < 50; i++) {
            lag.record(1_500); // an outage: (1000, 2000]
        }
        assertEquals(2_000, lag.snapshot().quantileMillis(0.99));

        now.addAndGet(30_000); // half a minute later, a healthy sync
        for (int i = 0; i < 50; i++) {
            lag.record(4); // (2, 5]
        }
        assertEquals(100, lag.snapshot().count(), "both within the minute");
        assertEquals(2_000, lag.snapshot().quantileMillis(0.99));

        now.addAndGet(30_000); // the outage is now 60 s old: its slot has left the window
        SyncLag.Snapshot recent = lag.snapshot();
        assertEquals(50, recent.count());
        assertEquals(5, recent.quantileMillis(0.99), "the p99 says how the sync does now");
        assertEquals(200, recent.sumMillis());

        SyncLag.Snapshot total = lag.total();
        assertEquals(100, total.count(), "the totals keep everything (counters only grow)");
        assertEquals(50 * 1_500 + 50 * 4, total.sumMillis());
        assertEquals(2_000, total.quantileMillis(0.99));

        now.addAndGet(600_000); // ten minutes of silence
        assertEquals(-1, lag.snapshot().quantileMillis(0.99), "nothing measured in the last minute");
        lag.record(12); // the ring's slot is reused: its old counts are cleared first
        assertEquals(1, lag.snapshot().count());
        assertEquals(20, lag.snapshot().quantileMillis(0.5));
        assertEquals(101, lag.total().count());
    }
}
