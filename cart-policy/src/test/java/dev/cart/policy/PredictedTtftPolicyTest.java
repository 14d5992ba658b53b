package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicyProvider;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

/** {@link PredictedTtftPolicy}: its estimate, what it learns from leases, its bounds and its settings. */
class PredictedTtftPolicyTest {

    static final String SYSTEM = CacheAwarePolicyTest.SYSTEM;
    static final PromptKey KEY = PromptKey.ofText(SYSTEM + "and a question of its own", 64);

    /** A context over fakes with the match the test gives. */
    record Ctx(PromptKey key, List<Replica> candidates, Match match, RandomGenerator random) implements RoutingContext {
        @Override
        public RouteRequest request() {
            return RouteRequest.of(key);
        }

        @Override
        public long pendingPrefill(Replica replica) {
            return ((PrefillAwarePropertiesTest.Fake) replica).pendingPrefill();
        }
    }

    static PrefillAwarePropertiesTest.Fake fake(String id, int inFlight, long pending) {
        return new PrefillAwarePropertiesTest.Fake(id, inFlight, 0, pending);
    }

    @Test
    void picksTheSmallestPredictionAndSaysWhy() {
        PredictedTtftPolicy p = Policies.predictedTtft();
        Replica holder = fake("holder", 2, 0);
        Replica busyHolder = fake("busy", 0, 50_000);
        Replica cold = fake("cold", 0, 0);
        int held = KEY.length() - 64;
        Match m = new Match(
                held, KEY.length(), List.of(new Match.Holding(busyHolder, held), new Match.Holding(holder, held)));
        Choice c = p.choose(new Ctx(KEY, List.of(busyHolder, holder, cold), m, new SplittableRandom(1)));
        assertSame(holder, c.replica(), "64 units to compute behind 2 requests beat the whole key and 50k units");
        assertEquals(Reason.CACHE_HIT, c.reason());
        assertEquals(held, c.matchedLength());
        PredictedTtftPolicy.Estimate e = assertInstanceOf(PredictedTtftPolicy.Estimate.class, c.detail());
        assertEquals("holder", e.chosen().replica());
        assertEquals(64, e.chosen().units());
        assertEquals("cold", e.runnerUp().replica(), "the runner-up is the next smallest prediction");
        assertTrue(e.chosen().predictedMillis() < e.runnerUp().predictedMillis());
        assertEquals(3, e.candidates());
        String text = e.toString();
        assertTrue(text.contains("holder") && text.contains("cold"), text);
        assertFalse(text.contains("question"), "never prompt text: " + text);
    }

    @Test
    void divertsFromAHolderWhosePendingPrefillOutweighsTheMiss() {
        PredictedTtftPolicy p = Policies.predictedTtft();
        Replica holder = fake("holder", 1, 200_000);
        Replica cold = fake("cold", 1, 0);
        int held = KEY.length();
        Match m = new Match(held, KEY.length(), List.of(new Match.Holding(holder, held)));
        Choice c = p.choose(new Ctx(KEY, List.of(holder, cold), m, new SplittableRandom(1)));
        assertSame(cold, c.replica());
        assertEquals(Reason.HIT_OVERLOADED, c.reason(), "a longer prefix was passed over");
        assertEquals(0, c.matchedLength());
    }

    @Test
    void emptyKeysAndMissesAreReported() {
        PredictedTtftPolicy p = Policies.predictedTtft();
        Replica a = fake("a", 3, 0);
        Replica b = fake("b", 1, 0);
        Choice miss = p.choose(new Ctx(KEY, List.of(a, b), Match.none(KEY.length()), new SplittableRandom(1)));
        assertSame(b, miss.replica(), "equal work: the lighter decode load wins");
        assertEquals(Reason.MISS, miss.reason());
        Choice empty = p.choose(new Ctx(PromptKey.empty(), List.of(a, b), Match.none(0), new SplittableRandom(1)));
        assertEquals(Reason.EMPTY_TEXT, empty.reason());
        Choice alone = p.choose(new Ctx(KEY, List.of(a), Match.none(KEY.length()), new SplittableRandom(1)));
        assertNull(((PredictedTtftPolicy.Estimate) alone.detail()).runnerUp(), "no runner-up among one");
    }

