package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A replica that never reports a cached token (prefix caching off, or a server that always says
 * {@code cached_tokens: 0}) must not make prompts wander. Six prompts sharing instructions, five rounds,
 * through the router and its leases as a host drives them; every usage report says nothing was cached.
 */
class CacheUnreportedTest {

    private static final String INSTRUCTIONS =
            "You answer from the shop's catalogue, briefly and politely. ".repeat(12);
    private static final int PROMPTS = 6;
    private static final int ROUNDS = 5;

    private static PromptKey prompt(int i) {
        return PromptKey.ofText(INSTRUCTIONS + ("customer " + i + " asks about a bicycle. ").repeat(8), 64);
    }

    private static Router router(boolean feedback) {
        SplittableRandom rnd = new SplittableRandom(3);
        return Router.builder()
                .replicas(ManagedReplicaSet.builder().add("a").add("b").build())
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .feedback(feedback)
                .firstTokenReports(true)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    /** One request as a host serves it: the usage the replica reports, then the close. */
    private static CacheFeedback serve(Router router, PromptKey key, long cached, List<RouteDecision> decisions) {
        RouteDecision d = router.choose(RouteRequest.of(key));
        decisions.add(d);
        try (Lease lease = d.lease()) {
            lease.firstToken();
            return lease.succeeded(new ServedUsage(key.length() / 4, cached));
        }
    }

    /** Requests that did not find their whole prompt where the router sent them. */
    private static int misses(List<RouteDecision> decisions) {
        int n = 0;
        for (RouteDecision d : decisions) {
            if (d.matchedLength() < d.key().blockCount() * 64) {
                n++;
            }
        }
        return n;
    }

    private static List<CacheFeedback> rounds(Router router, List<RouteDecision> decisions) {
        List<CacheFeedback> verdicts = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < PROMPTS; i++) {
                verdicts.add(serve(router, prompt(i), 0, decisions));
            }
        }
        return verdicts;
    }

    @Test
    void aReplicaThatNeverReportsCachedTokensStopsMovingRoutes() {
        List<RouteDecision> without = new ArrayList<>();
        try (Router router = router(false)) {
            rounds(router, without);
        }
        assertEquals(PROMPTS, misses(without), "without feedback: each prompt misses once, in the first round");

        List<RouteDecision> with = new ArrayList<>();
        List<CacheFeedback> verdicts;
        try (Router router = router(true)) {
            verdicts = rounds(router, with);
        }
        // the first prompt predicted nothing; every later one at least the shared instructions, and got nothing
        List<CacheFeedback.Verdict> expected = new ArrayList<>();
        expected.add(CacheFeedback.Verdict.OK);
        for (int k = 1; k < verdicts.size(); k++) {
            expected.add(
                    k < Router.CACHE_UNREPORTED_AFTER
                            ? CacheFeedback.Verdict.STALE // the first zero reports still drop routes
                            : CacheFeedback.Verdict.CACHE_UNREPORTED); // then it is known not to report
        }
        assertEquals(expected, verdicts.stream().map(CacheFeedback::verdict).toList());
        int stale = Router.CACHE_UNREPORTED_AFTER - 1;
        assertTrue(
                misses(with) <= PROMPTS + stale,
                "no more misses than the drops before the replica was recognised: " + misses(with));
        assertEquals(0, misses(with.subList(2 * PROMPTS, with.size())), "from the third round on, no prompt moves");
    }

    @Test
    void aCachedTokenReportedMakesTheReplicasShortfallsCountAgain() {
        List<RouteDecision> decisions = new ArrayList<>();
        try (Router router = router(true)) {
            rounds(router, decisions); // recognised as not reporting
            CacheFeedback reported = serve(router, prompt(0), prompt(0).length() / 4 - 8, decisions);
            assertEquals(CacheFeedback.Verdict.OK, reported.verdict());
            CacheFeedback lost = serve(router, prompt(1), 0, decisions);
            assertEquals(CacheFeedback.Verdict.STALE, lost.verdict(), "it reports its cache: a shortfall is evidence");
        }
    }

    @Test
    void aReplicaThatHasReportedItsCacheIsNeverTakenForOneThatDoesNot() {
        List<RouteDecision> decisions = new ArrayList<>();
        try (Router router = router(true)) {
            serve(router, prompt(0), 0, decisions); // a miss
            assertEquals(
                    CacheFeedback.Verdict.OK,
                    serve(router, prompt(0), prompt(0).length() / 4 - 8, decisions)
                            .verdict());
            for (int k = 0; k < 2 * Router.CACHE_UNREPORTED_AFTER; k++) { // it evicts, again and again
                CacheFeedback f = serve(router, prompt(k % PROMPTS), 0, decisions);
                if (f.predictedTokens() > 0) {
                    assertEquals(CacheFeedback.Verdict.STALE, f.verdict(), "round " + k + ": " + f);
                }
            }
        }
    }
}
