package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.sync.RouteEvent;
import io.lettuce.core.RedisClient;
import io.lettuce.core.XTrimArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The transport against a real {@code redis-server}: events published on one instance reach the others,
 * a late instance replays the retained window, outages and restarts lose no buffered event, garbage and
 * trimming are skipped and counted. Nothing is mocked.
 */
class RedisRouteSyncTest {

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    /** An instance: its sync and what it was given by the others. */
    record Instance(RedisRouteSync sync, List<RouteEvent> received) {
        Set<Long> lastBlocks() {
            Set<Long> out = ConcurrentHashMap.newKeySet();
            for (RouteEvent e : received) {
                if (e instanceof RouteEvent.Learned l) {
                    out.add(l.blocks()[l.blocks().length - 1]);
                }
            }
            return out;
        }
    }

    private Instance instance(String uri, String id, int batchEvents) {
        RedisRouteSync sync = keep(RedisRouteSync.builder().uri(uri).stream("cart:test")
                .instanceId(id)
                .batchEvents(batchEvents)
                .build());
        List<RouteEvent> received = new CopyOnWriteArrayList<>();
        sync.start(received::add);
        return new Instance(sync, received);
    }

    private static RouteEvent.Learned learned(RedisRouteSync from, long n) {
        long[] blocks = {0x5157_0000L, 0x5157_0001L, 1_000_000L + n};
        return new RouteEvent.Learned(
                from.originId(),
                System.currentTimeMillis(),
                "http://r" + (n % 3) + ":8000",
                PromptKey.Unit.CHARS,
                64,
                blocks);
    }

    private RedisServerProcess redis() throws Exception {
        return keep(RedisServerProcess.start(RedisServerProcess.freePort()));
    }