    @Test
    void aHolderAboveItsShareOfThePoolsLoadIsPassedOver() {
        PredictedTtftPolicy p = Policies.predictedTtft(); // bounded_load_factor 2, slack 8
        int held = KEY.length();
        List<Replica> cold = List.of(fake("b", 0, 0), fake("c", 0, 0), fake("d", 0, 0));
        Replica busy = fake("holder", 20, 0);
        List<Replica> pool = new java.util.ArrayList<>(cold);
        pool.add(busy);
        Match m = new Match(held, KEY.length(), List.of(new Match.Holding(busy, held)));
        Choice c = p.choose(new Ctx(KEY, pool, m, new SplittableRandom(1)));
        assertTrue(cold.contains(c.replica()), "21 > ceil(2 x 21 / 4) = 11: " + c.detail());
        assertEquals(Reason.HIT_OVERLOADED, c.reason());
        PredictedTtftPolicy.Estimate e = (PredictedTtftPolicy.Estimate) c.detail();
        assertEquals(1, e.passedOver());
        assertTrue(e.toString().contains("1 at their load bound"), e.toString());

        Replica light = fake("holder", 5, 0);
        pool.set(3, light);
        Match m2 = new Match(held, KEY.length(), List.of(new Match.Holding(light, held)));
        Choice c2 = p.choose(new Ctx(KEY, pool, m2, new SplittableRandom(1)));
        assertSame(light, c2.replica(), "below the slack (8 in flight) the holder wins");
        assertEquals(Reason.CACHE_HIT, c2.reason());

        PredictedTtftPolicy greedy =
                PredictedTtftPolicy.builder().boundedLoadFactor(0).build();
        pool.set(3, busy);
        assertSame(
                busy,
                greedy.choose(new Ctx(KEY, pool, m, new SplittableRandom(1))).replica(),
                "factor 0: no bound but max_load, the holder's short tail wins");
    }

