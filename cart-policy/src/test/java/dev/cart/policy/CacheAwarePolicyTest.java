package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.TreeProbe;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The specification's routing steps, one by one, through a real router. */
class CacheAwarePolicyTest {

    static final String SYSTEM = "You are a helpful assistant. ".repeat(40); // 1,160 chars

    static PromptKey key(String text) {
        return PromptKey.ofText(text, 64);
    }

    static Router router(ManagedReplicaSet set, RoutingPolicy policy) {
        SplittableRandom rnd = new SplittableRandom(7);
        return Router.builder()
                .replicas(set)
                .policy(policy)
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    static ManagedReplicaSet pool(int n) {
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
        for (int i = 0; i < n; i++) {
            b.add(new ReplicaSpec("http://r" + i, 64, 0));
        }
        return b.build();
    }

    /** Holds {@code n} in-flight slots on {@code r} (returns the leases so the test can close them). */
    static List<AutoCloseable> load(Replica r, int n) {
        List<AutoCloseable> held = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Replica.Admission a = r.tryAcquire();
            assertTrue(a != null);
            held.add(() -> a.release(dev.cart.core.Outcome.SUCCESS));
        }
        return held;
    }

    @Test
    void aRecordedPrefixIsFollowedAndALongerKeyToo() {
        ManagedReplicaSet set = pool(4);
        try (Router router = router(set, Policies.cacheAware())) {
            RouteDecision first = router.choose(RouteRequest.of(key(SYSTEM + "question one")));
            assertEquals(Reason.MISS, first.reason());
            first.lease().close();
            RouteDecision again = router.choose(RouteRequest.of(key(SYSTEM + "question one")));
            assertEquals(Reason.CACHE_HIT, again.reason());
            assertSame(first.replica(), again.replica());
            again.lease().close();
            RouteDecision longer = router.choose(RouteRequest.of(key(SYSTEM + "question one, and a follow-up turn")));
            assertEquals(Reason.CACHE_HIT, longer.reason());
            assertSame(first.replica(), longer.replica());
            assertTrue(longer.matchedRatio() > 0.9);
            longer.lease().close();
        }
    }

