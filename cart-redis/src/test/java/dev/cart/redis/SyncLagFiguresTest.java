package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.PromptKey;
import dev.cart.core.sync.RouteEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Sync lag on loopback, measured (printed, not asserted: speed is a benchmark's business): four
 * instances on one real {@code redis-server}, each publishing route events at a steady pace (about 500
 * events per second each, 2,000 in all, a few milliseconds apart as requests come), every instance
 * applying the other three's. The lag of an event is the time from its router publishing it to its
 * apply on a peer ({@link SyncLag}: the buffer, the batch wait of up to 5 ms, the XADD, the XREAD BLOCK
 * wake-up and the apply), per peer. Each run prints its p50 and p99 over every (event, peer). What is
 * asserted is delivery: every event reaches every peer exactly once.
 *
 * <p>The build runs it once (for the delivery); the figures the docs quote are three runs: {@code mvn -B -ntp
 * -pl cart-redis -am -Dtest=SyncLagFiguresTest -Dsurefire.failIfNoSpecifiedTests=false -Dcart.redis.lagRuns=3
 * verify}; figures in {@code target/surefire-reports/dev.cart.redis.SyncLagFiguresTest-output.txt}.
 */
class SyncLagFiguresTest {

    private static final int INSTANCES = 4;
    private static final int EVENTS_EACH = 2_000;
    private static final long PACE_NANOS = 2_000_000; // per instance: 500 events/s

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    @Test
    void lagFromPublishToApplyOnEveryPeer() throws Exception {
        int runs = Integer.getInteger("cart.redis.lagRuns", 1);
        for (int run = 1; run <= runs; run++) {
            RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
            open.add(redis);
            List<RedisRouteSync> syncs = new ArrayList<>();
            List<List<RouteEvent>> received = new ArrayList<>();
            for (int i = 0; i < INSTANCES; i++) {
                RedisRouteSync s = RedisRouteSync.builder().uri(redis.uri()).stream("cart:lag")
                        .instanceId("i" + i)
                        .repeatInterval(java.time.Duration.ZERO)
                        .build();
                open.add(s);
                List<RouteEvent> got = java.util.Collections.synchronizedList(new ArrayList<>());
                s.start(got::add);
                syncs.add(s);
                received.add(got);
            }
            Await.until(() -> syncs.stream().allMatch(s -> s.stats().connected()), () -> "connected");
            List<Thread> publishers = new ArrayList<>();
            for (int i = 0; i < INSTANCES; i++) {
                RedisRouteSync s = syncs.get(i);
                SplittableRandom rnd = new SplittableRandom(run * 100L + i);
                Thread t = new Thread(() -> {
                    long next = System.nanoTime();
                    for (int e = 0; e < EVENTS_EACH; e++) {
                        s.publish(new RouteEvent.Learned(
                                s.originId(),
                                System.currentTimeMillis(),
                                "http://r" + rnd.nextInt(4) + ":8000",
                                PromptKey.Unit.CHARS,
                                64,
                                rnd.longs(rnd.nextInt(4, 40)).toArray()));
                        next += PACE_NANOS;
                        LockSupport.parkNanos(next - System.nanoTime()); // the pace of arriving requests
                    }
                });
                t.start();
                publishers.add(t);
            }
            for (Thread t : publishers) {
                t.join();
            }
            long expected = (long) EVENTS_EACH * (INSTANCES - 1);
            Await.until(
                    () -> received.stream().allMatch(r -> r.size() >= expected),
                    () -> "delivered: " + received.stream().map(List::size).toList());
            long[] counts = null;
            long[] bounds = null;
            for (int i = 0; i < INSTANCES; i++) {
                assertEquals(expected, received.get(i).size(), "each peer's events exactly once");
                SyncLag.Snapshot l = syncs.get(i).lagTotal();
                bounds = l.upperBoundsMillis();
                counts = counts == null ? l.counts().clone() : add(counts, l.counts());
            }
            SyncLag.Snapshot all = new SyncLag.Snapshot(bounds, counts, 0);
            System.out.printf(
                    Locale.ROOT,
                    "run %d: %d instances x %d events at %d/s each, %d (event, peer) lags: p50 <= %d ms, p99 <= %d ms,"
                            + " max bucket <= %s ms%n",
                    run,
                    INSTANCES,
                    EVENTS_EACH,
                    1_000_000_000L / PACE_NANOS,
                    all.count(),
                    all.quantileMillis(0.5),
                    all.quantileMillis(0.99),
                    all.quantileMillis(1.0) == Long.MAX_VALUE ? "above 30000" : all.quantileMillis(1.0));
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
            open.clear();
        }
    }

    private static long[] add(long[] a, long[] b) {
        for (int i = 0; i < a.length; i++) {
            a[i] += b[i];
        }
        return a;
    }
}
