package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Small, fixed-seed runs of the whole simulation: router, replicas, workloads. */
class SimulationTest {

    /** 16 groups x 8 prompts sharing 1024-token system prompts, at a moderate rate. */
    static Workload smallSharedPrefix() {
        return Workloads.sharedPrefix(11, 16, 8, 1024, 64, 32).poisson(12, 11);
    }

    static RunResult run(Workload w, String policy) {
        return Simulation.builder()
                .replicas(4)
                .seed(5)
                .policy(policy, Map.of())
                .build()
                .run(w);
    }

    @Test
    void cacheAwareBeatsRoundRobinOnHitRatio() {
        Workload w = smallSharedPrefix();
        RunResult rr = run(w, "round_robin");
        RunResult affinity = run(w, "cache_aware");
        assertEquals(w.size(), rr.completed());
        assertEquals(w.size(), affinity.completed());
        // Round robin computes each group's system prompt on up to four replicas, cache_aware on one.
        assertTrue(
                affinity.hitRatio() > rr.hitRatio() + 0.15,
                "cache_aware " + affinity.hitRatio() + " vs round robin " + rr.hitRatio());
        assertTrue(affinity.hitRatio() <= affinity.idealHitRatio() + 1e-9);
        assertEquals(affinity.idealHitRatio(), rr.idealHitRatio());
        assertEquals(0.82, affinity.idealHitRatio(), 0.05);
    }

    @Test
    void predictedTtftSendsLessToSlowerReplicasAndReportsItsEstimateError() {
        Workload w = smallSharedPrefix();
        Simulation.Builder b = Simulation.builder().replicas(4).seed(5).slowdowns(1, 1, 3, 3);
        RunResult pt = b.policy("predicted_ttft", Map.of()).build().run(w);
        RunResult ll = b.policy("least_loaded", Map.of()).build().run(w);
        assertEquals(w.size(), pt.completed());
        int[] r = pt.routed();
        assertTrue(r[0] + r[1] > 2 * (r[2] + r[3]), "fast replicas take most: " + java.util.Arrays.toString(r));
        assertTrue(pt.estimateErrorP50() >= 0 && pt.estimateErrorP50() < 1, "error " + pt.estimateErrorP50());
        assertTrue(Double.isNaN(ll.estimateErrorP50()), "a policy that predicts nothing has no error");
        assertThrows(IllegalStateException.class, () -> b.slowdowns(1, 2).build());
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
        RunResult r = Simulation.builder()
                .replicas(1)
                .policy("round_robin", Map.of())
                .build()
                .run(w);
        RunResult.Trace t = r.trace();
        java.util.Map<String, Integer> last = new java.util.HashMap<>();
        for (int i = 0; i < w.size(); i++) {
            Integer prev = last.put(w.requests().get(i).session(), i);
            if (prev != null) {
                assertTrue(t.sent()[i] >= t.finished()[prev], "turn sent before the previous answer");
                int prevPromptChars = w.requests().get(prev).replicaPrompt().length();
                assertTrue(
                        t.cached()[i] >= prevPromptChars / 4 - 16,
                        "the previous turn's prompt is cached: " + t.cached()[i]);
            }
        }
    }

    @Test
    void aClosedLoopKeepsItsClientsBusyAndNoMore() {
        Workload w = Workloads.hotPrefix(2, new Workloads.HotSpec(60, 1.0, 256, 64, 16));
        RunResult r = Simulation.builder()
                .replicas(2)
                .closedLoop(3)
                .policy("round_robin", Map.of())
                .build()
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
        Workload w = Workloads.hotPrefix(4, new Workloads.HotSpec(200, 0.8, 1024, 64, 16))
                .poisson(20, 4);
        long[] seen = new long[2];
        Simulation.Probe probe = new Simulation.Probe() {
            @Override
            public void dispatched(
                    long nanos,
                    int request,
                    dev.cart.core.RouteDecision d,
                    int replica,
                    Simulation.ReplicaState[] state) {
                assertTrue(
                        state[replica].routerPendingPrefill() >= d.prefillEstimate(), "the request itself is counted");
                seen[0]++;
                if (state[replica].pendingPrefill() > 0) {
                    seen[1]++;
                }
            }
        };
        RunResult r = Simulation.builder()
                .replicas(3)
                .seed(2)
                .policy("cache_aware", Map.of())
                .probe(probe)
                .build()
                .run(w);
        assertEquals(200, r.completed()); // and the run checks that every count went back to zero
        assertEquals(200, seen[0]);
        assertTrue(seen[1] > 0, "some requests were queued behind prefill");
    }

