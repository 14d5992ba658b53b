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
 * one instance is a hit on the others, a late instance starts warm, and with Redis killed routing goes
 * on (every decision made, every slot returned) and the instances converge once it is back.
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
        ManagedReplicaSet pool = ManagedReplicaSet.builder()
                .add("http://vllm-0:8000")
                .add("http://vllm-1:8000")
                .add("http://vllm-2:8000")
                .add("http://vllm-3:8000")
                .build();
        RedisRouteSync sync = RedisRouteSync.builder().uri(uri).stream("cart:pool")
                .instanceId(id)
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

    @Test
    void withRedisKilledRoutingGoesOnAndTheInstancesConvergeWhenItReturns() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        String first = a.route(conversation(0)).replica().id();
        awaitHit(b, conversation(0), first);
        redis.kill();
        List<String> chosen = new ArrayList<>();
        for (int round = 0; round < 10; round++) { // every call decides, from local memory
            for (int i = 1; i <= 30; i++) {
                String r = a.route(conversation(i)).replica().id();
                if (round == 0) {
                    chosen.add(r);
                }
                b.route(conversation(100 + i));
            }
        }
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight(), "every slot returned");
        redis.restart();
        for (int i = 1; i <= 30; i++) {
            awaitHit(b, conversation(i), chosen.get(i - 1));
        }
        assertEquals(0, a.sync().stats().dropped());
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    @Test
    void withRedisPausedRoutingGoesOnAndTheEventsArriveAfterThePause() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        String first = a.route(conversation(0)).replica().id();
        awaitHit(b, conversation(0), first);
        io.lettuce.core.RedisClient admin = io.lettuce.core.RedisClient.create(redis.uri());
        open.add(() -> admin.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
        admin.connect().sync().clientPause(1_500); // every client's commands wait 1.5 s (under the 2 s timeout)
        List<String> chosen = new ArrayList<>();
        for (int i = 1; i <= 30; i++) {
            chosen.add(a.route(conversation(i)).replica().id());
        }
        assertEquals(0, a.pool().totalInFlight(), "every slot returned");
        for (int i = 1; i <= 30; i++) {
            awaitHit(b, conversation(i), chosen.get(i - 1));
        }
        assertEquals(0, a.sync().stats().dropped());
    }
}
