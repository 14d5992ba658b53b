package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What a {@link RoutingListener} is told: lease completions with status and retries, tree events. */
class ListenerEventsTest {

    private static final PromptKey KEY = PromptKey.ofText("the same long system prompt ".repeat(10), 64);

    /** Every event as the listener saw it, in order. */
    private record Event(String kind, RouteDecision decision, Object detail) {}

    /** Spins (no sleep) until the clock has moved past {@code t}, so that a duration after it is positive. */
    private static long after(long t) {
        long now;
        while ((now = System.nanoTime()) == t) {
            Thread.onSpinWait();
        }
        return now;
    }

    @Test
    void eventsComeInOrderEachCarryingItsDecisionOutcomeStatusDurationAndRetries() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        List<Event> events = new CopyOnWriteArrayList<>();
        RoutingListener l = new RoutingListener() {
            @Override
            public void onDecision(RouteDecision d) {
                events.add(new Event("decision", d, d.reason()));
            }

            @Override
            public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                events.add(new Event("feedback", d, f));
            }

            @Override
            public void onLeaseCompleted(LeaseCompletion c) {
                events.add(new Event("completed", c.decision(), c));
            }
        };
        long[] outer = new long[2];
        long[] inner = new long[2];
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .listener(l)
                .build()) {
            RouteRequest first = RouteRequest.of(KEY);
            outer[0] = System.nanoTime();
            RouteDecision d0 = router.choose(first);
            inner[0] = System.nanoTime();
            try (Lease lease = d0.lease()) {
                lease.status(503);
                lease.failed();
                inner[1] = after(inner[0]);
            }
            outer[1] = System.nanoTime();
            RouteDecision d1 = router.choose(first.excluding(d0.replica()).attempt(1));
            try (Lease lease = d1.lease()) {
                lease.firstToken();
                lease.status(200);
                lease.succeeded(new ServedUsage(100, 0));
            }
            d1.lease().close(); // a second close reports nothing
            RouteDecision d2 = router.choose(first.excluding(set.replicas()).attempt(2));
            d2.lease().close(); // no replica: nothing to complete

            assertEquals(
                    List.of("decision", "completed", "decision", "feedback", "completed", "decision"),
                    events.stream().map(Event::kind).toList());
            assertEquals(
                    List.of(d0, d0, d1, d1, d1, d2),
                    events.stream().map(Event::decision).toList(),
                    "each event carries the decision it is about");
            assertEquals(Reason.MISS, events.get(0).detail());
            assertEquals(Reason.NO_REPLICA, events.get(5).detail());
            assertNotSame(d0.replica(), d1.replica(), "the retry avoided the replica that failed");

            LeaseCompletion c0 = (LeaseCompletion) events.get(1).detail();
            assertEquals(Outcome.FAILURE, c0.outcome());
            assertEquals(503, c0.status());
            assertEquals(0, c0.retries());
            assertTrue(
                    c0.durationNanos() >= inner[1] - inner[0] && c0.durationNanos() <= outer[1] - outer[0],
                    "the lease's life, from the decision to the close: " + c0.durationNanos() + " ns within ["
                            + (inner[1] - inner[0]) + ", " + (outer[1] - outer[0]) + "]");
            LeaseCompletion c1 = (LeaseCompletion) events.get(4).detail();
            assertEquals(Outcome.SUCCESS, c1.outcome());
            assertEquals(200, c1.status());
            assertEquals(1, c1.retries());
            CacheFeedback f = (CacheFeedback) events.get(3).detail();
            assertEquals(100, f.promptTokens());
            assertEquals(0, f.deliveredTokens());
            assertEquals(0, set.totalInFlight());
        }
    }

    @Test
    void aLeaseClosedWithoutAnOutcomeIsReportedCancelledWithNoStatus() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        List<LeaseCompletion> seen = new CopyOnWriteArrayList<>();
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .listener(new RoutingListener() {
                    @Override
                    public void onLeaseCompleted(LeaseCompletion c) {
                        seen.add(c);
                    }
                })
                .build()) {
            RouteDecision d = router.choose(RouteRequest.empty());
            d.lease().close();
            assertEquals(1, seen.size());
            assertSame(d, seen.get(0).decision());
            assertEquals(Outcome.CANCELLED, seen.get(0).outcome());
            assertEquals(0, seen.get(0).status(), "no status recorded");
        }
    }

    @Test
    void treeEventsReachTheListener() {
        ManualScheduler scheduler = new ManualScheduler();
        MutableClock clock = new MutableClock();
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        List<EvictionReport> passes = new CopyOnWriteArrayList<>();
        AtomicInteger resets = new AtomicInteger();
        PrefixTree tree = PrefixTree.builder().maxSize(2).clock(clock).build();
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .tree(tree)
                .clock(clock)
                .scheduler(scheduler)
                .evictionInterval(Duration.ofSeconds(10))
                .listener(new RoutingListener() {
                    @Override
                    public void onEviction(EvictionReport report) {
                        passes.add(report);
                    }

                    @Override
                    public void onReset() {
                        resets.incrementAndGet();
                    }
                })
                .build()) {
            router.choose(RouteRequest.of(KEY)).lease().close();
            long before = tree.stats().size();
            assertTrue(before > 2);
            assertTrue(scheduler.runNext(Duration.ofSeconds(10)));
            assertEquals(1, passes.size());
            assertEquals(before, passes.get(0).sizeBefore());
            assertEquals(tree.stats().size(), passes.get(0).sizeAfter());
            assertTrue(passes.get(0).sizeAfter() <= 2);
            router.resetTree();
            assertEquals(1, resets.get());
            assertEquals(tree.recount(), tree.stats());
        }
    }

    @Test
    void aListenerThrowingOnEveryEventNeverBreaksRouting() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        AtomicInteger calls = new AtomicInteger();
        RoutingListener throwing = new RoutingListener() {
            private void boom() {
                calls.incrementAndGet();
                throw new IllegalStateException("boom");
            }

            @Override
            public void onDecision(RouteDecision d) {
                boom();
            }

            @Override
            public void onLeaseCompleted(LeaseCompletion c) {
                boom();
            }

            @Override
            public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                boom();
            }

            @Override
            public void onEviction(EvictionReport r) {
                boom();
            }

            @Override
            public void onReset() {
                boom();
            }
        };
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .listener(throwing)
                .build()) {
            RouteDecision first = router.choose(RouteRequest.of(KEY));
            assertTrue(first.routed());
            first.lease().succeeded(new ServedUsage(100, 0));
            first.lease().failed();
            first.lease().close();
            for (int i = 0; i < 3; i++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                assertEquals(Reason.CACHE_HIT, d.reason(), "the route was learned despite the listener");
                assertSame(first.replica(), d.replica());
                assertEquals(1, d.replica().inFlight());
                d.lease().close();
            }
            assertEquals(0, set.totalInFlight(), "every slot released despite the listener");
            router.evictNow();
            router.resetTree();
            RouteDecision last = router.choose(RouteRequest.of(KEY));
            assertEquals(Reason.MISS, last.reason(), "the reset happened");
            last.lease().close();
            // first: decision, feedback, completion; three more decisions and completions; eviction; reset; last
            assertEquals(3 + 3 * 2 + 1 + 1 + 2, calls.get(), "the listener was called, and threw, each time");
        }
    }
}