    @Test
    void aHotPrefixSpreadsWhileThePoolIsIdleInsteadOfQueueingBehindItsFirstComputation() {
        Workload w = Workloads.hotPrefix(5, new Workloads.HotSpec(300, 1.0, 2048, 128, 64))
                .poisson(30, 5);
        RunResult now = run(w, "cache_aware");
        RunResult specified = Simulation.builder()
                .replicas(4)
                .seed(5)
                .policy("cache_aware", Map.of("prefill_aware", false))
                .deferDivertedRoutes(false)
                .build()
                .run(w);
        assertEquals(300, now.completed());
        // As specified, every request of the first ~0.3 s follows the first holder and waits for its cold
        // prefill; ranked by pending prefill, they go to the idle replicas instead.
        assertTrue(
                now.ttftMillis(0.97) < specified.ttftMillis(0.97),
                now.ttftMillis(0.97) + " ms vs " + specified.ttftMillis(0.97) + " ms");
        assertTrue(now.hitRatio() >= specified.hitRatio() - 0.01);
    }

    /** A small chat workload: 6 users x 5 turns behind a 256-token system prompt, at a gentle rate. */
    static Workload smallChat() {
        return Workloads.multiTurn(7, new Workloads.ChatSpec(6, 5, 256, 16, 48, 32, 64))
                .poisson(4, 7);
    }

    /** The decisions of a run, by request. */
    static Map<Integer, RouteDecision> decisions(Simulation.Builder b, Workload w) {
        Map<Integer, RouteDecision> out = new HashMap<>();
        b.probe(new Simulation.Probe() {
                    @Override
                    public void dispatched(
                            long nanos, int request, RouteDecision d, int replica, Simulation.ReplicaState[] state) {
                        out.put(request, d);
                    }
                })
                .build()
                .run(w);
        return out;
    }

    /** For each request, the previous request of its session (-1 for a session's first). */
    static int[] previousTurn(Workload w) {
        int[] prev = new int[w.size()];
        Map<String, Integer> last = new HashMap<>();
        for (int i = 0; i < w.size(); i++) {
            Integer p = last.put(w.requests().get(i).session(), i);
            prev[i] = p == null ? -1 : p;
        }
        return prev;
    }

    @Test
    void theReplicaKeepsTheReplyItGeneratedSoTheNextTurnReusesIt() {
        Workload w = smallChat();
        RunResult withOutput = Simulation.builder()
                .replicas(1)
                .policy("round_robin", Map.of())
                .build()
                .run(w);
        RunResult promptOnly = Simulation.builder()
                .replicas(1)
                .policy("round_robin", Map.of())
                .cacheGeneratedTokens(false)
                .build()
                .run(w);
        int[] prev = previousTurn(w);
        for (int i = 0; i < w.size(); i++) {
            if (prev[i] < 0) {
                continue;
            }
            WorkloadRequest before = w.requests().get(prev[i]);
            int promptTokens = before.replicaPrompt().length() / 4;
            int held = promptTokens + before.maxTokens() - 1; // the last generated token's KV is never computed
            assertTrue(
                    withOutput.trace().cached()[i] >= held - 16,
                    "turn " + i + " reuses the previous reply: "
                            + withOutput.trace().cached()[i] + " of " + held);
            assertTrue(promptOnly.trace().cached()[i] <= promptTokens, "without output blocks only the prompt");
        }
        assertTrue(withOutput.hitRatio() > promptOnly.hitRatio() + 0.05);
        assertTrue(
                withOutput.idealHitRatio() > promptOnly.idealHitRatio() + 0.05,
                "the ideal counts what the replica keeps: the reply too");
        assertTrue(withOutput.hitRatio() <= withOutput.idealHitRatio() + 1e-9);
    }