    private RedisCommands<String, String> admin(RedisServerProcess redis) {
        RedisClient client = RedisClient.create(redis.uri());
        open.add(() -> client.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
        StatefulRedisConnection<String, String> c = client.connect();
        return c.sync();
    }

    private static void publish(Instance from, long first, long count) {
        for (long n = first; n < first + count; n++) {
            from.sync().publish(learned(from.sync(), n));
        }
    }

    private static void awaitReceived(Instance at, long count) {
        Await.until(
                () -> at.received().size() >= count,
                () -> at.received().size() + " of " + count + " events; stats "
                        + at.sync().stats());
    }

    @Test
    void twoInstancesConvergeAndNeitherReappliesItsOwnEvents() throws Exception {
        RedisServerProcess redis = redis();
        Instance a = instance(redis.uri(), "a", 256);
        Instance b = instance(redis.uri(), "b", 256);
        // both tailing (the replay of the empty window done), so every event arrives live
        Await.until(() -> a.sync().stats().connected() && b.sync().stats().connected(), () -> "connected");
        publish(a, 0, 1_000);
        publish(b, 1_000, 500);
        awaitReceived(b, 1_000);
        awaitReceived(a, 500);
        // a peer can read an entry before its publisher has counted the XADD's reply: wait for both
        Await.until(
                () -> a.sync().stats().ownSkipped() == 1_000
                        && b.sync().stats().ownSkipped() == 500
                        && a.sync().stats().published() == 1_000
                        && b.sync().stats().published() == 500,
                () -> "own events read back and counted as published: "
                        + a.sync().stats() + " / " + b.sync().stats());
        assertEquals(1_000, b.received().size(), "b got exactly a's events");
        assertEquals(500, a.received().size(), "a got exactly b's events");
        assertTrue(
                b.received().stream().allMatch(e -> e.origin().equals(a.sync().originId())));
        assertTrue(
                a.received().stream().allMatch(e -> e.origin().equals(b.sync().originId())));
        assertEquals(1_000, b.lastBlocks().size(), "every route arrived, none twice");
        RedisSyncStats s = a.sync().stats();
        assertEquals(1_000, s.published());
        assertTrue(s.batches() < 1_000, "events were batched: " + s);
        assertEquals(0, s.dropped() + s.malformed() + s.gaps() + s.duplicates());
        assertEquals(1, s.peers(), "a read b's entries");
        assertEquals(1, b.sync().peers());
        assertEquals(1_000, b.sync().lagTotal().count(), "one lag per event applied live");
        assertEquals(500, a.sync().lagTotal().count());
        assertEquals(1_000, b.sync().lag().count(), "the last minute's window counts every event just applied");
    }

    @Test
    void aLateInstanceReplaysTheRetainedWindowAndStartsWarm() throws Exception {
        RedisServerProcess redis = redis();
        Instance a = instance(redis.uri(), "a", 16);
        publish(a, 0, 700);
        Await.until(
                () -> a.sync().stats().published() == 700,
                () -> "published: " + a.sync().stats());
        Instance late = instance(redis.uri(), "late", 256);
        awaitReceived(late, 700);
        assertEquals(700, late.lastBlocks().size());
        publish(a, 700, 10); // and it follows the stream afterwards
        awaitReceived(late, 710);
    }

    @Test
    void withoutReplayAnInstanceGetsOnlyWhatIsWrittenAfterItStarts() throws Exception {
        RedisServerProcess redis = redis();
        Instance a = instance(redis.uri(), "a", 256);
        publish(a, 0, 40);
        Await.until(
                () -> a.sync().stats().published() == 40,
                () -> "published: " + a.sync().stats());
        RedisRouteSync sync = keep(RedisRouteSync.builder().uri(redis.uri()).stream("cart:test")
                .instanceId("cold")
                .replay(false)
                .build());
        List<RouteEvent> got = new CopyOnWriteArrayList<>();
        sync.start(got::add);
        Await.until(() -> sync.stats().connected(), () -> "connected: " + sync.stats());
        for (long n = 40; n < 100; n++) { // one at a time, so some land between two of its reads
            // keys of a prefix first written after it started: those written before are never read here
            long[] blocks = {0x6157_0000L, 0x6157_0001L, 1_000_000L + n};
            a.sync()
                    .publish(new RouteEvent.Learned(
                            a.sync().originId(),
                            System.currentTimeMillis(),
                            "http://r0:8000",
                            PromptKey.Unit.CHARS,
                            64,
                            blocks));
            long want = n - 39;
            Await.until(
                    () -> a.sync().stats().published() == 40 + want,
                    () -> "published: " + a.sync().stats());
        }
        Await.until(() -> got.size() == 60, () -> got.size() + " of the 60 events written after it started");
        assertTrue(got.stream().allMatch(e -> ((RouteEvent.Learned) e).blocks()[2] >= 1_000_040L));
        assertEquals(0, sync.stats().unresolved());
        // a key extending one written before it started cannot be rebuilt here: counted, not applied
        publish(a, 100, 1);
        Await.until(() -> sync.stats().unresolved() == 1, () -> "unresolved: " + sync.stats());
        assertEquals(60, got.size());
    }

    @Test
    void redisAbsentAtStart_eventsWaitAndArriveOnceItStarts() throws Exception {
        int port = RedisServerProcess.freePort();
        String uri = "redis://127.0.0.1:" + port;
        Instance a = instance(uri, "a", 256);
        Instance b = instance(uri, "b", 256);
        long t0 = System.nanoTime();
        publish(a, 0, 300);
        long publishNanos = System.nanoTime() - t0;
        // a batch being gathered (at most 5 ms) is in neither the buffer nor the pending count
        Await.until(
                () -> a.sync().stats().buffered() == 300,
                () -> "held, not lost: " + a.sync().stats());
        assertEquals(0, a.sync().stats().published());
        assertTrue(!a.sync().stats().connected());
        keep(RedisServerProcess.start(port));
        awaitReceived(b, 300);
        assertEquals(300, b.lastBlocks().size());
        assertEquals(0, a.sync().stats().dropped());
        Await.until(
                () -> a.sync().stats().connected(),
                () -> "reconnected: " + a.sync().stats());
        // not a timing assertion: a report of what publishing cost while Redis was away
        System.out.printf("300 publishes with Redis absent took %.2f ms in all%n", publishNanos / 1e6);
    }

    @Test
    void redisKilledMidRunAndRestarted_bufferedEventsAreDelivered() throws Exception {
        RedisServerProcess redis = redis();
        Instance a = instance(redis.uri(), "a", 256);
        Instance b = instance(redis.uri(), "b", 256);
        publish(a, 0, 100);
        awaitReceived(b, 100);
        redis.kill();
        publish(a, 100, 400); // while Redis is gone: enqueued, never blocked, never thrown
        Await.until(
                () -> !a.sync().stats().connected(),
                () -> "noticed the outage: " + a.sync().stats());
        publish(a, 500, 100);
        redis.restart();
        awaitReceived(b, 600);
        assertEquals(600, b.lastBlocks().size(), "every event, none twice");
        assertEquals(0, a.sync().stats().dropped());
    }

    @Test
    void aFullBufferDropsTheOldestEventsAndCountsThem() throws Exception {
        int port = RedisServerProcess.freePort();
        RedisRouteSync sync = keep(RedisRouteSync.builder().uri("redis://127.0.0.1:" + port).stream("cart:test")
                .instanceId("a")
                .bufferEvents(100)
                .build());
        List<RouteEvent> none = new CopyOnWriteArrayList<>();
        sync.start(none::add);
        for (long n = 0; n < 1_000; n++) {
            sync.publish(learned(sync, n));
        }
        // a batch being gathered (at most 5 ms) is in neither the buffer nor the pending count
        Await.until(
                () -> sync.stats().dropped() + sync.stats().buffered() == 1_000,
                () -> "every event accounted for: " + sync.stats());
        RedisSyncStats s = sync.stats();
        assertTrue(s.dropped() >= 1_000 - 100 - 256, "dropped: " + s);
        assertEquals(0, s.published());
        keep(RedisServerProcess.start(port));
        Instance b = instance("redis://127.0.0.1:" + port, "b", 256);
        Await.until(() -> sync.stats().published() + sync.stats().dropped() == 1_000, () -> "flushed: " + sync.stats());
        long delivered = sync.stats().published();
        awaitReceived(b, delivered);
        assertTrue(b.lastBlocks().contains(1_000_000L + 999), "the newest event survived");
    }

    @Test
    void garbageEntriesAreSkippedAndCounted() throws Exception {
        RedisServerProcess redis = redis();
        RedisCommands<String, String> admin = admin(redis);
        admin.xadd("cart:test", Map.of("x", "not a batch"));
        admin.xadd("cart:test", Map.of("b", "\u0002garbage that is no batch"));
        admin.xadd("cart:test", Map.of("b", "\u0001an entry of the earlier version"));
        admin.xadd("cart:test", Map.of("b", "\u0003a future version"));
        admin.xadd("cart:test", Map.of("b", "\u0001", "extra", "field"));
        Instance a = instance(redis.uri(), "a", 256);
        Instance b = instance(redis.uri(), "b", 256);
        Await.until(
                () -> b.sync().stats().malformed() == 5,
                () -> "malformed on replay: " + b.sync().stats());
        publish(a, 0, 50);
        admin.xadd("cart:test", Map.of("b", "\u0001\u0003abc\u0000\u0000\u0007"));
        publish(a, 50, 50);
        awaitReceived(b, 100);
        Await.until(
                () -> b.sync().stats().malformed() == 6,
                () -> "malformed while tailing: " + b.sync().stats());
        assertEquals(100, b.lastBlocks().size());
    }

    @Test
    void aStreamTrimmedPastAnInstancesPositionIsCountedAndReadingGoesOn() throws Exception {
        RedisServerProcess redis = redis();
        RedisCommands<String, String> admin = admin(redis);
        Instance a = instance(redis.uri(), "a", 1); // one entry per event
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<RouteEvent> got = new CopyOnWriteArrayList<>();
        RedisRouteSync slow = keep(RedisRouteSync.builder().uri(redis.uri()).stream("cart:test")
                .instanceId("slow")
                .build());
        slow.start(e -> {
            got.add(e);
            if (got.size() == 1) {
                entered.countDown();
                try {
                    assertTrue(release.await(60, TimeUnit.SECONDS));
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        publish(a, 0, 1);
        assertTrue(entered.await(30, TimeUnit.SECONDS), "the slow instance got the first event");
        publish(a, 1, 50);
        Await.until(
                () -> a.sync().stats().published() == 51,
                () -> "published: " + a.sync().stats());
        admin.xtrim("cart:test", new XTrimArgs().maxlen(5).exactTrimming());
        release.countDown();
        Await.until(() -> got.size() == 6, () -> got.size() + " events; " + slow.stats());
        Await.until(() -> slow.stats().gaps() == 1, () -> "gap counted: " + slow.stats());
        assertEquals(45, slow.stats().lostEntries(), "entries 2 to 46 were trimmed before they were read");
        Set<Long> lasts = ConcurrentHashMap.newKeySet();
        for (RouteEvent e : got) {
            lasts.add(((RouteEvent.Learned) e).blocks()[2]);
        }
        assertEquals(
                Set.of(1_000_000L, 1_000_046L, 1_000_047L, 1_000_048L, 1_000_049L, 1_000_050L),
                lasts,
                "the first event, then the five left after the trim");
        assertEquals(0, slow.stats().unresolved(), "the five extend the first key, which it read");
        // an instance starting now never read the first entry: every retained event extends its key
        List<RouteEvent> lateGot = new CopyOnWriteArrayList<>();
        RedisRouteSync late = keep(RedisRouteSync.builder().uri(redis.uri()).stream("cart:test")
                .instanceId("late")
                .build());
        late.start(lateGot::add);
        Await.until(() -> late.stats().unresolved() == 5, () -> "unresolved on replay: " + late.stats());
        publish(a, 51, 3);
        Await.until(() -> got.size() == 9, () -> got.size() + " events after the gap; " + slow.stats());
        assertEquals(1, slow.stats().gaps());
        Await.until(() -> late.stats().unresolved() == 8, () -> "unresolved while tailing: " + late.stats());
        assertEquals(List.of(), lateGot, "nothing half-applied");
        assertEquals(0, late.stats().malformed());
    }
}
