package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.spi.RoutingPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RouterTest {

    private static final PromptKey KEY = PromptKey.ofText("system prompt ".repeat(20) + "question", 64);

    private static Router.Builder router(ManagedReplicaSet set) {
        SplittableRandom rnd = new SplittableRandom(1);
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO);
    }

    @Test
    void routesLearnsAndFollows() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add("a").add("b").add("c").build();
        try (Router router = router(set).build()) {
            RouteDecision first = router.choose(RouteRequest.of(KEY));
            assertTrue(first.routed());
            assertEquals(Reason.MISS, first.reason());
            assertEquals(1, first.replica().inFlight());
            first.lease().succeeded();
            first.lease().close();
            assertEquals(0, first.replica().inFlight());
            RouteDecision second = router.choose(RouteRequest.of(KEY));
            assertSame(first.replica(), second.replica());
            assertEquals(Reason.CACHE_HIT, second.reason());
            assertEquals(KEY.blockCount() * 64, second.matchedLength());
            second.lease().close();
        }
    }

    @Test
    void aDecisionTakesItsTimeFromTheRoutersTicker() {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000);
        RoutingPolicy follow = TestPolicies.followTheTree();
        RoutingPolicy slow = new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                now.addAndGet(7_000); // the policy's work takes 7 µs on this clock
                return follow.choose(ctx);
            }

            @Override
            public String name() {
                return "slow";
            }
        };
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = router(set).policy(slow).ticker(now::get).build()) {
            RouteDecision d = router.choose(RouteRequest.of(KEY));
            assertEquals(7_000, d.decisionNanos(), "from the ticker's reading before the decision to after it");
            assertEquals(1_007_000, d.startNanos(), "the request starts when its decision ends");
            d.lease().close();
        }
    }

    @Test
    void policiesThatIgnoreTheTreeDoNotFeedIt() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        try (Router router =
                router(set).policy(TestPolicies.leastLoadedIgnoringTree()).build()) {
            router.choose(RouteRequest.of(KEY)).lease().close();
            assertEquals(0, router.tree().stats().size());
        }
    }

    @Test
    void noUsableReplicaIsADecisionNotAnException() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add(new ReplicaSpec("a", 1, 0)).build();
        try (Router router = router(set).build()) {
            RouteDecision busy = router.choose(RouteRequest.of(KEY));
            RouteDecision none = router.choose(RouteRequest.of(KEY));
            assertFalse(none.routed());
            assertNull(none.replica());
            assertEquals(Reason.NO_REPLICA, none.reason());
            none.lease().close(); // harmless
            none.lease().failed();
            none.lease().close();
            busy.lease().close();
            assertEquals(0, set.totalInFlight());
        }
    }

    @Test
    void excludedReplicasAreNeverChosen() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        ManagedReplicaSet.Member a = set.replicas().get(0);
        ManagedReplicaSet.Member b = set.replicas().get(1);
        try (Router router = router(set).build()) {
            for (int i = 0; i < 50; i++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY).excluding(a));
                assertSame(b, d.replica());
                d.lease().close();
            }
            assertEquals(
                    Reason.NO_REPLICA,
                    router.choose(RouteRequest.of(KEY).excluding(List.of(a, b))).reason());
        }
    }

    @Test
    void aReplicaThatFillsUpBetweenLookAndAcquireIsSkipped() {
        AtomicInteger refusals = new AtomicInteger(1);
        ManagedReplicaSet real = ManagedReplicaSet.builder().add("a").add("b").build();
        Replica flaky = new ForwardingReplica(real.replicas().get(0)) {
            @Override
            public Admission tryAcquire() {
                return refusals.getAndDecrement() <= 0 ? super.tryAcquire() : null;
            }

            @Override
            public long load() {
                return -1; // always looks least loaded
            }
        };
        Replica other = real.replicas().get(1);
        try (Router router = Router.builder()
                .replicas(() -> List.of(flaky, other))
                .policy(TestPolicies.leastLoadedIgnoringTree())
                .evictionInterval(Duration.ZERO)
                .build()) {
            RouteDecision d = router.choose(RouteRequest.of(KEY));
            assertSame(other, d.replica(), "the router asked again without the replica that refused");
            d.lease().close();
            RouteDecision again = router.choose(RouteRequest.of(KEY));
            assertSame(flaky, again.replica());
            again.lease().close();
        }
    }

    @Test
    void aPolicyChoosingOutsideTheCandidatesIsABug() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        Replica stranger =
                ManagedReplicaSet.builder().add("x").build().replicas().get(0);
        RoutingPolicy rogue = new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                return Choice.of(stranger, Reason.POLICY);
            }

            @Override
            public String name() {
                return "rogue";
            }
        };
        try (Router router = router(set).policy(rogue).build()) {
            assertThrows(IllegalStateException.class, () -> router.choose(RouteRequest.of(KEY)));
            assertEquals(0, set.totalInFlight());
        }
    }

    @Test
    void aThrowingListenerNeverBreaksRouting() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        RoutingListener bad = new RoutingListener() {
            @Override
            public void onDecision(RouteDecision decision) {
                throw new IllegalStateException("boom");
            }

            @Override
            public void onLeaseCompleted(LeaseCompletion completion) {
                throw new IllegalStateException("boom");
            }
        };
        try (Router router = router(set).listener(bad).build()) {
            for (int i = 0; i < 3; i++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                assertTrue(d.routed());
                d.lease().close();
            }
            assertEquals(0, set.totalInFlight());
        }
    }

    @Test
    void evictionRunsOnTheInjectedSchedulerAndReschedules() {
        ManualScheduler scheduler = new ManualScheduler();
        MutableClock clock = new MutableClock();
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        AtomicInteger passes = new AtomicInteger();
        PrefixTree tree = PrefixTree.builder().maxSize(1).clock(clock).build();
        try (Router router = router(set)
                .tree(tree)
                .clock(clock)
                .scheduler(scheduler)
                .evictionInterval(Duration.ofSeconds(30))
                .listener(new RoutingListener() {
                    @Override
                    public void onEviction(EvictionReport report) {
                        passes.incrementAndGet();
                    }
                })
                .build()) {
            router.choose(RouteRequest.of(KEY)).lease().close();
            assertTrue(tree.stats().size() > 1);
            assertTrue(scheduler.runNext(Duration.ofSeconds(30)));
            assertEquals(1, passes.get());
            assertEquals(0, tree.stats().size());
            assertTrue(scheduler.runNext(Duration.ofSeconds(30)), "rescheduled");
            assertEquals(2, passes.get());
            assertEquals(1, scheduler.live());
        }
        assertEquals(0, scheduler.live(), "close cancels maintenance");
    }

    @Test
    void dailyResetAtTheConfiguredHour() {
        ManualScheduler scheduler = new ManualScheduler();
        MutableClock clock = new MutableClock(Instant.parse("2026-03-01T10:30:00Z"));
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        try (Router router = router(set)
                .clock(clock)
                .scheduler(scheduler)
                .dailyResetHourUtc(4)
                .build()) {
            router.choose(RouteRequest.of(KEY)).lease().close();
            assertTrue(router.tree().stats().size() > 0);
            Duration untilFour = Duration.ofHours(17).plusMinutes(30);
            clock.set(Instant.parse("2026-03-02T04:00:00Z"));
            assertTrue(scheduler.runNext(untilFour));
            assertEquals(0, router.tree().stats().size());
            assertTrue(scheduler.runNext(Duration.ofHours(24)), "next reset a day later");
        }
    }

    @Test
    void nextResetIsStrictlyInTheFuture() {
        assertEquals(Duration.ofHours(24), Router.untilNextReset(Instant.parse("2026-01-01T03:00:00Z"), 3));
        assertEquals(Duration.ofMinutes(1), Router.untilNextReset(Instant.parse("2026-01-01T02:59:00Z"), 3));
        assertEquals(Duration.ofHours(23), Router.untilNextReset(Instant.parse("2026-01-01T04:00:00Z"), 3));
    }

    @Test
    void builderNamesWhatIsMissingOrWrong() {
        assertThrows(
                IllegalStateException.class,
                () -> Router.builder().policy(TestPolicies.followTheTree()).build());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> Router.builder().dailyResetHourUtc(24));
        assertTrue(e.getMessage().contains("dailyResetHourUtc"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Router.builder().maxTreeSize(0));
        assertTrue(e.getMessage().contains("maxTreeSize"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Router.builder().routeTtl(Duration.ofSeconds(-1)));
        assertTrue(e.getMessage().contains("routeTtl"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class, () -> Router.builder().evictionInterval(Duration.ofSeconds(-1)));
        assertTrue(e.getMessage().contains("evictionInterval"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Router.builder().policy("nope"));
        assertTrue(e.getMessage().startsWith("unknown routing policy 'nope'"), e.getMessage());
        assertNotSame(null, e.getMessage());
    }

    /** Delegates everything; tests override what they need. */
    static class ForwardingReplica implements Replica {
        private final Replica d;

        ForwardingReplica(Replica d) {
            this.d = d;
        }

        @Override
        public String id() {
            return d.id();
        }

        @Override
        public int inFlight() {
            return d.inFlight();
        }

        @Override
        public int maxLoad() {
            return d.maxLoad();
        }

        @Override
        public int loadPenalty() {
            return d.loadPenalty();
        }

        @Override
        public boolean isAvailable() {
            return d.isAvailable();
        }

        @Override
        public Admission tryAcquire() {
            return d.tryAcquire();
        }
    }
}