    @Test
    void aLearnedAnswerMatchesTheNextTurnsWholeHistory() {
        Workload w = smallChat();
        PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults());
        int[] prev = previousTurn(w);
        for (boolean learn : new boolean[] {true, false}) {
            Map<Integer, RouteDecision> ds = decisions(
                    Simulation.builder()
                            .replicas(2)
                            .seed(3)
                            .policy("cache_aware", Map.of())
                            .learnAnswers(learn),
                    w);
            for (int i = 0; i < w.size(); i++) {
                if (prev[i] < 0) {
                    continue;
                }
                int answer = p.answerKeys[prev[i]].blockCount() * p.answerKeys[prev[i]].blockSize();
                RouteDecision d = ds.get(i);
                assertEquals(Reason.CACHE_HIT, d.reason());
                if (learn) {
                    assertTrue(
                            d.matchedLength() >= answer,
                            "turn " + i + " matched " + d.matchedLength() + " of the previous conversation and reply, "
                                    + answer);
                } else {
                    assertTrue(d.matchedLength() < answer, "without learning, only up to the last user message");
                }
            }
        }
    }

    @Test
    void aSingleDepthRouterSeesOnlyTheStartOfEachKey() {
        Workload w = smallChat();
        PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults());
        Map<Integer, RouteDecision> ds = decisions(
                Simulation.builder()
                        .replicas(3)
                        .seed(3)
                        .policy("cache_aware", Map.of())
                        .singleDepth(true)
                        .learnAnswers(true),
                w);
        for (int i = 0; i < w.size(); i++) {
            assertEquals(p.keys[i].boundary(0), ds.get(i).key().length());
            assertTrue(ds.get(i).matchedLength() <= p.keys[i].boundary(0));
        }
        // Busy enough that the guard spreads the system prompt's traffic: a single-depth router then scatters
        // each conversation over the replicas, while a multi-depth one keeps following its turns.
        Workload busy = Workloads.multiTurn(7, new Workloads.ChatSpec(48, 4, 256, 16, 48, 32, 64))
                .poisson(60, 7);
        RunResult multi = Simulation.builder()
                .replicas(3)
                .seed(3)
                .policy("cache_aware", Map.of())
                .build()
                .run(busy);
        RunResult single = Simulation.builder()
                .replicas(3)
                .seed(3)
                .policy("cache_aware", Map.of())
                .singleDepth(true)
                .build()
                .run(busy);
        assertTrue(
                multi.hitRatio() > single.hitRatio() + 0.05,
                "conversations scatter when only the system prompt is routed: " + multi.hitRatio() + " vs "
                        + single.hitRatio());
    }

    @Test
    void tokenModeKeysAgainstATokenizingReplicaGiveHits() {
        Workload w = smallChat();
        Simulation.Builder tokens = Simulation.builder()
                .replicas(3)
                .seed(3)
                .replicaTokenizer(true)
                .tokenKeys(true)
                .reportUsage(true)
                .policy("cache_aware", Map.of("match_abs_threshold", 2048));
        Map<Integer, RouteDecision> ds = decisions(tokens, w);
        for (RouteDecision d : ds.values()) {
            assertEquals(PromptKey.Unit.TOKENS, d.key().unit());
        }
        RunResult r = tokens.probe(null).build().run(w);
        RunResult rr = Simulation.builder()
                .replicas(3)
                .seed(3)
                .replicaTokenizer(true)
                .policy("round_robin", Map.of())
                .build()
                .run(w);
        assertEquals(w.size() - 1, r.reasons().get(Reason.CACHE_HIT), "everything after the first request hits");
        assertTrue(r.hitRatio() > rr.hitRatio() + 0.1, r.hitRatio() + " vs round robin " + rr.hitRatio());
        RunResult.Feedback f = r.feedback();
        assertEquals(w.size(), f.reports());
        assertTrue(
                f.deliveredShare() > 0.9 && f.deliveredShare() < 1.1,
                "predictions in key tokens match the replica's own count: " + f);
    }
}
