package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.Outcome;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.TreeProbe;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Routing invariants over random pools, loads, health states and keys, for every shipped policy, over the
 * managed replica set and over one a host wrote against the SPI alone.
 */
class PolicyPropertiesTest {

    static final List<Supplier<RoutingPolicy>> ALL = List.of(
            Policies::cacheAware,
            () -> CacheAwarePolicy.builder()
                    .guard(CacheAwarePolicy.Guard.MEDIAN)
                    .build(),
            () -> CacheAwarePolicy.builder()
                    .guard(CacheAwarePolicy.Guard.BOUNDED_LOAD)
                    .build(),
            () -> CacheAwarePolicy.builder()
                    .missPlacement(CacheAwarePolicy.MissPlacement.CONSISTENT_HASH)
                    .build(),
            Policies::roundRobin,
            Policies::random,
            Policies::leastLoaded,
            Policies::powerOfTwo,
            () -> Policies.consistentHash(1.25),
            () -> Policies.consistentHash(0),
            Policies::predictedTtft);

    /**
     * A random pool state: per replica a state code (0 healthy, 1 unhealthy, 2 circuit open, 3 at cap,
     * 4 excluded), plus a load.
     */
    record PoolState(List<Integer> states, List<Integer> loads, int policy, int seed) {}

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void neverRoutesToAReplicaThatCannotTakeTheRequest(ReplicaSets kind) {
        qt().withFixedSeed(21L)
                .withExamples(500)
                .forAll(
                        lists().of(integers().between(0, 4)).ofSizeBetween(1, 8),
                        lists().of(integers().between(0, 6)).ofSize(8),
                        integers().between(0, ALL.size() - 1),
                        integers().between(0, 1000))
                .checkAssert((states, loads, policy, seed) -> check(kind, new PoolState(states, loads, policy, seed)));
    }

