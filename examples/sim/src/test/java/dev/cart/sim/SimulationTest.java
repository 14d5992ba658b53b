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
}
