package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Routers (the real cache_aware policy) synced through a real {@code redis-server}: a prefix routed by
 * one instance is a hit on the others, a late instance starts warm, and with Redis killed, paused or
 * answering slower than the command timeout, routing goes on (every decision made, every slot returned)
 * and the instances converge once it is back. The fault tests route, during the fault, prompts that share
 * no text with anything routed before it, so the other instance can only route them as hits once the
 * events published during the fault have reached it: with the sync switched off during the fault they
 * fail.
 */
class RoutersThroughRedisTest {

    private static final String SYSTEM = "You are the support assistant of a bicycle shop. Be brief. ".repeat(10);

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    record Node(Router router, ManagedReplicaSet pool, RedisRouteSync sync) {
        RouteDecision route(PromptKey key) {
            RouteDecision d = router.choose(RouteRequest.of(key));
            assertNotNull(d.replica(), "a decision with a replica");
            d.lease().close();
            return d;
        }
    }

    private Node node(String uri, String id) {
        return node(uri, id, Duration.ofSeconds(2));
    }

    private Node node(String uri, String id, Duration commandTimeout) {
        ManagedReplicaSet pool = ManagedReplicaSet.builder()
                .add("http://vllm-0:8000")
                .add("http://vllm-1:8000")
                .add("http://vllm-2:8000")
                .add("http://vllm-3:8000")
                .build();
        RedisRouteSync sync = RedisRouteSync.builder().uri(uri).stream("cart:pool")
                .instanceId(id)
                .commandTimeout(commandTimeout)
                .build();
        Router router = Router.builder()
                .replicas(pool)
                .policy("cache_aware")
                .sync(sync)
                .evictionInterval(Duration.ZERO)
                .build();
        sync.start(router::applyRemote);
        open.add(router);
        open.add(sync);
        return new Node(router, pool, sync);
    }

    private static PromptKey conversation(int i) {
        return PromptKey.ofText(SYSTEM + ("user " + i + " asks about gears and brakes. ").repeat(6), 64);
    }

    /** Waits until {@code at} would route {@code key} to {@code replicaId} as a hit (without routing it). */
    private static void awaitHit(Node at, PromptKey key, String replicaId) {
        Await.until(
                () -> at.router().remoteApplyStats().applied() > 0 && hitOn(at, key, replicaId),
                () -> "hit for " + replicaId + "; remote " + at.router().remoteApplyStats() + " sync "
                        + at.sync().stats());
    }

    private static boolean hitOn(Node at, PromptKey key, String replicaId) {
        RouteDecision d = at.router().choose(RouteRequest.of(key));
        try {
            return d.reason() == Reason.CACHE_HIT && d.replica().id().equals(replicaId);
        } finally {
            d.lease().close();
        }
    }

