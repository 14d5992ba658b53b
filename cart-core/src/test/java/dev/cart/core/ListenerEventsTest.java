package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What a {@link RoutingListener} is told: lease completions with status and retries, tree events. */
class ListenerEventsTest {

    private static final PromptKey KEY = PromptKey.ofText("the same long system prompt ".repeat(10), 64);

    @Test
    void leaseCompletionCarriesOutcomeStatusDurationAndRetries() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        List<LeaseCompletion> seen = new CopyOnWriteArrayList<>();
        List<RouteDecision> decisions = new CopyOnWriteArrayList<>();
        RoutingListener l = new RoutingListener() {
            @Override
            public void onDecision(RouteDecision d) {
                decisions.add(d);
            }

            @Override
            public void onLeaseCompleted(LeaseCompletion c) {
                seen.add(c);
            }
        };
        try (Router router = Router.builder().replicas(set).policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO).listener(l).build()) {
            RouteRequest first = RouteRequest.of(KEY);
            RouteDecision d0 = router.choose(first);
            assertEquals(0, d0.attempt());
            try (Lease lease = d0.lease()) {
                lease.status(503);
                lease.failed();
            }
            RouteRequest retry = first.excluding(d0.replica()).attempt(1);
            RouteDecision d1 = router.choose(retry);
            assertEquals(1, d1.attempt());
            try (Lease lease = d1.lease()) {
                lease.status(200);
                lease.succeeded();
            }
            d1.lease().close(); // a second close reports nothing
            RouteDecision d2 = router.choose(RouteRequest.empty());
            d2.lease().close();
        }
        assertEquals(3, decisions.size());
        assertEquals(3, seen.size());
        LeaseCompletion c0 = seen.get(0);
        assertSame(decisions.get(0), c0.decision());
        assertEquals(Outcome.FAILURE, c0.outcome());
        assertEquals(503, c0.status());
        assertEquals(0, c0.retries());
        assertTrue(c0.durationNanos() >= 0);
        LeaseCompletion c1 = seen.get(1);
        assertEquals(Outcome.SUCCESS, c1.outcome());
        assertEquals(200, c1.status());
        assertEquals(1, c1.retries());
        LeaseCompletion c2 = seen.get(2);
        assertEquals(Outcome.CANCELLED, c2.outcome());
        assertEquals(0, c2.status(), "no status recorded");
        assertEquals(0, set.totalInFlight());
    }

    @Test
    void treeEventsReachTheListener() {
        ManualScheduler scheduler = new ManualScheduler();
        MutableClock clock = new MutableClock();
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        List<EvictionReport> passes = new CopyOnWriteArrayList<>();
        AtomicInteger resets = new AtomicInteger();
        PrefixTree tree = PrefixTree.builder().maxSize(2).clock(clock).build();
        try (Router router = Router.builder().replicas(set).policy(TestPolicies.followTheTree()).tree(tree)
                .clock(clock).scheduler(scheduler).evictionInterval(Duration.ofSeconds(10))
                .listener(new RoutingListener() {
                    @Override
                    public void onEviction(EvictionReport report) {
                        passes.add(report);
                    }

                    @Override
                    public void onReset() {
                        resets.incrementAndGet();
                    }
                }).build()) {
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
    void aListenerThrowingOnCompletionNeverBreaksTheRelease() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        try (Router router = Router.builder().replicas(set).policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO).listener(new RoutingListener() {
                    @Override
                    public void onLeaseCompleted(LeaseCompletion c) {
                        throw new IllegalStateException("boom");
                    }
                }).build()) {
            for (int i = 0; i < 3; i++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                assertTrue(d.routed());
                d.lease().failed();
                d.lease().close();
            }
            assertEquals(0, set.totalInFlight());
        }
    }
}
