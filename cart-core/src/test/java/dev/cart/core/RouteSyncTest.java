package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Replica;
import dev.cart.core.sync.RemoteApplyStats;
import dev.cart.core.sync.RouteEvent;
import dev.cart.core.sync.RouteSync;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two (or three) routers joined by an in-memory bus: what one learns, forgets, removes or resets reaches
 * the others through {@link Router#applyRemote}; nobody applies its own events; unknown replicas and
 * other key formats are ignored and counted; eviction on the receiver drops the peer's routes first.
 * The bus holds events until the test delivers them, so every step is deterministic; the clock is moved
 * by hand.
 */
class RouteSyncTest {

    private static final String SYSTEM = "You are a careful assistant. ".repeat(12); // 348 chars: 5 blocks

    private final MutableClock clock = new MutableClock();
    private final List<Router> routers = new ArrayList<>();

    /** Carries events to every router, the publisher included (which must skip its own). */
    final class Bus {
        final List<RouteEvent> pending = new ArrayList<>();
        final List<RouteEvent> all = new ArrayList<>();

        RouteSync endpoint(String origin) {
            return endpoint(origin, Duration.ZERO);
        }

        RouteSync endpoint(String origin, Duration repeat) {
            return new RouteSync() {
                @Override
                public String originId() {
                    return origin;
                }

                @Override
                public Duration repeatInterval() {
                    return repeat;
                }

                @Override
                public void publish(RouteEvent event) {
                    synchronized (Bus.this) {
                        pending.add(event);
                        all.add(event);
                    }
                }
            };
        }

        synchronized void deliver() {
            for (RouteEvent e : pending) {
                for (Router r : routers) {
                    r.applyRemote(e);
                }
            }
            pending.clear();
        }
    }

    private final Bus bus = new Bus();

    @AfterEach
    void close() {
        routers.forEach(Router::close);
    }

    private Router router(String origin, long maxTreeSize, String... replicaIds) {
        return router(bus.endpoint(origin), maxTreeSize, replicaIds);
    }

    private Router router(RouteSync sync, long maxTreeSize, String... replicaIds) {
        ManagedReplicaSet.Builder set = ManagedReplicaSet.builder();
        for (String id : replicaIds) {
            set.add(id);
        }
        Router r = Router.builder()
                .replicas(set.build())
                .policy(TestPolicies.followTheTree())
                .clock(clock)
                .evictionInterval(Duration.ZERO)
                .maxTreeSize(maxTreeSize)
                .sync(sync)
                .build();
        routers.add(r);
        return r;
    }

    private static Replica replica(Router r, String id) {
        return r.replicas().replicas().stream()
                .filter(x -> x.id().equals(id))
                .findFirst()
                .orElseThrow();
    }

    private static PromptKey key(String text) {
        return PromptKey.ofText(text, 64);
    }

    private static RouteDecision route(Router r, PromptKey key) {
        RouteDecision d = r.choose(RouteRequest.of(key));
        d.lease().close();
        return d;
    }

    private static void assertConsistent(Router r) {
        r.tree().checkInvariants();
        assertEquals(r.tree().recount(), r.tree().stats());
    }

    @Test
    void aHitOnARouteOnlyAPeerReportedSaysSoOnceThenTheRouteIsLocal() {
        Router a = router("a#1", 100_000, "r0", "r1", "r2");
        Router b = router("b#1", 100_000, "r0", "r1", "r2");
        PromptKey k = key(SYSTEM + "Which bicycle tyre pressure suits a gravel ride on wet forest paths?");
        RouteDecision first = route(a, k);
        assertFalse(first.learnedElsewhere(), "a miss");
        assertFalse(route(a, k).learnedElsewhere(), "a hit on a's own route");
        bus.deliver();
        RouteDecision onB = route(b, k);
        assertEquals(Reason.CACHE_HIT, onB.reason());
        assertTrue(onB.learnedElsewhere(), "b follows a route only a reported");
        RouteDecision again = route(b, k);
        assertEquals(Reason.CACHE_HIT, again.reason());
        assertFalse(again.learnedElsewhere(), "b's own request made the route b's");
    }

    private long learned(String origin) {
        synchronized (bus) {
            return bus.all.stream()
                    .filter(e -> e instanceof RouteEvent.Learned && e.origin().equals(origin))
                    .count();
        }
    }

    @Test
    void aHotRouteIsPublishedOncePerRepeatWindowAndANewOrDroppedRouteAtOnce() {
        Router a = router(bus.endpoint("a#1", Duration.ofSeconds(1)), 100_000, "r0");
        Router b = router(bus.endpoint("b#1", Duration.ofSeconds(1)), 100_000, "r0");
        PromptKey k = key(SYSTEM + "How often should a chain be oiled when riding through a rainy winter?");
        route(a, k);
        assertEquals(1, learned("a#1"), "a new route");
        for (int i = 0; i < 5; i++) {
            clock.advance(Duration.ofMillis(150));
            assertEquals(Reason.CACHE_HIT, route(a, k).reason());
        }
        assertEquals(1, learned("a#1"), "refreshes within the window (750 ms) build no event");
        clock.advance(Duration.ofMillis(300));
        route(a, k);
        assertEquals(2, learned("a#1"), "the first use in the next window shares the new time");
        route(a, key(SYSTEM + "Another question entirely, about the brakes of a folding bicycle."));
        assertEquals(3, learned("a#1"), "another route, at once");
        a.forgetReplica(replica(a, "r0"));
        route(a, k);
        assertEquals(4, learned("a#1"), "dropped and learned again: shared again, within the same window");

        bus.deliver();
        route(b, k);
        assertEquals(0, learned("b#1"), "a route a shared in this window, followed on b: already shared");
        clock.advance(Duration.ofSeconds(1));
        route(b, k);
        assertEquals(1, learned("b#1"), "next window: b shares its own use");
        assertConsistent(a);
        assertConsistent(b);
    }

    @Test
    void aRouteLearnedOnOneInstanceIsMatchedOnTheOther() {
        Router a = router("a#1", 100_000, "r0", "r1", "r2");
        Router b = router("b#1", 100_000, "r0", "r1", "r2");
        PromptKey k = key(SYSTEM + "What is the capital of France? Answer in one word, please, thank you.");
        RouteDecision first = route(a, k);
        assertEquals(Reason.MISS, first.reason());
        assertEquals(0, b.tree().match(k).matchedLength(), "nothing before delivery");
        bus.deliver();
        RouteDecision onB = route(b, k);
        assertEquals(Reason.CACHE_HIT, onB.reason());
        assertEquals(first.replica().id(), onB.replica().id(), "the same replica, by id");
        assertEquals(k.blockCount() * 64, onB.matchedLength());
        assertEquals(1, b.remoteApplyStats().applied());
        assertConsistent(a);
        assertConsistent(b);
    }

    @Test
    void anInstanceNeverReappliesItsOwnEventsAndAppliedEventsAreNotPublishedAgain() {
        Router a = router("a#1", 100_000, "r0", "r1");
        Router b = router("b#1", 100_000, "r0", "r1");
        for (int i = 0; i < 10; i++) {
            route(a, key(SYSTEM + "question number " + i + " ".repeat(64)));
        }
        TreeStats before = a.treeStats();
        bus.deliver();
        assertEquals(10, a.remoteApplyStats().ownEvents());
        assertEquals(0, a.remoteApplyStats().applied());
        assertEquals(before, a.treeStats(), "its own events changed nothing");
        assertEquals(10, b.remoteApplyStats().applied());
        assertEquals(10, bus.all.size(), "b published nothing for what it applied: no echo");
    }

    @Test
    void unknownReplicasAndOtherKeyFormatsAreIgnoredAndCounted() {
        Router a = router("a#1", 100_000, "r0", "r9");
        Router b = router("b#1", 100_000, "r0");
        a.record(key(SYSTEM + "one"), replica(a, "r0"));
        a.record(key(SYSTEM + "two, a different key in full blocks"), replica(a, "r9"));
        bus.deliver();
        RemoteApplyStats s = b.remoteApplyStats();
        assertEquals(1, s.applied());
        assertEquals(1, s.unknownReplica());
        b.applyRemote(
                new RouteEvent.Learned("c#1", clock.millis(), "r0", PromptKey.Unit.TOKENS, 16, new long[] {1, 2, 3}));
        assertEquals(1, b.remoteApplyStats().otherKeyFormat());
        assertEquals(3, b.remoteApplyStats().total());
    }

    @Test
    void aForgottenBranchIsForgottenOnEveryInstance() {
        Router a = router("a#1", 100_000, "r0");
        Router b = router("b#1", 100_000, "r0");
        PromptKey left = key(SYSTEM + "left branch of the conversation. ".repeat(20));
        PromptKey right = key(SYSTEM + "right branch of the conversation. ".repeat(20));
        route(a, left);
        route(a, right);
        bus.deliver();
        Replica r0b = replica(b, "r0");
        assertEquals(left.blockCount() * 64, b.tree().match(left).matchedLength(r0b));
        // a request for `right` predicted a whole hit; the replica delivered only 4 blocks: it had lost
        // the fifth, the last one `left` shares with `right`, and with it the whole of `left`'s branch
        RouteDecision d = route(a, right);
        assertEquals(Reason.CACHE_HIT, d.reason());
        a.feedback(d, new ServedUsage(right.length(), 4 * 64)); // one token per character, for round figures
        assertEquals(5 * 64, a.tree().match(left).matchedLength(replica(a, "r0")), "a forgot the other branch");
        bus.deliver();
        assertEquals(5 * 64, b.tree().match(left).matchedLength(r0b), "and so did b");
        assertEquals(
                right.blockCount() * 64, b.tree().match(right).matchedLength(r0b), "the request's own route stays");
        assertConsistent(b);
    }

    @Test
    void aForgottenReplicaIsForgottenOnEveryInstance() {
        Router a = router("a#1", 100_000, "r0", "r1");
        Router b = router("b#1", 100_000, "r0", "r1");
        PromptKey k = key(SYSTEM + "x");
        a.record(k, replica(a, "r1"));
        a.record(k, replica(a, "r0"));
        bus.deliver();
        assertEquals(2, b.tree().match(k).holders().size());
        a.forgetReplica(replica(a, "r1"));
        bus.deliver();
        assertEquals(
                List.of(replica(b, "r0")),
                b.tree().match(k).holders().stream().map(h -> h.replica()).toList());
        assertConsistent(b);
    }

    @Test
    void aResetDropsWhatWasUsedUpToItOnEveryInstanceAndKeepsWhatCameLater() {
        Router a = router("a#1", 100_000, "r0");
        Router b = router("b#1", 100_000, "r0");
        PromptKey old = key(SYSTEM + "an old conversation");
        PromptKey later =
                key("A different system prompt entirely, learned after the reset, in full blocks. ".repeat(2));
        route(a, old);
        route(b, key(SYSTEM + "b's own older route"));
        bus.deliver();
        clock.advance(Duration.ofSeconds(1));
        a.resetTree();
        clock.advance(Duration.ofSeconds(1));
        route(b, later); // b learns this after a's reset, before the reset event arrives
        bus.deliver();
        assertEquals(0, b.tree().match(old).matchedLength());
        assertEquals(0, b.tree().match(key(SYSTEM + "b's own older route")).matchedLength());
        assertEquals(later.blockCount() * 64, b.tree().match(later).matchedLength(), "learned after the reset");
        assertEquals(later.blockCount() * 64, a.tree().match(later).matchedLength(), "and shared with a");
        assertConsistent(a);
        assertConsistent(b);
    }

    @Test
    void evictionOnTheReceiverDropsThePeersRoutesBeforeItsOwnOfTheSameAge() {
        Router a = router("a#1", 100_000, "r0", "r1");
        Router b = router("b#1", 12, "r0", "r1");
        PromptKey mine = key("L".repeat(8 * 64));
        PromptKey theirs = key("R".repeat(8 * 64));
        assertEquals(8, mine.blockCount());
        assertEquals(8, theirs.blockCount());
        route(a, theirs);
        bus.deliver();
        route(b, mine); // same clock time as a's route
        assertEquals(16, b.treeStats().size());
        b.evictNow();
        assertEquals(8, b.treeStats().size());
        assertEquals(0, b.tree().match(theirs).matchedLength(), "the peer's route went first");
        assertEquals(mine.blockCount() * 64, b.tree().match(mine).matchedLength());
        Map<List<Long>, Map<Replica, PrefixTree.Route>> snap = b.tree().snapshot();
        assertFalse(snap.values().stream().flatMap(m -> m.values().stream()).anyMatch(PrefixTree.Route::remote));
        assertTrue(a.tree().match(theirs).matchedLength() > 0, "a keeps its own");
    }
}
