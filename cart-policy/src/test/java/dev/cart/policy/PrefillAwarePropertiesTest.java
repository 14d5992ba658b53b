package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Candidates;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingContext;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The prefill-aware ranking of {@link CacheAwarePolicy}, checked against an oracle over random pools:
 * in-flight counts, penalties, pending prefill and what each replica holds.
 */
class PrefillAwarePropertiesTest {

    static final String SYSTEM = CacheAwarePolicyTest.SYSTEM;
    static final PromptKey KEY = PromptKey.ofText(SYSTEM + "and now a question that is only this request's own", 64);
    static final PromptKey SHORTER = PromptKey.ofText(SYSTEM, 64); // still a hit: over 80% of KEY
    static final PromptKey TINY = PromptKey.ofText(SYSTEM.substring(0, 130), 64); // under the threshold

    /** A replica whose load figures the test sets. */
    static final class Fake implements Replica {
        final String id;
        final int inFlight;
        final int penalty;
        final long pending;

        Fake(String id, int inFlight, int penalty, long pending) {
            this.id = id;
            this.inFlight = inFlight;
            this.penalty = penalty;
            this.pending = pending;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public int inFlight() {
            return inFlight;
        }

        @Override
        public int maxLoad() {
            return 1_000;
        }

        @Override
        public int loadPenalty() {
            return penalty;
        }

        @Override
        public boolean isAvailable() {
            return true;
        }

        @Override
        public Admission tryAcquire() {
            return outcome -> {};
        }

        /** What the router would count pending there ({@link Context#pendingPrefill}). */
        long pendingPrefill() {
            return pending;
        }

        @Override
        public String toString() {
            return id + "[inFlight=" + inFlight + " penalty=" + penalty + " pending=" + pending + "]";
        }
    }

    /**
     * One replica: in flight 0-12, a penalty (mostly 0), pending prefill in half-keys (0 to 1.5 keys, so
     * both sides of "at least the whole key"), and what it holds (0 nothing, 1 the whole key, 2 the
     * shorter hit, 3 a prefix too short to be a hit).
     */
    record Spec(int inFlight, int penalty, int pendingHalves, int holds) {}

    /** A guard configuration: the default, a tight one, or none. */
    static CacheAwarePolicy policy(int guard, boolean prefillAware) {
        CacheAwarePolicy.Builder b = CacheAwarePolicy.builder().prefillAware(prefillAware);
        return switch (guard) {
            case 0 -> b.build();
            case 1 -> b.balanceAbsThreshold(2).balanceRelThreshold(1.2).build();
            default ->
                b.balanceAbsThreshold(1_000_000).balanceRelThreshold(1_000_000).build();
        };
    }

    private static boolean overloaded(CacheAwarePolicy p, Replica r, long leastLoad) {
        long load = r.load();
        return load - leastLoad > p.config().balanceAbsThreshold()
                && load > leastLoad * p.config().balanceRelThreshold();
    }

    /** A context as the router would make it: these candidates, these holders, longest first. */
    record Context(RouteRequest request, List<Replica> candidates, Match match, RandomGenerator random)
            implements RoutingContext {
        @Override
        public long pendingPrefill(Replica replica) {
            return ((Fake) replica).pendingPrefill();
        }
    }

    private static Match match(List<Match.Holding> holders) {
        List<Match.Holding> sorted = new ArrayList<>(holders);
        sorted.sort(Comparator.comparingInt(Match.Holding::matchedLength).reversed());
        return new Match(sorted.isEmpty() ? 0 : sorted.get(0).matchedLength(), KEY.length(), sorted);
    }

    private static int held(Spec s) {
        return switch (s.holds()) {
            case 1 -> KEY.blockCount() * 64;
            case 2 -> SHORTER.blockCount() * 64;
            case 3 -> TINY.blockCount() * 64;
            default -> 0;
        };
    }

    /** The least (pending, load) over {@code rs}, as a pair. */
    private static long[] least(List<Fake> rs, boolean byPending) {
        long[] best = {Long.MAX_VALUE, Long.MAX_VALUE};
        for (Fake r : rs) {
            long p = byPending ? r.pendingPrefill() : 0;
            if (p < best[0] || (p == best[0] && r.load() < best[1])) {
                best[0] = p;
                best[1] = r.load();
            }
        }
        return best;
    }

