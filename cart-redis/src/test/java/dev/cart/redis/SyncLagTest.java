package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
