package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Small, fixed-seed runs of the whole simulation: router, replicas, workloads. */
class SimulationTest {

    /** 16 groups x 8 prompts sharing 1024-token system prompts, at a moderate rate. */
    static Workload smallSharedPrefix() {
        return Workloads.sharedPrefix(11, 16, 8, 1024, 64, 32).poisson(12, 11);
    }

    static RunResult run(Workload w, String policy) {
        return Simulation.builder().replicas(4).seed(5).policy(policy, Map.of()).build().run(w);
    }

    @Test
    void cacheAwareBeatsRoundRobinOnHitRatio() {
        Workload w = smallSharedPrefix();
        RunResult rr = run(w, "round_robin");
        RunResult affinity = run(w, "cache_aware");
        assertEquals(w.size(), rr.completed());
        assertEquals(w.size(), affinity.completed());
        // Round robin computes each group's system prompt on up to four replicas, cache_aware on one.
        assertTrue(affinity.hitRatio() > rr.hitRatio() + 0.15,
                "cache_aware " + affinity.hitRatio() + " vs round robin " + rr.hitRatio());
        assertTrue(affinity.hitRatio() <= affinity.idealHitRatio() + 1e-9);
        assertEquals(affinity.idealHitRatio(), rr.idealHitRatio());
        assertEquals(0.82, affinity.idealHitRatio(), 0.05);
    }

    @Test
    void aFixedSeedGivesTheSameRun() {
        Workload w = smallSharedPrefix();
        RunResult a = run(w, "cache_aware");
        RunResult b = run(w, "cache_aware");
        assertEquals(a.cachedTokens(), b.cachedTokens());
        assertEquals(a.ttftP99Millis(), b.ttftP99Millis());
        assertArrayEquals(a.routed(), b.routed());
        assertArrayEquals(a.trace().finished(), b.trace().finished());
    }

    @Test
    void aSessionSendsOneTurnAtATimeAndReusesItsHistory() {
        Workload w = Workloads.multiTurn(3, new Workloads.ChatSpec(3, 5, 256, 16, 32, 16, 32));
        // every turn arrives at time zero: only session ordering keeps them apart
        RunResult r = Simulation.builder().replicas(1).policy("round_robin", Map.of()).build().run(w);
        RunResult.Trace t = r.trace();
        java.util.Map<String, Integer> last = new java.util.HashMap<>();
        for (int i = 0; i < w.size(); i++) {
            Integer prev = last.put(w.requests().get(i).session(), i);
            if (prev != null) {
                assertTrue(t.sent()[i] >= t.finished()[prev], "turn sent before the previous answer");
                int prevPromptChars = w.requests().get(prev).replicaPrompt().length();
                assertTrue(t.cached()[i] >= prevPromptChars / 4 - 16,
                        "the previous turn's prompt is cached: " + t.cached()[i]);
            }
        }
    }

    @Test
    void aClosedLoopKeepsItsClientsBusyAndNoMore() {
        Workload w = Workloads.hotPrefix(2, new Workloads.HotSpec(60, 1.0, 256, 64, 16));
        RunResult r = Simulation.builder().replicas(2).closedLoop(3).policy("round_robin", Map.of()).build()
                .run(w);
        assertEquals(60, r.completed());
        int[] peak = r.peakInFlight();
        assertTrue(peak[0] + peak[1] <= 3 + 1, "at most three requests in flight: " + java.util.Arrays.toString(peak));
        RunResult.Trace t = r.trace();
        for (int i = 3; i < w.size(); i++) {
            int inFlight = 0;
            for (int j = 0; j < w.size(); j++) {
                if (j != i && t.sent()[j] <= t.sent()[i] && t.finished()[j] > t.sent()[i]) {
                    inFlight++;
                }
            }
            assertTrue(inFlight <= 2, "request " + i + " was sent with " + inFlight + " others in flight");
        }
    }

    @Test
    void theRoutersPendingPrefillFollowsTheEnginesQueue() {
        Workload w = Workloads.hotPrefix(4, new Workloads.HotSpec(200, 0.8, 1024, 64, 16)).poisson(20, 4);
        long[] seen = new long[2];
        Simulation.Probe probe = new Simulation.Probe() {
            @Override
            public void dispatched(long nanos, int request, dev.cart.core.RouteDecision d, int replica,
                                   Simulation.ReplicaState[] state) {
                assertTrue(d.replica().pendingPrefill() >= d.prefillEstimate(), "the request itself is counted");
                seen[0]++;
                if (state[replica].pendingPrefill() > 0) {
                    seen[1]++;
                }
            }
        };
        RunResult r = Simulation.builder().replicas(3).seed(2).policy("cache_aware", Map.of()).probe(probe).build()
                .run(w);
        assertEquals(200, r.completed()); // and the run checks that every count went back to zero
        assertEquals(200, seen[0]);
        assertTrue(seen[1] > 0, "some requests were queued behind prefill");
    }

    @Test
    void aHotPrefixSpreadsWhileThePoolIsIdleInsteadOfQueueingBehindItsFirstComputation() {
        Workload w = Workloads.hotPrefix(5, new Workloads.HotSpec(300, 1.0, 2048, 128, 64)).poisson(30, 5);
        RunResult now = run(w, "cache_aware");
        RunResult specified = Simulation.builder().replicas(4).seed(5)
                .policy("cache_aware", Map.of("prefill_aware", false)).deferDivertedRoutes(false).build().run(w);
        assertEquals(300, now.completed());
        // As specified, every request of the first ~0.3 s follows the first holder and waits for its cold
        // prefill; ranked by pending prefill, they go to the idle replicas instead.
        assertTrue(now.ttftMillis(0.97) < specified.ttftMillis(0.97),
                now.ttftMillis(0.97) + " ms vs " + specified.ttftMillis(0.97) + " ms");
        assertTrue(now.hitRatio() >= specified.hitRatio() - 0.01);
    }
}