    private static void check(List<Spec> specs, int guard, boolean prefillAware, int seed) {
        List<Fake> pool = new ArrayList<>();
        List<Match.Holding> holders = new ArrayList<>();
        for (int i = 0; i < specs.size(); i++) {
            Spec s = specs.get(i);
            Fake f = new Fake(
                    "r" + i, s.inFlight(), s.penalty() == 3 ? 2 : 0, (long) s.pendingHalves() * KEY.length() / 2);
            pool.add(f);
            if (held(s) > 0) {
                holders.add(new Match.Holding(f, held(s)));
            }
        }
        CacheAwarePolicy p = policy(guard, prefillAware);
        List<Replica> candidates = new ArrayList<>(pool);
        Choice c = p.choose(new Context(RouteRequest.of(KEY), candidates, match(holders), new SplittableRandom(seed)));
        Fake chosen = (Fake) c.replica();
        assertTrue(pool.contains(chosen), "chose a candidate");
        long leastLoad = pool.stream().mapToLong(Replica::load).min().orElseThrow();
        boolean anyIdle = pool.stream().anyMatch(r -> r.inFlight() == 0);
        // Eligible holders of each hit tier, longest first.
        int[] tiers = {KEY.blockCount() * 64, SHORTER.blockCount() * 64};
        boolean anyHitHolder = false;
        List<Fake> eligibleTier = null;
        int eligibleLength = 0;
        for (int tier : tiers) {
            List<Fake> eligible = new ArrayList<>();
            for (int i = 0; i < pool.size(); i++) {
                if (held(specs.get(i)) != tier) {
                    continue;
                }
                anyHitHolder = true;
                Fake f = pool.get(i);
                boolean busy = prefillAware && f.pendingPrefill() >= KEY.length() && anyIdle;
                if (!overloaded(p, f, leastLoad) && !busy) {
                    eligible.add(f);
                }
            }
            if (!eligible.isEmpty()) {
                eligibleTier = eligible;
                eligibleLength = tier;
                break;
            }
        }
        if (eligibleTier != null) {
            assertEquals(Reason.CACHE_HIT, c.reason(), "an eligible holder exists: " + pool);
            assertEquals(eligibleLength, c.matchedLength(), "the longest tier with an eligible holder");
            assertTrue(eligibleTier.contains(chosen), "chosen among the eligible holders: " + chosen);
            long[] best = least(eligibleTier, prefillAware);
            assertEquals(best[0], prefillAware ? chosen.pendingPrefill() : 0, "least pending holder: " + pool);
            assertEquals(best[1], chosen.load(), "then least loaded: " + pool);
            // the exact draw among tied holders: Candidates.least over the tier's eligible holders, in order, with the
            // context's random after the least-loaded draw
            SplittableRandom same = new SplittableRandom(seed);
            Candidates.least(candidates, Candidates.BY_LOAD, same);
            Replica expected = prefillAware
                    ? Candidates.leastByPendingPrefill(
                            eligibleTier, new Context(RouteRequest.of(KEY), candidates, match(holders), same))
                    : Candidates.least(eligibleTier, Candidates.BY_LOAD, same);
            assertSame(expected, chosen, "the tie drawn as Candidates.least draws it: " + pool);
        } else {
            assertEquals(anyHitHolder ? Reason.HIT_OVERLOADED : Reason.MISS, c.reason(), pool.toString());
            long[] best = least(pool, prefillAware);
            assertEquals(best[0], prefillAware ? chosen.pendingPrefill() : 0, "least pending replica: " + pool);
            assertEquals(best[1], chosen.load(), "then least loaded: " + pool);
        }
        if (prefillAware && anyIdle && chosen.pendingPrefill() >= KEY.length()) {
            assertFalse(
                    c.reason() == Reason.CACHE_HIT,
                    "a holder behind a whole key of prefill, with a " + "replica idle, is passed over");
        }
    }

    @Test
    void choicesMatchTheRankingRules() {
        qt().withFixedSeed(31L)
                .withExamples(2_000)
                .forAll(
                        lists().of(integers()
                                        .between(0, 12)
                                        .zip(
                                                integers().between(0, 3),
                                                integers().between(0, 3),
                                                integers().between(0, 3),
                                                Spec::new))
                                .ofSizeBetween(1, 6),
                        integers().between(0, 2),
                        integers().between(0, 1),
                        integers().between(0, 1_000))
                .checkAssert((specs, guard, aware, seed) -> check(specs, guard, aware == 1, seed));
    }