    @Test
    void aShortMatchBelowBothThresholdsIsAMiss() {
        ManagedReplicaSet set = pool(2);
        CacheAwarePolicy p = CacheAwarePolicy.builder()
                .threshold(0.5)
                .matchAbsThreshold(100_000)
                .build();
        try (Router router = router(set, p)) {
            router.choose(RouteRequest.of(key(SYSTEM))).lease().close();
            // shares 1,152 of 1,160 + 3,000 characters: ratio 0.28 < 0.5
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM + "x".repeat(3_000))));
            assertEquals(Reason.MISS, d.reason());
            // A miss reports what the chosen replica holds, which may be the short shared part.
            assertTrue(d.matchedRatio() < 0.5, "ratio " + d.matchedRatio());
            assertTrue(d.matchedLength() == 0 || d.matchedLength() == 1152, "matched " + d.matchedLength());
            d.lease().close();
        }
    }

    @Test
    void theAbsoluteThresholdCatchesALongSharedPrefixInAnEvenLongerPrompt() {
        ManagedReplicaSet set = pool(2);
        CacheAwarePolicy p = CacheAwarePolicy.builder()
                .threshold(0.9)
                .matchAbsThreshold(1_000)
                .build();
        try (Router router = router(set, p)) {
            RouteDecision first = router.choose(RouteRequest.of(key(SYSTEM)));
            first.lease().close();
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM + "y".repeat(20_000))));
            assertEquals(Reason.CACHE_HIT, d.reason(), "1,152 matched chars >= 1,000 though the ratio is 0.05");
            assertSame(first.replica(), d.replica());
            d.lease().close();
        }
    }

    @Test
    void absRelGuardDivertsOnlyWhenBothConditionsHold() throws Exception {
        ManagedReplicaSet set = pool(2);
        CacheAwarePolicy p = CacheAwarePolicy.builder()
                .balanceAbsThreshold(4)
                .balanceRelThreshold(2.0)
                .build();
        try (Router router = router(set, p)) {
            RouteDecision first = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            first.lease().close();
            Replica holder = first.replica();
            Replica other = set.replicas().get(0) == holder
                    ? set.replicas().get(1)
                    : set.replicas().get(0);

            // holder 5, other 0: abs 5 > 4 and 5 > 0 * 2 -> both hold -> divert
            List<AutoCloseable> h = load(holder, 5);
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            assertEquals(Reason.HIT_OVERLOADED, d.reason());
            assertSame(other, d.replica());
            d.lease().close();
            // The diversion taught the tree that other holds the prompt now: it is the better holder.
            d = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            assertEquals(Reason.CACHE_HIT, d.reason());
            assertSame(other, d.replica());
            d.lease().close();
            TreeProbe.removeReplica(router, other); // back to one holder for the threshold checks below

            // holder 5, other 2: abs 3 <= 4 -> stay
            List<AutoCloseable> o = load(other, 2);
            d = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            assertEquals(Reason.CACHE_HIT, d.reason());
            d.lease().close();

            // holder 9, other 5 (after adding): abs 4 <= 4 -> stay; holder 12, other 5: abs 7 > 4, rel 12 > 10 ->
            // divert
            h.addAll(load(holder, 4));
            o.addAll(load(other, 3));
            d = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            assertEquals(Reason.CACHE_HIT, d.reason());
            d.lease().close();
            h.addAll(load(holder, 3));
            d = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            assertEquals(Reason.HIT_OVERLOADED, d.reason());
            d.lease().close();
            TreeProbe.removeReplica(router, other);
            // holder 12, other 7: abs 5 > 4 but rel 12 <= 14 -> stay
            o.addAll(load(other, 2));
            d = router.choose(RouteRequest.of(key(SYSTEM + "q")));
            assertEquals(Reason.CACHE_HIT, d.reason());
            d.lease().close();
            for (AutoCloseable c : h) {
                c.close();
            }
            for (AutoCloseable c : o) {
                c.close();
            }
            assertEquals(0, set.totalInFlight());
        }
    }

    @Test
    void amongSeveralHoldersTheLeastLoadedWins() throws Exception {
        ManagedReplicaSet set = pool(3);
        try (Router router = router(
                set, CacheAwarePolicy.builder().balanceAbsThreshold(1_000).build())) {
            Replica a = set.replicas().get(0);
            Replica b = set.replicas().get(1);
            TreeProbe.insert(router, key(SYSTEM + "hot"), a);
            TreeProbe.insert(router, key(SYSTEM + "hot"), b);
            List<AutoCloseable> held = load(a, 3);
            held.addAll(load(b, 1));
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM + "hot")));
            assertEquals(Reason.CACHE_HIT, d.reason());
            assertSame(b, d.replica(), "both hold the prompt; b is less loaded");
            d.lease().close();
            for (AutoCloseable c : held) {
                c.close();
            }
        }
    }

    @Test
    void aHolderThatCannotTakeTheRequestMakesItAMissNotAnOverload() {
        ManagedReplicaSet set = pool(2);
        Replica a = set.replicas().get(0);
        try (Router router = router(set, Policies.cacheAware())) {
            TreeProbe.insert(router, key(SYSTEM), a);
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM)).excluding(a));
            assertNotSame(a, d.replica());
            assertEquals(Reason.MISS, d.reason(), "the holder is excluded (a retry), not overloaded");
            d.lease().close();
        }
    }

    @Test
    void medianGuard() throws Exception {
        ManagedReplicaSet set = pool(3);
        CacheAwarePolicy p =
                CacheAwarePolicy.builder().guard(CacheAwarePolicy.Guard.MEDIAN).build();
        try (Router router = router(set, p)) {
            Replica a = set.replicas().get(0);
            TreeProbe.insert(router, key(SYSTEM), a);
            // loads a=2, b=0, c=0 -> median 0 (taken as 1), 2 <= 2*1 -> stay
            List<AutoCloseable> held = load(a, 2);
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM)));
            assertEquals(Reason.CACHE_HIT, d.reason());
            d.lease().close();
            held.addAll(load(a, 1)); // a=3 > 2 -> divert
            d = router.choose(RouteRequest.of(key(SYSTEM)));
            assertEquals(Reason.HIT_OVERLOADED, d.reason());
            d.lease().close();
            for (AutoCloseable c : held) {
                c.close();
            }
        }
    }

    @Test
    void medianGuardComparesAHolderWithTheRestOfThePool() throws Exception {
        ManagedReplicaSet set = pool(4);
        CacheAwarePolicy p =
                CacheAwarePolicy.builder().guard(CacheAwarePolicy.Guard.MEDIAN).build();
        try (Router router = router(set, p)) {
            Replica a = set.replicas().get(0);
            Replica b = set.replicas().get(1);
            TreeProbe.insert(router, key(SYSTEM), a);
            TreeProbe.insert(router, key(SYSTEM), b);
            // a=4, b=4, c=0, d=0. The median of all four is 2 and 4 > 2 * 2 never holds, however busy the
            // two holders get; the median of the others (0, 0, 4) is 0, taken as 1: 4 > 2 -> divert.
            List<AutoCloseable> held = load(a, 4);
            held.addAll(load(b, 4));
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM)));
            assertEquals(Reason.HIT_OVERLOADED, d.reason());
            assertTrue(d.replica() != a && d.replica() != b);
            d.lease().close();
            for (AutoCloseable c : held) {
                c.close();
            }
        }
    }

    @Test
    void medianOfOthersLeavesOutOneCopyOfTheHoldersLoad() {
        qt().withFixedSeed(41L)
                .withExamples(500)
                .forAll(
                        lists().of(integers().between(0, 20)).ofSizeBetween(1, 9),
                        integers().between(0, 8))
                .checkAssert((loads, pick) -> {
                    long[] sorted = loads.stream()
                            .mapToLong(Integer::longValue)
                            .sorted()
                            .toArray();
                    long own = loads.get(pick % loads.size());
                    List<Long> others = new ArrayList<>();
                    for (long l : sorted) {
                        others.add(l);
                    }
                    others.remove(own);
                    long expected = others.isEmpty() ? 0 : others.get((others.size() - 1) / 2);
                    assertEquals(expected, CacheAwarePolicy.medianOfOthers(sorted, own), loads + " own " + own);
                });
    }

    @Test
    void hashPlacementLooksPastTheFirstMessage() {
        PromptKey a1 = PromptKey.textBuilder(64)
                .append(SYSTEM)
                .boundary()
                .append("Document A. ".repeat(100))
                .append("question one")
                .boundary()
                .build();
        PromptKey a2 = PromptKey.textBuilder(64)
                .append(SYSTEM)
                .boundary()
                .append("Document A. ".repeat(100))
                .append("question two")
                .boundary()
                .build();
        PromptKey b1 = PromptKey.textBuilder(64)
                .append(SYSTEM)
                .boundary()
                .append("Document B. ".repeat(100))
                .append("question one")
                .boundary()
                .build();
        PromptKey alone = PromptKey.textBuilder(64).append(SYSTEM).boundary().build();
        assertEquals(a1.anchorHash(), b1.anchorHash(), "the key's own anchor is the shared system prompt");
        assertEquals(CacheAwarePolicy.hashAnchor(a1), CacheAwarePolicy.hashAnchor(a2), "same document");
        assertNotEquals(CacheAwarePolicy.hashAnchor(a1), CacheAwarePolicy.hashAnchor(b1), "another document");
        assertEquals(alone.anchorHash(), CacheAwarePolicy.hashAnchor(alone), "one message: the key's anchor");
    }

    @Test
    void boundedLoadGuard() throws Exception {
        ManagedReplicaSet set = pool(4);
        CacheAwarePolicy p = CacheAwarePolicy.builder()
                .guard(CacheAwarePolicy.Guard.BOUNDED_LOAD)
                .build();
        try (Router router = router(set, p)) {
            Replica a = set.replicas().get(0);
            TreeProbe.insert(router, key(SYSTEM), a);
            List<AutoCloseable> held = new ArrayList<>();
            for (Replica r : set.replicas()) {
                held.addAll(load(r, 2));
            }
            // total 8, n 4: cap = ceil(1.25 * 9 / 4) = 3; a at 2 -> 3 <= 3 -> stay
            RouteDecision d = router.choose(RouteRequest.of(key(SYSTEM)));
            assertEquals(Reason.CACHE_HIT, d.reason());
            // a now at 3 (the lease is open), total 9: cap = ceil(1.25 * 10 / 4) = 4; 4 <= 4 -> stay
            RouteDecision d2 = router.choose(RouteRequest.of(key(SYSTEM)));
            assertEquals(Reason.CACHE_HIT, d2.reason());
            // a at 4, total 10: cap = ceil(1.25 * 11 / 4) = 4; 5 > 4 -> divert
            RouteDecision d3 = router.choose(RouteRequest.of(key(SYSTEM)));
            assertEquals(Reason.HIT_OVERLOADED, d3.reason());
            d.lease().close();
            d2.lease().close();
            d3.lease().close();
            for (AutoCloseable c : held) {
                c.close();
            }
        }
    }

    @Test
    void emptyTextGoesByLoad() {
        ManagedReplicaSet set = pool(2);
        try (Router router = router(set, Policies.cacheAware())) {
            RouteDecision d = router.choose(RouteRequest.empty());
            assertEquals(Reason.EMPTY_TEXT, d.reason());
            d.lease().close();
            assertEquals(0, router.treeStats().size());
        }
    }

    @Test
    void consistentHashMissPlacementIsTheSameAcrossIndependentRouters() {
        CacheAwarePolicy p = CacheAwarePolicy.builder()
                .missPlacement(CacheAwarePolicy.MissPlacement.CONSISTENT_HASH)
                .build();
        try (Router r1 = router(pool(5), p);
                Router r2 = router(pool(5), p)) {
            for (int i = 0; i < 50; i++) {
                PromptKey k = PromptKey.textBuilder(64)
                        .append("system " + i)
                        .boundary()
                        .append("q")
                        .build();
                RouteDecision d1 = r1.choose(RouteRequest.of(k));
                RouteDecision d2 = r2.choose(RouteRequest.of(k));
                assertEquals(Reason.MISS_HASHED, d1.reason());
                assertEquals(d1.replica().id(), d2.replica().id());
                d1.lease().close();
                d2.lease().close();
            }
        }
    }
}
