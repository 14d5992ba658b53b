package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Pending prefill: each routed request adds the part of its key the replica is expected to compute, and
 * takes it back exactly once, at its first token or when its lease closes; for the managed replica set
 * and for one a host wrote against the SPI alone.
 */
class PendingPrefillTest {

    static final String SYSTEM = "You answer questions about the travel documents below. ".repeat(20);

    private static Router router(ReplicaSet set, boolean reports) {
        SplittableRandom rnd = new SplittableRandom(2);
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(reports)
                .build();
    }

    private static long pending(Router router) {
        return ReplicaSets.totalPending(router);
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aRequestCountsWhatItsReplicaMustComputeUntilItsFirstToken(ReplicaSets kind) {
        ReplicaSet set = kind.of("a", "b");
        try (Router router = router(set, true)) {
            PromptKey first = PromptKey.ofText(SYSTEM + "question one", 64);
            RouteDecision miss = router.choose(RouteRequest.of(first));
            assertEquals(first.length(), miss.prefillEstimate(), "a miss computes the whole key");
            assertEquals(first.length(), router.pendingPrefill(miss.replica()));

            PromptKey second = PromptKey.ofText(SYSTEM + "question two, a little longer", 64);
            RouteDecision hit = router.choose(RouteRequest.of(second));
            assertEquals(Reason.CACHE_HIT, hit.reason());
            assertSame(miss.replica(), hit.replica());
            assertEquals(second.length() - hit.matchedLength(), hit.prefillEstimate(), "a hit computes the rest");
            assertEquals(miss.prefillEstimate() + hit.prefillEstimate(), router.pendingPrefill(hit.replica()));

            miss.lease().firstToken();
            miss.lease().firstToken();
            assertEquals(hit.prefillEstimate(), router.pendingPrefill(hit.replica()), "taken back once");
            miss.lease().close();
            assertEquals(hit.prefillEstimate(), router.pendingPrefill(hit.replica()), "not again at the close");
            hit.lease().close();
            assertEquals(0, pending(router), "a lease closed without a first token takes its estimate back");
            hit.lease().firstToken();
            assertEquals(0, pending(router));
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void nothingCountsUntilTheHostReportsAFirstToken(ReplicaSets kind) {
        ReplicaSet set = kind.of("a");
        try (Router router = router(set, false)) {
            PromptKey key = PromptKey.ofText(SYSTEM + "q", 64);
            RouteDecision before = router.choose(RouteRequest.of(key));
            assertEquals(key.length(), before.prefillEstimate(), "the estimate is known either way");
            assertEquals(0, pending(router), "a host that never reports would leave it counted until the end");
            RouteDecision other = router.choose(RouteRequest.of(key));
            other.lease().firstToken(); // the host reports first tokens: counting starts
            assertEquals(0, pending(router), "what was not counted is not taken back");
            RouteDecision after = router.choose(RouteRequest.of(PromptKey.ofText(SYSTEM + "another", 64)));
            assertEquals(after.prefillEstimate(), pending(router));
            before.lease().close();
            other.lease().close();
            after.lease().close();
            assertEquals(0, pending(router));
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aDecisionWithoutAReplicaHasNothingToTakeBack(ReplicaSets kind) {
        ReplicaSet set = kind.build(List.of(new ReplicaSpec("a", 1, 0)));
        try (Router router = router(set, true)) {
            RouteDecision held = router.choose(RouteRequest.of(PromptKey.ofText(SYSTEM, 64)));
            RouteDecision none = router.choose(RouteRequest.of(PromptKey.ofText(SYSTEM, 64)));
            assertFalse(none.routed());
            assertEquals(0, none.prefillEstimate());
            none.lease().firstToken();
            none.lease().close();
            assertEquals(held.prefillEstimate(), pending(router));
            held.lease().close();
            assertEquals(0, pending(router));
        }
    }

    /** One step: open a lease for one of a few keys, or act on one of the open leases. */
    record Step(int action, int which) {}

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void randomInterleavingsKeepEveryReplicasCountEqualToItsRequestsAwaitingAFirstToken(ReplicaSets kind) {
        qt().withFixedSeed(11L)
                .withExamples(300)
                .forAll(lists().of(integers().between(0, 6).zip(integers().between(0, 30), Step::new))
                        .ofSizeBetween(1, 80))
                .checkAssert(steps -> {
                    ReplicaSet set = kind.build(List.of(
                            new ReplicaSpec("a", 4, 0), new ReplicaSpec("b", 6, 2), new ReplicaSpec("c", 3, 0)));
                    try (Router router = router(set, true)) {
                        List<RouteDecision> open = new ArrayList<>();
                        Set<RouteDecision> prefilled = new HashSet<>();
                        for (Step s : steps) {
                            if (s.action() <= 1 || open.isEmpty()) {
                                String text = SYSTEM.substring(0, 200 + 37 * (s.which() % 5)) + " q" + s.which();
                                RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText(text, 64)));
                                if (d.routed()) {
                                    open.add(d);
                                }
                            } else {
                                RouteDecision d = open.get(s.which() % open.size());
                                switch (s.action()) {
                                    case 2, 3 -> {
                                        d.lease().firstToken();
                                        prefilled.add(d);
                                    }
                                    case 4 -> d.lease().succeeded(new ServedUsage(100, 40));
                                    case 5 -> d.lease().failed();
                                    default -> {
                                        d.lease().close();
                                        d.lease().close();
                                        open.remove(d);
                                    }
                                }
                            }
                            Map<Replica, Long> expected = new HashMap<>();
                            for (RouteDecision d : open) {
                                if (!prefilled.contains(d)) {
                                    expected.merge(d.replica(), (long) d.prefillEstimate(), Long::sum);
                                }
                            }
                            for (Replica r : set.replicas()) {
                                assertEquals(expected.getOrDefault(r, 0L), router.pendingPrefill(r), r.id());
                            }
                        }
                        open.forEach(d -> d.lease().close());
                        assertEquals(0, pending(router));
                        assertEquals(0, ReplicaSets.totalInFlight(set));
                    }
                });
    }
}