    @Test
    void withoutPrefillAwarenessPendingPrefillChangesNothing() {
        qt().withFixedSeed(37L)
                .withExamples(500)
                .forAll(
                        lists().of(integers()
                                        .between(0, 12)
                                        .zip(
                                                integers().between(0, 3),
                                                integers().between(0, 3),
                                                integers().between(0, 3),
                                                Spec::new))
                                .ofSizeBetween(1, 6),
                        integers().between(0, 2),
                        integers().between(0, 1_000))
                .checkAssert((specs, guard, seed) -> {
                    List<Spec> none = new ArrayList<>();
                    for (Spec s : specs) {
                        none.add(new Spec(s.inFlight(), s.penalty(), 0, s.holds()));
                    }
                    Choice with = choose(specs, guard, seed);
                    Choice without = choose(none, guard, seed);
                    assertEquals(without.reason(), with.reason());
                    assertEquals(without.replica().id(), with.replica().id());
                    assertEquals(without.matchedLength(), with.matchedLength());
                });
    }

    private static Choice choose(List<Spec> specs, int guard, int seed) {
        List<Replica> pool = new ArrayList<>();
        List<Match.Holding> holders = new ArrayList<>();
        for (int i = 0; i < specs.size(); i++) {
            Spec s = specs.get(i);
            Fake f = new Fake(
                    "r" + i, s.inFlight(), s.penalty() == 3 ? 2 : 0, (long) s.pendingHalves() * KEY.length() / 2);
            pool.add(f);
            if (s.holds() == 1 || s.holds() == 2) {
                holders.add(new Match.Holding(f, held(s)));
            }
        }
        return policy(guard, false)
                .choose(new Context(RouteRequest.of(KEY), pool, match(holders), new SplittableRandom(seed)));
    }

    /**
     * Through a real router whose host reports first tokens: a cold prompt goes where no prefill is queued,
     * not to the replica with the fewest requests when those are all still being computed.
     */
    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aColdPromptAvoidsTheReplicaWhosePrefillQueueIsLongest(ReplicaSets kind) {
        ReplicaSet set = kind.build(List.of(new ReplicaSpec("http://a", 64, 0), new ReplicaSpec("http://b", 64, 0)));
        SplittableRandom rnd = new SplittableRandom(5);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(Policies.cacheAware())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(true)
                .build()) {
            Replica a = set.replicas().get(0);
            Replica b = set.replicas().get(1);
            List<RouteDecision> open = new ArrayList<>();
            // b: three short requests decoding (first tokens in); a: one long cold prompt still computing.
            open.add(router.choose(RouteRequest.of(PromptKey.ofText("a long cold prompt ".repeat(200), 64))
                    .excluding(b)));
            for (int i = 0; i < 3; i++) {
                RouteDecision d = router.choose(
                        RouteRequest.of(PromptKey.ofText("short " + i, 64)).excluding(a));
                d.lease().firstToken();
                open.add(d);
            }
            assertEquals(1, a.inFlight());
            assertEquals(3, b.inFlight());
            assertTrue(router.pendingPrefill(a) > 0);
            assertEquals(0, router.pendingPrefill(b));
            RouteDecision cold =
                    router.choose(RouteRequest.of(PromptKey.ofText("another cold prompt ".repeat(100), 64)));
            assertEquals(Reason.MISS, cold.reason());
            assertEquals(b, cold.replica(), "fewer requests on a, but a whole prompt of prefill ahead");
            open.add(cold);
            open.forEach(d -> d.lease().close());
            assertEquals(0, ReplicaSets.totalInFlight(set));
            assertEquals(0, router.pendingPrefill(a) + router.pendingPrefill(b));
        }
    }

    /** Placement falls back to load alone when the router does not count prefill (no first-token reports). */
    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void withoutFirstTokenReportsPlacementIsByLoad(ReplicaSets kind) {
        ReplicaSet set = PolicyPropertiesTest.pool(kind, 3);
        SplittableRandom rnd = new SplittableRandom(5);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(Policies.cacheAware())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build()) {
            List<RouteDecision> open = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText(i + " unique ".repeat(60), 64)));
                open.add(d);
                int max = set.replicas().stream()
                        .mapToInt(Replica::inFlight)
                        .max()
                        .orElseThrow();
                int min = set.replicas().stream()
                        .mapToInt(Replica::inFlight)
                        .min()
                        .orElseThrow();
                assertTrue(max - min <= 1, "misses by load: " + set.replicas());
            }
            open.forEach(d -> d.lease().close());
        }
    }
}
