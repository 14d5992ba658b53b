package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Outcome;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two routers (the real cache_aware policy) in front of one replica pool, sharing routes through the
 * stream and load through {@link RedisLoadView} on a real {@code redis-server}: the guard sees the other
 * instance's requests on a warm replica and diverts, misses avoid the replica the other instance loads,
 * and once that instance is gone its load stops counting within the TTL.
 */
class SharedLoadTest {

    private static final String SYSTEM = "You are the support assistant of a bicycle shop. Be brief. ".repeat(10);
    private static final List<String> IDS =
            List.of("http://vllm-0:8000", "http://vllm-1:8000", "http://vllm-2:8000", "http://vllm-3:8000");

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    record Node(Router router, ManagedReplicaSet pool, RedisRouteSync sync, RedisLoadView load) {
        Replica replica(String id) {
            return pool.member(id).orElseThrow();
        }
    }

    private Node node(String uri, String id) {
        return node(uri, id, false);
    }

    private Node node(String uri, String id, boolean firstTokenReports) {
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
        IDS.forEach(b::add);
        ManagedReplicaSet pool = b.build();
        RedisRouteSync sync = RedisRouteSync.builder().uri(uri).stream("cart:pool")
                .instanceId(id)
                .build();
        RedisLoadView load = RedisLoadView.builder()
                .uri(uri)
                .pool("cart:pool")
                .instanceId(id)
                .replicas(pool)
                .build();
        Router router = Router.builder()
                .replicas(pool)
                .policy("cache_aware")
                .sync(sync)
                .remoteLoad(load)
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(firstTokenReports)
                .build();
        sync.start(router::applyRemote);
        load.start();
        open.add(router);
        open.add(sync);
        open.add(load);
        return new Node(router, pool, sync, load);
    }

    private static PromptKey conversation(int i) {
        return PromptKey.ofText(SYSTEM + ("user " + i + " asks about gears and brakes. ").repeat(6), 64);
    }

    /** A prompt sharing nothing with the others: a miss everywhere. */
    private static PromptKey cold(int i) {
        return PromptKey.ofText((i + " a question of its own about saddles. ").repeat(8), 64);
    }

    private static RouteDecision peek(Node n, PromptKey key) {
        RouteDecision d = n.router().choose(RouteRequest.of(key));
        d.lease().close();
        return d;
    }

