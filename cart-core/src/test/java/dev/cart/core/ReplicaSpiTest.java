package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.sync.RemoteLoad;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The router asks a replica for everything through the {@link Replica} SPI, so a set a host writes gets
 * what the managed one gets: half-open trials decided by the requests admitted as trials, outcomes
 * reported with the admission, no slot leaked when routing fails after the admission.
 */
class ReplicaSpiTest {

    private static final PromptKey KEY = PromptKey.ofText("system prompt ".repeat(20) + "question", 64);

    private final MutableClock clock = new MutableClock();

    private ReplicaSet single(ReplicaSets kind) {
        return kind.build(
                List.of(new ReplicaSpec("a", 10, 0)),
                new CircuitBreaker.Config(2, 1, Duration.ofSeconds(30), 1),
                clock);
    }

    private static Router router(ReplicaSet set) {
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .build();
    }

    private static void fail(Router router) {
        RouteDecision d = router.choose(RouteRequest.of(KEY));
        assertTrue(d.routed());
        d.lease().failed();
        d.lease().close();
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void failuresOpenTheCircuitAndOnlyTrialsDecideItWhileHalfOpen(ReplicaSets kind) {
        ReplicaSet set = single(kind);
        try (Router router = router(set)) {
            RouteDecision old = router.choose(RouteRequest.of(KEY)); // admitted while closed, still running
            fail(router);
            fail(router);
            assertFalse(router.choose(RouteRequest.of(KEY)).routed(), "open: no traffic");
            clock.advance(Duration.ofSeconds(30));
            RouteDecision trial = router.choose(RouteRequest.of(KEY));
            assertTrue(trial.routed(), "half-open: one trial, although an older request is still in flight");
            assertFalse(router.choose(RouteRequest.of(KEY)).routed(), "one trial at a time");
            old.lease().failed();
            old.lease().close();
            assertFalse(
                    router.choose(RouteRequest.of(KEY)).routed(),
                    "an old failure neither reopens the circuit nor frees the trial slot");
            trial.lease().succeeded();
            trial.lease().close();
            for (int i = 0; i < 3; i++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                assertTrue(d.routed(), "the trial's success closed the circuit");
                d.lease().close();
            }
            assertEquals(0, ReplicaSets.totalInFlight(set));
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aFailedTrialReopensTheCircuit(ReplicaSets kind) {
        ReplicaSet set = single(kind);
        try (Router router = router(set)) {
            fail(router);
            fail(router);
            clock.advance(Duration.ofSeconds(30));
            fail(router);
            clock.advance(Duration.ofSeconds(29));
            assertFalse(router.choose(RouteRequest.of(KEY)).routed(), "open again, for a whole timeout");
            clock.advance(Duration.ofSeconds(1));
            RouteDecision d = router.choose(RouteRequest.of(KEY));
            assertTrue(d.routed());
            d.lease().close();
            assertEquals(0, ReplicaSets.totalInFlight(set));
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aCancelledRequestSaysNothingAboutTheReplica(ReplicaSets kind) {
        ReplicaSet set = single(kind);
        try (Router router = router(set)) {
            for (int i = 0; i < 10; i++) {
                router.choose(RouteRequest.of(KEY)).lease().close(); // neither succeeded nor failed
            }
            assertTrue(set.replicas().get(0).isAvailable());
            assertEquals(0, ReplicaSets.totalInFlight(set));
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void theAdmissionGetsTheOutcomeTheLeaseRecorded(ReplicaSets kind) {
        ReplicaSet inner = kind.of("a");
        List<Outcome> released = new ArrayList<>();
        Replica a = inner.replicas().get(0);
        Replica watched = new RouterTest.ForwardingReplica(a) {
            @Override
            public Admission tryAcquire() {
                Admission admission = super.tryAcquire();
                return admission == null
                        ? null
                        : outcome -> {
                            released.add(outcome);
                            admission.release(outcome);
                        };
            }
        };
        try (Router router = Router.builder()
                .replicas(() -> List.of(watched))
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .build()) {
            RouteDecision ok = router.choose(RouteRequest.of(KEY));
            ok.lease().succeeded();
            ok.lease().close();
            ok.lease().close();
            RouteDecision bad = router.choose(RouteRequest.of(KEY));
            bad.lease().failed();
            bad.lease().close();
            router.choose(RouteRequest.of(KEY)).lease().close();
            assertEquals(List.of(Outcome.SUCCESS, Outcome.FAILURE, Outcome.CANCELLED), released);
            assertEquals(0, a.inFlight());
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void nothingLeaksWhenRoutingFailsAfterTheAdmission(ReplicaSets kind) {
        ReplicaSet set = kind.of("a");
        Replica a = set.replicas().get(0);
        AtomicInteger calls = new AtomicInteger();
        RemoteLoad throwing = new RemoteLoad() { // the last thing the router calls before handing out a decision
                    @Override
                    public long inFlight(String replicaId) {
                        return 0;
                    }

                    @Override
                    public long pendingPrefill(String replicaId) {
                        return 0;
                    }

                    @Override
                    public void localLoadChanged() {
                        if (calls.incrementAndGet() == 1) {
                            throw new IllegalStateException("the host's view failed");
                        }
                    }
                };
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .remoteLoad(throwing)
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(true)
                .build()) {
            assertThrows(IllegalStateException.class, () -> router.choose(RouteRequest.of(KEY)));
            assertEquals(0, a.inFlight(), "the admission was released");
            assertEquals(0, router.pendingPrefill(a), "the prefill estimate was taken back");
            RouteDecision d = router.choose(RouteRequest.of(KEY));
            assertSame(a, d.replica());
            assertEquals(d.prefillEstimate(), router.pendingPrefill(a));
            d.lease().close();
            assertEquals(0, a.inFlight());
            assertEquals(0, router.pendingPrefill(a));
        }
    }

    /** A policy that throws leaves nothing admitted. */
    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aThrowingPolicyAdmitsNothing(ReplicaSets kind) {
        ReplicaSet set = kind.of("a", "b");
        RoutingPolicy broken = new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext context) {
                throw new IllegalStateException("policy bug");
            }

            @Override
            public String name() {
                return "broken";
            }
        };
        try (Router router = Router.builder()
                .replicas(set)
                .policy(broken)
                .evictionInterval(Duration.ZERO)
                .build()) {
            assertThrows(IllegalStateException.class, () -> router.choose(RouteRequest.of(KEY)));
            assertEquals(0, ReplicaSets.totalInFlight(set));
        }
    }
}