    /**
     * One prefix every request shares, nothing ever finishing: with the bound no replica takes more than
     * its share; without it, the holders take nearly everything.
     */
    @Test
    void aSharedPrefixSpreadsWithinTheBound() {
        for (double factor : new double[] {2, 0}) {
            SplittableRandom rnd = new SplittableRandom(3);
            try (Router router = Router.builder()
                    .replicas(ReplicaSets.MANAGED.of("a", "b", "c", "d"))
                    .policy(PredictedTtftPolicy.builder()
                            .boundedLoadFactor(factor)
                            .build())
                    .random(() -> rnd)
                    .ticker(() -> 0L)
                    .firstTokenReports(true)
                    .evictionInterval(Duration.ZERO)
                    .build()) {
                java.util.Map<String, Integer> count = new java.util.TreeMap<>();
                List<RouteDecision> open = new java.util.ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText(SYSTEM + " q" + i, 64)));
                    open.add(d);
                    d.lease().firstToken(); // prefilled at once: only the in-flight load stays
                    count.merge(d.replica().id(), 1, Integer::sum);
                }
                int max = count.values().stream()
                        .mapToInt(Integer::intValue)
                        .max()
                        .orElseThrow();
                if (factor > 0) {
                    assertTrue(max <= 2 * 200 / 4, "at most twice the mean: " + count);
                } else {
                    assertTrue(max > 2 * 200 / 4, "unbounded, the holder keeps more: " + count);
                }
                open.forEach(d -> d.lease().close());
            }
        }
    }

    /** A router over two replicas whose ticker the test moves. */
    static final class Bench implements AutoCloseable {
        final AtomicLong now = new AtomicLong();
        final PredictedTtftPolicy policy;
        final ReplicaSet set = ReplicaSets.MANAGED.of("a", "b");
        final Router router;

        Bench(PredictedTtftPolicy policy) {
            this.policy = policy;
            SplittableRandom rnd = new SplittableRandom(7);
            this.router = Router.builder()
                    .replicas(set)
                    .policy(policy)
                    .random(() -> rnd)
                    .ticker(now::get)
                    .firstTokenReports(true)
                    .evictionInterval(Duration.ZERO)
                    .build();
        }

        /**
         * Routes one request, lets {@code factor} times its predicted TTFT pass, reports the first token
         * and closes the lease; returns the decision.
         */
        RouteDecision serve(PromptKey key, Map<String, Double> factors) {
            return serveTogether(List.of(key), factors).get(0);
        }

        /**
         * Routes {@code keys} at once, then gives each its first token at {@code factor} times the prior's
         * prediction for the work it was routed behind, in time order, closing each lease then.
         */
        List<RouteDecision> serveTogether(List<PromptKey> keys, Map<String, Double> factors) {
            List<RouteDecision> ds = new java.util.ArrayList<>();
            for (PromptKey k : keys) {
                ds.add(router.choose(RouteRequest.of(k)));
            }
            long start = now.get();
            java.util.TreeMap<Long, List<RouteDecision>> byTime = new java.util.TreeMap<>();
            for (RouteDecision d : ds) {
                PredictedTtftPolicy.Estimate e = (PredictedTtftPolicy.Estimate) d.detail();
                double truth = factors.get(d.replica().id())
                        * policy.prior().predict(e.chosen().units(), e.chosen().load());
                byTime.computeIfAbsent(start + (long) (truth * 1e6), t -> new java.util.ArrayList<>())
                        .add(d);
            }
            byTime.forEach((t, list) -> {
                now.set(t);
                for (RouteDecision d : list) {
                    d.lease().firstToken();
                    d.lease().succeeded();
                    d.lease().close();
                }
            });
            return ds;
        }

        PredictedTtftPolicy.ReplicaStats stats(String id) {
            return policy.replicaStats().stream()
                    .filter(s -> s.replica().equals(id))
                    .findFirst()
                    .orElseThrow();
        }

        @Override
        public void close() {
            router.close();
        }
    }

    static List<PromptKey> batch(int i, int n) {
        List<PromptKey> keys = new java.util.ArrayList<>();
        for (int k = 0; k < n; k++) {
            keys.add(PromptKey.ofText("prompt " + i + "/" + k + " " + SYSTEM, 64));
        }
        return keys;
    }

    @Test
    void learnsEachReplicasSpeedFromFirstTokensOnTheRoutersTicker() {
        try (Bench b = new Bench(Policies.predictedTtft())) {
            Map<String, Double> truth = Map.of("a", 1.0, "b", 3.0);
            int toA = 0;
            int toB = 0;
            for (int i = 0; i < 200; i++) {
                for (RouteDecision d : b.serveTogether(batch(i, 4), truth)) {
                    if (i >= 100) {
                        toA += d.replica().id().equals("a") ? 1 : 0;
                        toB += d.replica().id().equals("b") ? 1 : 0;
                    }
                }
            }
            double fa = b.stats("a").speeds().prefillMillisPerKiloUnit();
            double fb = b.stats("b").speeds().prefillMillisPerKiloUnit();
            assertEquals(3.0, fb / fa, 0.05, "b learned three times slower: " + b.policy.replicaStats());
            assertTrue(toB > 0 && toA >= 2 * toB, "the slow replica takes the overflow: a " + toA + ", b " + toB);
            assertTrue(b.stats("b").errorSamples() > 0);
            assertTrue(b.policy.estimateErrorP50() < 0.05, "error p50 " + b.policy.estimateErrorP50());
        }
        try (Bench b = new Bench(Policies.predictedTtft())) { // one at a time on an idle pool
            Map<String, Double> truth = Map.of("a", 1.0, "b", 3.0);
            int toB = 0;
            for (int i = 0; i < 100; i++) {
                RouteDecision d = b.serve(PromptKey.ofText("prompt " + i + " " + SYSTEM, 64), truth);
                toB += i >= 10 && d.replica().id().equals("b") ? 1 : 0;
            }
            assertEquals(
                    0, toB, "once it looks slower, the idle slow replica gets nothing: " + b.policy.replicaStats());
        }
    }

    @Test
    void oneStallMovesTheModelABoundedStep() {
        try (Bench b = new Bench(Policies.predictedTtft())) {
            Map<String, Double> even = Map.of("a", 1.0, "b", 1.0);
            for (int i = 0; i < 100; i++) {
                b.serve(PromptKey.ofText("prompt " + i + " " + SYSTEM, 64), even);
            }
            double before = b.stats("a").speeds().prefillMillisPerKiloUnit();
            // a stall: the first token comes 10,000 times later than predicted
            for (int i = 0; ; i++) {
                RouteDecision d = b.serve(PromptKey.ofText("stall " + i, 64), Map.of("a", 10_000.0, "b", 1.0));
                if (d.replica().id().equals("a")) {
                    break;
                }
            }
            double after = b.stats("a").speeds().prefillMillisPerKiloUnit();
            double step = Math.exp(b.policy.config().learningRate() * Math.log(PredictedTtftPolicy.OBSERVATION_BOUND));
            assertTrue(after > before, "it learned something");
            assertTrue(after <= before * step * 1.0001, before + " -> " + after + " (at most x" + step + ")");
        }
    }

    @Test
    void aStalledReplicaIsCappedAgainstThePoolAndTriedAgain() {
        PredictedTtftPolicy p = Policies.predictedTtft();
        try (Bench b = new Bench(p)) {
            Map<String, Double> stalled = Map.of("a", 1.0, "b", 1e6);
            for (int i = 0; i < 100; i++) {
                b.serveTogether(batch(i, 40), stalled);
            }
            assertTrue(
                    b.stats("b").speeds().prefillMillisPerKiloUnit()
                            > 10 * b.stats("a").speeds().prefillMillisPerKiloUnit(),
                    String.valueOf(b.policy.replicaStats()));
        }
        // whatever it learned, b's estimate is at most 16x a's for the same work: with a that much busier, b wins
        Replica a = fake("a", 0, 100_000_000L);
        Replica b2 = fake("b", 0, 0);
        Choice c = p.choose(new Ctx(KEY, List.of(a, b2), Match.none(KEY.length()), new SplittableRandom(1)));
        PredictedTtftPolicy.Estimate e = (PredictedTtftPolicy.Estimate) c.detail();
        assertSame(b2, c.replica(), String.valueOf(e));
        assertTrue(e.chosen().speeds().prefillMillisPerKiloUnit()
                <= PredictedTtftPolicy.POOL_BOUND * e.runnerUp().speeds().prefillMillisPerKiloUnit() * 1.0001);
    }

    @Test
    void aLeaseClosedWithoutFirstTokenCountsAsALowerBound() {
        try (Bench b = new Bench(Policies.predictedTtft())) {
            for (int i = 0; i < 50; i++) {
                b.serve(PromptKey.ofText("prompt " + i + " " + SYSTEM, 64), Map.of("a", 1.0, "b", 1.0));
            }
            double before = b.stats("a").speeds().prefillMillisPerKiloUnit();
            long seen = b.stats("a").speeds().observations();
            RouteDecision d;
            do {
                d = b.router.choose(RouteRequest.of(PromptKey.ofText("timeout", 64)));
                if (!d.replica().id().equals("a")) {
                    d.lease().close();
                }
            } while (!d.replica().id().equals("a"));
            b.now.addAndGet(60_000_000_000L); // a minute without a first token, then the host gives up
            d.lease().failed();
            d.lease().close();
            assertTrue(b.stats("a").speeds().prefillMillisPerKiloUnit() > before);
            assertEquals(seen + 1, b.stats("a").speeds().observations(), "counted once");
        }
    }

    @Test
    void aNewReplicaStartsAtThePoolsMedianSpeed() {
        PredictedTtftPolicy p = Policies.predictedTtft();
        try (Bench b = new Bench(p)) {
            for (int i = 0; i < 100; i++) {
                b.serve(PromptKey.ofText("prompt " + i + " " + SYSTEM, 64), Map.of("a", 2.0, "b", 2.0));
            }
        }
        Replica fresh = fake("c", 0, 0);
        Choice c = p.choose(new Ctx(KEY, List.of(fresh), Match.none(KEY.length()), new SplittableRandom(1)));
        double factor =
                ((PredictedTtftPolicy.Estimate) c.detail()).chosen().speeds().prefillMillisPerKiloUnit()
                        / p.config().prefillMillisPerKiloUnit();
        assertEquals(2.0, factor, 0.2, "an unseen replica is predicted as the pool's median one");
    }

    @Test
    void settingsByNameAreCheckedAndNamed() {
        PredictedTtftPolicy p = (PredictedTtftPolicy) RoutingPolicyProvider.named("predicted_ttft")
                .create(Map.of(
                        "prior_prefill_ms_per_1k_units",
                        12.5,
                        "prior_decode_ms_per_request",
                        "0.25",
                        "prior_base_ms",
                        5,
                        "learning_rate",
                        0.2,
                        "bounded_load_factor",
                        2,
                        "bounded_load_slack",
                        4));
        assertEquals(new PredictedTtftPolicy.Config(12.5, 0.25, 5, 0.2, 2, 4), p.config());
        assertEquals(
                0,
                ((PredictedTtftPolicy)
                                RoutingPolicyProvider.named("predicted_ttft").create(Map.of("bounded_load_factor", 0)))
                        .config()
                        .boundedLoadFactor(),
                "0: no bound but max_load");
        IllegalArgumentException e;
        for (Object bad : List.of(0.5, -1, 1001)) {
            e = assertThrows(
                    IllegalArgumentException.class,
                    () -> RoutingPolicyProvider.named("predicted_ttft").create(Map.of("bounded_load_factor", bad)));
            assertTrue(
                    e.getMessage()
                            .startsWith("predicted_ttft: bounded_load_factor must be 0 (unbounded) or in [1, 1000]"),
                    e.getMessage());
        }
        e = assertThrows(
                IllegalArgumentException.class,
                () -> RoutingPolicyProvider.named("predicted_ttft").create(Map.of("bounded_load_slack", 0)));
        assertTrue(e.getMessage().startsWith("predicted_ttft: bounded_load_slack must be in [1, "), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> RoutingPolicyProvider.named("predicted_ttft").create(Map.of("learning_rate", 0)));
        assertTrue(e.getMessage().startsWith("predicted_ttft: learning_rate must be in"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> PredictedTtftPolicy.builder().priorPrefillMillisPerKiloUnit(-1));
        assertTrue(e.getMessage().startsWith("priorPrefillMillisPerKiloUnit must be in"), e.getMessage());
    }

    @Test
    void routesAreLearnedAsBefore() {
        try (Bench b = new Bench(Policies.predictedTtft())) {
            RouteDecision first = b.serve(KEY, Map.of("a", 1.0, "b", 1.0));
            assertEquals(Reason.MISS, first.reason());
            RouteDecision again = b.serve(KEY, Map.of("a", 1.0, "b", 1.0));
            assertSame(first.replica(), again.replica(), "the route was recorded and followed");
            assertEquals(Reason.CACHE_HIT, again.reason());
            assertEquals(KEY.length() - KEY.length() % 64, again.matchedLength());
        }
    }
}
