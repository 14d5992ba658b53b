package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link PredictedTtftPolicy} over random pools (that it never routes to a replica that
 * cannot take the request is checked with every policy in {@link PolicyPropertiesTest}).
 */
class PredictedTtftPropertiesTest {

    @Test
    void identicalReplicasWithoutCacheSpreadLikeLeastLoaded() {
        qt().withFixedSeed(23L)
                .withExamples(500)
                .forAll(
                        lists().of(integers().between(0, 12)).ofSizeBetween(1, 10),
                        integers().between(0, 4000),
                        integers().between(0, 1000))
                .checkAssert((loads, keyChars, seed) -> {
                    List<Replica> pool = new ArrayList<>();
                    for (int i = 0; i < loads.size(); i++) {
                        pool.add(PredictedTtftPolicyTest.fake("r" + i, loads.get(i), 0));
                    }
                    PromptKey key = PromptKey.ofText("x".repeat(keyChars), 64);
                    PredictedTtftPolicy p = Policies.predictedTtft();
                    int min = loads.stream().mapToInt(Integer::intValue).min().orElseThrow();
                    int[] picked = new int[pool.size()];
                    SplittableRandom rnd = new SplittableRandom(seed);
                    for (int k = 0; k < 200; k++) {
                        Choice c = p.choose(new PredictedTtftPolicyTest.Ctx(key, pool, Match.none(key.length()), rnd));
                        assertEquals(min, c.replica().inFlight(), "least loaded: " + pool);
                        picked[pool.indexOf(c.replica())]++;
                    }
                    for (int i = 0; i < pool.size(); i++) { // ties at random: every least-loaded one is drawn
                        assertEquals(loads.get(i) == min, picked[i] > 0, "replica " + i + " of " + pool);
                    }
                });
    }

    /**
     * A pool of identical replicas serves batches of requests (each batch routed at once, then each
     * request's first token comes at the prior's prediction for the work it was routed behind, times its
     * replica's true slowness); halfway, replica 0 becomes {@code slowdown} times slower. Within 400 requests
     * of the pool after that, its share of the next 400 falls to at most 0.6 of a fair share.
     */
    @Test
    void aReplicaWhoseMeasuredSpeedDropsLosesTrafficWithinABoundedNumberOfRequests() {
        qt().withFixedSeed(29L)
                .withExamples(60)
                .forAll(
                        integers().between(2, 6),
                        integers().between(3, 20),
                        integers().between(2, 12),
                        integers().between(0, 1000))
                .checkAssert((n, slowdown, batch, seed) -> {
                    String[] ids = new String[n];
                    for (int i = 0; i < n; i++) {
                        ids[i] = "r" + i;
                    }
                    PredictedTtftPolicy p = Policies.predictedTtft();
                    AtomicLong now = new AtomicLong();
                    SplittableRandom rnd = new SplittableRandom(seed);
                    try (Router router = Router.builder()
                            .replicas(ReplicaSets.MANAGED.build(java.util.Arrays.stream(ids)
                                    .map(ReplicaSpec::of)
                                    .toList()))
                            .policy(p)
                            .random(() -> rnd)
                            .ticker(now::get)
                            .firstTokenReports(true)
                            .evictionInterval(Duration.ZERO)
                            .build()) {
                        double[] slowness = new double[n];
                        java.util.Arrays.fill(slowness, 1.0);
                        int served = 0;
                        while (served < 400) {
                            served += serve(router, p, now, batch, served, slowness).length;
                        }
                        slowness[0] = slowdown;
                        int after = 0;
                        int toSlow = 0;
                        while (after < 800) {
                            int[] to = serve(router, p, now, batch, served + after, slowness);
                            for (int r : to) {
                                toSlow += after >= 400 && r == 0 ? 1 : 0;
                                after++;
                            }
                        }
                        double fair = (after - 400) / (double) n;
                        assertTrue(
                                toSlow <= 0.6 * fair,
                                "slowed replica got " + toSlow + " of " + (after - 400) + " (fair " + fair + "): "
                                        + p.replicaStats());
                    }
                });
    }

    /** Serves one batch; returns the index of the replica each request went to. */
    private static int[] serve(
            Router router, PredictedTtftPolicy p, AtomicLong now, int batch, int first, double[] slowness) {
        List<RouteDecision> ds = new ArrayList<>();
        for (int k = 0; k < batch; k++) {
            ds.add(router.choose(RouteRequest.of(PromptKey.ofText("request " + (first + k) + " ".repeat(900), 64))));
        }
        long start = now.get();
        TreeMap<Long, List<RouteDecision>> byTime = new TreeMap<>();
        int[] to = new int[batch];
        for (int k = 0; k < batch; k++) {
            RouteDecision d = ds.get(k);
            int r = Integer.parseInt(d.replica().id().substring(1));
            to[k] = r;
            PredictedTtftPolicy.Estimate e = (PredictedTtftPolicy.Estimate) d.detail();
            double ms = slowness[r]
                    * p.prior().predict(e.chosen().units(), e.chosen().load());
            byTime.computeIfAbsent(start + (long) (ms * 1e6), t -> new ArrayList<>())
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
        return to;
    }
}