    @Test
    void aPrefixRoutedOnOneInstanceIsAHitOnTheOthersAndALateInstanceStartsWarm() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        List<String> chosen = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            chosen.add(a.route(conversation(i)).replica().id());
        }
        for (int i = 0; i < 20; i++) {
            awaitHit(b, conversation(i), chosen.get(i));
        }
        Node late = node(redis.uri(), "late");
        for (int i = 0; i < 20; i++) {
            awaitHit(late, conversation(i), chosen.get(i));
        }
        assertEquals(
                0,
                a.pool().totalInFlight()
                        + b.pool().totalInFlight()
                        + late.pool().totalInFlight());
    }

    /**
     * A conversation of its own: no text shared with any other (phase, i), so a hit on another instance
     * can only come from this conversation's own route event, never from a prefix learned earlier.
     */
    private static PromptKey unique(String phase, int i) {
        return PromptKey.ofText(("[" + phase + " " + i + "] a question about gears and brakes. ").repeat(8), 64);
    }

    /**
     * Routes on {@code from} conversations {@code phase 1..n}, each its own prefix, and returns the
     * replica each went to.
     */
    private static List<String> routeAll(Node from, String phase, int n) {
        List<String> chosen = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            chosen.add(from.route(unique(phase, i)).replica().id());
        }
        return chosen;
    }

    /** Waits until {@code at} routes each of {@code phase 1..n} as a hit on the replica it went to. */
    private static void awaitAll(Node at, String phase, List<String> chosen) {
        for (int i = 1; i <= chosen.size(); i++) {
            awaitHit(at, unique(phase, i), chosen.get(i - 1));
        }
    }

    @Test
    void withRedisKilledRoutingGoesOnAndTheInstancesConvergeWhenItReturns() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        String first = a.route(unique("before", 0)).replica().id();
        awaitHit(b, unique("before", 0), first);
        redis.kill();
        // while Redis is down every call decides from local memory; each instance learns its own prefixes
        List<String> learnedByA = routeAll(a, "down-a", 30);
        List<String> learnedByB = routeAll(b, "down-b", 30);
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight(), "every slot returned");
        redis.restart();
        // what each learned only while Redis was down reaches the other once it is back
        awaitAll(b, "down-a", learnedByA);
        awaitAll(a, "down-b", learnedByB);
        // and what is learned after the recovery flows too
        awaitAll(b, "after", routeAll(a, "after", 10));
        assertEquals(0, a.sync().stats().dropped() + b.sync().stats().dropped());
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    @Test
    void withRedisPausedRoutingGoesOnAndTheEventsArriveAfterThePause() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        String first = a.route(unique("before", 0)).replica().id();
        awaitHit(b, unique("before", 0), first);
        io.lettuce.core.RedisClient admin = io.lettuce.core.RedisClient.create(redis.uri());
        open.add(() -> admin.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
        admin.connect().sync().clientPause(1_500); // every client's commands wait 1.5 s (under the 2 s timeout)
        List<String> learnedByA = routeAll(a, "paused", 30);
        assertEquals(0, a.pool().totalInFlight(), "every slot returned");
        awaitAll(b, "paused", learnedByA);
        assertEquals(0, a.sync().stats().dropped());
    }

    @Test
    void withRedisAnsweringSlowerThanTheTimeoutRoutingGoesOnAndTheInstancesConvergeAfter() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        DelayingRelay relay = DelayingRelay.start(redis.port());
        open.add(relay);
        Node a = node(relay.uri(), "a", Duration.ofMillis(500));
        Node b = node(relay.uri(), "b", Duration.ofMillis(500));
        String first = a.route(unique("before", 0)).replica().id();
        awaitHit(b, unique("before", 0), first);
        // every byte in either direction now waits 1.5 s: each command outlives the 500 ms timeout
        relay.delay(Duration.ofMillis(1_500));
        List<String> learnedByA = routeAll(a, "slow", 30); // never waits on Redis: a blocked call would hang here
        assertEquals(0, a.pool().totalInFlight(), "every slot returned");
        relay.delay(Duration.ZERO);
        awaitAll(b, "slow", learnedByA);
        awaitAll(b, "after", routeAll(a, "after", 10));
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    /**
     * Redis away long enough for a client with Lettuce's default reconnect delay (which doubles towards 30
     * s) to wait several seconds more once it is back: the routes learned during the outage still reach the
     * other instance, one outage is counted, and the time from the restart to the first shared route is
     * printed (a figure, not asserted). {@code -Dcart.redis.outageSeconds=45} reruns it as the docs quote.
     */
    @Test
    void afterALongOutageTheInstancesShareRoutesAgainSoonAfterRedisReturns() throws Exception {
        long outageSeconds = Long.getLong("cart.redis.outageSeconds", 12);
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        String first = a.route(unique("before", 0)).replica().id();
        awaitHit(b, unique("before", 0), first);
        redis.kill();
        List<String> learnedByA = routeAll(a, "long", 20);
        long downUntil = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(outageSeconds);
        while (System.nanoTime() < downUntil) {
            a.route(unique("during", 0)); // requests keep coming while Redis is away
            java.util.concurrent.locks.LockSupport.parkNanos(50_000_000L);
        }
        redis.restart();
        long back = System.nanoTime();
        awaitHit(b, unique("long", 1), learnedByA.get(0));
        long sharedAfterMillis = (System.nanoTime() - back) / 1_000_000;
        awaitAll(b, "long", learnedByA);
        System.out.printf(
                "Redis down %d s: routes shared again %d ms after it was back%n", outageSeconds, sharedAfterMillis);
        Await.until(() -> !a.sync().outage().isDown() && !b.sync().outage().isDown(), () -> "both reconnected");
        assertEquals(1, a.sync().outage().outages(), "one outage, however many retries");
        assertEquals(1, b.sync().outage().outages());
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }
}