    private static void check(ReplicaSets kind, PoolState s) {
        List<ReplicaSpec> specs = new ArrayList<>();
        for (int i = 0; i < s.states().size(); i++) {
            specs.add(new ReplicaSpec("http://r" + i, 4, i % 3));
        }
        ReplicaSet set =
                kind.build(specs, new CircuitBreaker.Config(1, 1, Duration.ofSeconds(60), 1), new MutableTime());
        List<Replica> excluded = new ArrayList<>();
        List<Runnable> cleanup = new ArrayList<>();
        for (int i = 0; i < s.states().size(); i++) {
            Replica m = set.replicas().get(i);
            int load = Math.min(s.loads().get(i), 3);
            switch (s.states().get(i)) {
                case 1 -> kind.makeUnhealthy(m);
                case 2 -> {
                    Replica.Admission a = m.tryAcquire();
                    assertTrue(a != null);
                    a.release(Outcome.FAILURE);
                }
                case 3 -> load = 4;
                case 4 -> excluded.add(m);
                default -> {}
            }
            for (int k = 0; k < load; k++) {
                Replica.Admission a = m.tryAcquire();
                if (a != null) {
                    cleanup.add(() -> a.release(Outcome.CANCELLED));
                }
            }
        }
        SplittableRandom rnd = new SplittableRandom(s.seed());
        try (Router router = Router.builder()
                .replicas(set)
                .policy(ALL.get(s.policy()).get())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build()) {
            // Teach the tree a few prompts on every replica, usable or not, so hits are possible.
            for (int i = 0; i < set.replicas().size(); i++) {
                TreeProbe.insert(
                        router,
                        PromptKey.ofText(CacheAwarePolicyTest.SYSTEM + i, 64),
                        set.replicas().get(i));
            }
            for (int q = 0; q < 20; q++) {
                int which = rnd.nextInt(set.replicas().size() + 2);
                PromptKey key = which == 0
                        ? PromptKey.empty()
                        : PromptKey.ofText(CacheAwarePolicyTest.SYSTEM + (which - 1) + " more", 64);
                List<Replica> usable = new ArrayList<>();
                for (Replica m : set.replicas()) {
                    if (!excluded.contains(m) && m.isAvailable() && m.inFlight() < m.maxLoad()) {
                        usable.add(m);
                    }
                }
                RouteDecision d = router.choose(RouteRequest.of(key).excluding(excluded));
                if (usable.isEmpty()) {
                    assertFalse(d.routed());
                    assertEquals(Reason.NO_REPLICA, d.reason());
                } else {
                    assertTrue(d.routed(), "a usable replica exists");
                    assertTrue(usable.contains(d.replica()), "chose " + d.replica() + " outside " + usable);
                }
                d.lease().close();
            }
        }
        cleanup.forEach(Runnable::run);
        assertEquals(0, ReplicaSets.totalInFlight(set));
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void missesSpreadEvenlyWithNoIndexBias(ReplicaSets kind) {
        int n = 8;
        int requests = 8_000;
        for (Supplier<RoutingPolicy> p : List.<Supplier<RoutingPolicy>>of(
                Policies::cacheAware,
                Policies::leastLoaded,
                Policies::random,
                Policies::powerOfTwo,
                () -> Policies.consistentHash(0))) {
            ReplicaSet set = pool(kind, n);
            SplittableRandom rnd = new SplittableRandom(99);
            Map<Replica, Integer> counts = new HashMap<>();
            try (Router router = Router.builder()
                    .replicas(set)
                    .policy(p.get())
                    .random(() -> rnd)
                    .evictionInterval(Duration.ZERO)
                    .build()) {
                for (int i = 0; i < requests; i++) {
                    // Unique from the first block: every request is a miss for the cache-aware policy.
                    RouteDecision d =
                            router.choose(RouteRequest.of(PromptKey.ofText(i + " unique prompt ".repeat(8), 64)));
                    counts.merge(d.replica(), 1, Integer::sum);
                    d.lease().close();
                }
            }
            double expected = (double) requests / n;
            double chi2 = 0;
            for (Replica r : set.replicas()) {
                double o = counts.getOrDefault(r, 0);
                chi2 += (o - expected) * (o - expected) / expected;
            }
            // 7 degrees of freedom: P(chi2 > 24.32) = 0.001 for a uniform choice.
            assertTrue(chi2 < 24.32, p.get().name() + " spread misses unevenly: chi2=" + chi2 + " " + counts);
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void sameKeyStaysWhileLoadsStayBalanced(ReplicaSets kind) {
        qt().withFixedSeed(23L)
                .withExamples(100)
                .forAll(integers().between(2, 8), integers().between(0, 10_000))
                .checkAssert((n, salt) -> {
                    ReplicaSet set = pool(kind, n);
                    try (Router router = router(set)) {
                        String prompt = CacheAwarePolicyTest.SYSTEM + salt;
                        RouteDecision first = router.choose(RouteRequest.of(PromptKey.ofText(prompt, 64)));
                        first.lease().close();
                        for (int i = 0; i < 5; i++) {
                            RouteDecision d =
                                    router.choose(RouteRequest.of(PromptKey.ofText(prompt + " turn " + i, 64)));
                            assertEquals(first.replica(), d.replica());
                            d.lease().close();
                        }
                    }
                });
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void removingAReplicaRemapsOnlyTheKeysItOwned(ReplicaSets kind) {
        List<String> ids = List.of("http://a:1", "http://b:1", "http://c:1", "http://d:1", "http://e:1");
        for (double factor : new double[] {0, 1.25}) {
            Map<Integer, String> before = place(kind, ids, factor);
            List<String> fewer = new ArrayList<>(ids);
            fewer.remove("http://c:1");
            Map<Integer, String> after = place(kind, fewer, factor);
            int moved = 0;
            for (var e : before.entrySet()) {
                if (!e.getValue().equals("http://c:1")) {
                    assertEquals(e.getValue(), after.get(e.getKey()), "key " + e.getKey() + " moved");
                } else {
                    moved++;
                }
            }
            assertTrue(moved > 0 && moved < before.size());
        }
    }

    private static Map<Integer, String> place(ReplicaSets kind, List<String> ids, double factor) {
        Map<Integer, String> out = new HashMap<>();
        try (Router router = Router.builder()
                .replicas(kind.of(ids.toArray(String[]::new)))
                .policy(RoutingPolicyProvider.named("consistent_hash").create(Map.of("hash_load_factor", factor)))
                .evictionInterval(Duration.ZERO)
                .build()) {
            for (int k = 0; k < 500; k++) {
                RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText("conversation " + k, 64)));
                out.put(k, d.replica().id());
                d.lease().close();
            }
        }
        return out;
    }

    @Test
    void everyShippedPolicyIsAvailableByName() {
        for (String name : List.of(
                "cache_aware",
                "round_robin",
                "random",
                "least_loaded",
                "power_of_two",
                "consistent_hash",
                "predicted_ttft")) {
            RoutingPolicy p = RoutingPolicyProvider.named(name).create(Map.of());
            assertEquals(name, p.name());
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void hotPrefixWithAGuardDoesNotPileOnOneReplica(ReplicaSets kind) {
        ReplicaSet set = pool(kind, 4);
        List<RouteDecision> open = new ArrayList<>();
        try (Router router = router(set)) {
            for (int i = 0; i < 40; i++) { // 40 concurrent requests sharing one long prefix
                open.add(router.choose(RouteRequest.of(PromptKey.ofText(CacheAwarePolicyTest.SYSTEM + i, 64))));
            }
            int max = set.replicas().stream().mapToInt(Replica::inFlight).max().orElseThrow();
            assertTrue(max <= 40 / 4 + 8 + 1, "max in flight " + max + " stays within the abs threshold of the mean");
            open.forEach(d -> d.lease().close());
        }
        assertEquals(0, ReplicaSets.totalInFlight(set));
    }

    /** {@code n} replicas of 64 slots, as {@link CacheAwarePolicyTest#pool} makes them. */
    static ReplicaSet pool(ReplicaSets kind, int n) {
        List<ReplicaSpec> specs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            specs.add(new ReplicaSpec("http://r" + i, 64, 0));
        }
        return kind.build(specs);
    }

    /** The default cache-aware policy with a seeded random source. */
    static Router router(ReplicaSet set) {
        SplittableRandom rnd = new SplittableRandom(7);
        return Router.builder()
                .replicas(set)
                .policy(Policies.cacheAware())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    /** A clock for the circuit breaker; never advanced here. */
    static final class MutableTime extends java.time.Clock {
        @Override
        public java.time.ZoneId getZone() {
            return java.time.ZoneOffset.UTC;
        }

        @Override
        public java.time.Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public java.time.Instant instant() {
            return java.time.Instant.parse("2026-01-01T00:00:00Z");
        }
    }
}