    @Test
    void theGuardWeighsTheOtherInstancesRequestsAndADeadInstanceStopsCountingWithinTheTtl() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        PromptKey hot = conversation(0);
        RouteDecision first = a.router().choose(RouteRequest.of(hot));
        first.lease().close();
        String warm = first.replica().id();
        // routing on b before the route arrives would teach b a route of its own: wait for it first
        Await.until(() -> b.router().remoteApplyStats().applied() == 1, () -> "b learned the route");
        RouteDecision onB = peek(b, hot);
        assertEquals(Reason.CACHE_HIT, onB.reason());
        assertEquals(warm, onB.replica().id());
        // a now has 20 requests in flight on the warm replica: b's own count there is 0
        List<Replica.Admission> held = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            held.add(assertHeld(a.replica(warm).tryAcquire()));
        }
        Await.until(
                () -> b.load().remoteInFlight(warm) == 20,
                () -> "b sees a's load: " + b.load().remoteInFlight(warm));
        RouteDecision diverted = peek(b, hot);
        assertEquals(
                Reason.HIT_OVERLOADED,
                diverted.reason(),
                "20 elsewhere against 0: over the guard's margins; went to "
                        + diverted.replica().id() + " warm " + warm + " remote "
                        + b.load().remoteInFlight(warm));
        assertNotEquals(warm, diverted.replica().id());
        // a stops publishing (as if it crashed, its requests still counted in its last write): within the
        // TTL its figures expire and b follows the cache again
        a.load().close();
        Await.until(() -> b.load().remoteInFlight(warm) == 0 && b.load().peers() == 0, () -> "a's load expired");
        // b's tree now holds the prefix on the warm replica and on the one it diverted to (its route was
        // recorded when the diverted request's lease closed): either is a hit
        RouteDecision back = peek(b, hot);
        assertEquals(Reason.CACHE_HIT, back.reason());
        assertTrue(
                Set.of(warm, diverted.replica().id()).contains(back.replica().id()),
                back.replica().id());
        held.forEach(h -> h.release(Outcome.SUCCESS));
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    /**
     * The prefill one instance has queued on a replica (its router's own count, published by its view) adds
     * to the other's: a cold prompt on b avoids the replica where a's long prompt is still being computed,
     * although both replicas have as many requests in flight.
     */
    @Test
    void theOtherInstancesPendingPrefillAddsToThisOnes() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a", true);
        Node b = node(redis.uri(), "b", true);
        String busy = IDS.get(0);
        String free = IDS.get(1);
        RouteDecision computing = a.router()
                .choose(RouteRequest.of(cold(100))
                        .excluding(List.of(a.replica(free), a.replica(IDS.get(2)), a.replica(IDS.get(3)))));
        assertEquals(busy, computing.replica().id());
        long queued = a.router().pendingPrefill(a.replica(busy));
        assertEquals(cold(100).length(), queued, "a counts the prompt it routed until its first token");
        Replica.Admission decoding = assertHeld(a.replica(free).tryAcquire()); // one request there too, no prefill
        Await.until(
                () -> b.load().remotePendingPrefill(busy) == queued && b.load().remoteInFlight(free) == 1,
                () -> "b sees a's pending prefill: " + b.load().remotePendingPrefill(busy));
        for (int i = 0; i < 10; i++) {
            RouteDecision d = b.router()
                    .choose(RouteRequest.of(cold(i)).excluding(List.of(b.replica(IDS.get(2)), b.replica(IDS.get(3)))));
            assertEquals(free, d.replica().id(), "in flight 1 and 1, but a whole prompt of prefill queued on " + busy);
            d.lease().firstToken();
            d.lease().close();
        }
        computing.lease().firstToken();
        assertEquals(0, a.router().pendingPrefill(a.replica(busy)));
        Await.until(() -> b.load().remotePendingPrefill(busy) == 0, () -> "a's prefill done, published");
        computing.lease().close();
        decoding.release(Outcome.SUCCESS);
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    @Test
    void missesOnOneInstanceGoWhereTheOtherInstanceIsNotBusy() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        Node a = node(redis.uri(), "a");
        Node b = node(redis.uri(), "b");
        // a holds 6 requests on vllm-0 and 3 on vllm-1; b holds nothing yet
        List<Replica.Admission> held = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            held.add(assertHeld(a.replica(IDS.get(0)).tryAcquire()));
        }
        for (int i = 0; i < 3; i++) {
            held.add(assertHeld(a.replica(IDS.get(1)).tryAcquire()));
        }
        Await.until(
                () -> b.load().remoteInFlight(IDS.get(0)) == 6 && b.load().remoteInFlight(IDS.get(1)) == 3,
                () -> "b sees a's load");
        // b routes 9 cold prompts and keeps them in flight: counting a's requests, the pool ends as even as
        // it can (b sends nothing to vllm-0, one to vllm-1)
        List<RouteDecision> bs = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            RouteDecision d = b.router().choose(RouteRequest.of(cold(i)));
            assertEquals(Reason.MISS, d.reason());
            bs.add(d);
        }
        Map<String, Integer> total = new HashMap<>();
        for (String id : IDS) {
            total.put(id, a.replica(id).inFlight() + b.replica(id).inFlight());
        }
        assertEquals(
                Map.of(IDS.get(0), 6, IDS.get(1), 4, IDS.get(2), 4, IDS.get(3), 4),
                total,
                "b's own: " + IDS.stream().map(id -> b.replica(id).inFlight()).toList());
        bs.forEach(d -> d.lease().close());
        held.forEach(h -> h.release(Outcome.SUCCESS));
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    @Test
    void redisAbsentAtStart_routingGoesOnAndRoutesAndLoadArriveOnceItStarts() throws Exception {
        int port = RedisServerProcess.freePort();
        String uri = "redis://127.0.0.1:" + port; // nothing listens yet
        Node a = node(uri, "a");
        Node b = node(uri, "b");
        List<String> chosen = new ArrayList<>();
        for (int i = 0; i < 20; i++) { // every decision made from local memory
            RouteDecision d = a.router().choose(RouteRequest.of(conversation(i)));
            assertNotNull(d.replica());
            chosen.add(d.replica().id());
            d.lease().close();
        }
        assertEquals(0, a.pool().totalInFlight());
        assertEquals(0, b.load().peers(), "no view without Redis");
        RedisServerProcess redis = RedisServerProcess.start(port);
        open.add(redis);
        Await.until(() -> b.router().remoteApplyStats().applied() >= 20, () -> "the buffered routes arrive");
        for (int i = 0; i < 20; i++) {
            RouteDecision d = peek(b, conversation(i));
            assertEquals(Reason.CACHE_HIT, d.reason());
            assertEquals(chosen.get(i), d.replica().id());
        }
        Replica.Admission held = assertHeld(a.replica(IDS.get(2)).tryAcquire());
        Await.until(() -> b.load().remoteInFlight(IDS.get(2)) == 1, () -> "the load view works once Redis is up");
        held.release(Outcome.SUCCESS);
        assertEquals(0, a.pool().totalInFlight() + b.pool().totalInFlight());
    }

    private static Replica.Admission assertHeld(Replica.Admission a) {
        assertNotNull(a, "admitted");
        return a;
    }
}
