package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.RoutingListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link Lease#succeeded(ServedUsage)} returns what the router learned from the usage, the same value the
 * listener hears, and says so when it compared nothing or judged nothing.
 */
class LeaseFeedbackTest {

    private static final PromptKey KEY = PromptKey.ofText("The instructions every request shares. ".repeat(20), 64);
    private static final long TOKENS = KEY.length() / 4;

    private final List<CacheFeedback> heard = new ArrayList<>();

    private Router router(boolean feedback) {
        return Router.builder()
                .replicas(ManagedReplicaSet.builder().add("a").build())
                .policy(TestPolicies.followTheTree())
                .feedback(feedback)
                .evictionInterval(Duration.ZERO)
                .listener(new RoutingListener() {
                    @Override
                    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                        heard.add(f);
                    }
                })
                .build();
    }

    @Test
    void theComparisonIsReturnedOnceMadeAndTheListenerHearsTheSameValue() {
        try (Router router = router(true)) {
            RouteDecision miss = router.choose(RouteRequest.of(KEY));
            assertSame(CacheFeedback.notCompared(), miss.lease().succeeded(ServedUsage.unknown()), "the answer began");
            CacheFeedback first = miss.lease().succeeded(new ServedUsage(TOKENS, 0));
            assertEquals(CacheFeedback.Verdict.OK, first.verdict(), "a miss predicted nothing: " + first);
            assertEquals(0, first.predictedTokens());
            assertEquals(List.of(first), heard);
            assertSame(first, miss.lease().succeeded(new ServedUsage(TOKENS, 5)), "compared once");
            assertEquals(1, heard.size());
            miss.lease().close();
            assertSame(CacheFeedback.notCompared(), miss.lease().succeeded(new ServedUsage(TOKENS, 0)), "closed");

            RouteDecision hit = router.choose(RouteRequest.of(KEY));
            assertEquals(Reason.CACHE_HIT, hit.reason());
            CacheFeedback delivered = hit.lease().succeeded(new ServedUsage(TOKENS, TOKENS - 4));
            assertEquals(CacheFeedback.Verdict.OK, delivered.verdict());
            assertTrue(delivered.predictedTokens() > 0 && delivered.compared(), delivered.toString());
            hit.lease().close();

            RouteDecision lost = router.choose(RouteRequest.of(KEY));
            CacheFeedback stale = lost.lease().succeeded(new ServedUsage(TOKENS, 0));
            assertEquals(CacheFeedback.Verdict.STALE, stale.verdict());
            assertTrue(stale.stale());
            assertSame(stale, heard.get(heard.size() - 1));
            lost.lease().close();
        }
    }

    @Test
    void withFeedbackOffTheFiguresAreComparedAndNothingIsJudged() {
        try (Router router = router(false)) {
            router.choose(RouteRequest.of(KEY)).lease().close();
            RouteDecision hit = router.choose(RouteRequest.of(KEY));
            CacheFeedback f = hit.lease().succeeded(new ServedUsage(TOKENS, 0));
            assertEquals(CacheFeedback.Verdict.FEEDBACK_OFF, f.verdict());
            assertFalse(f.stale());
            assertTrue(f.predictedTokens() > 0 && f.deliveredTokens() == 0 && f.promptTokens() == TOKENS, f.toString());
            assertEquals(List.of(f), heard);
            hit.lease().close();
            RouteDecision again = router.choose(RouteRequest.of(KEY));
            assertEquals(Reason.CACHE_HIT, again.reason(), "nothing was dropped");
            again.lease().close();
        }
    }

    @Test
    void nothingToCompareSaysSo() {
        try (Router router = router(true)) {
            RouteDecision empty = router.choose(RouteRequest.of(PromptKey.ofText("", 64)));
            assertSame(CacheFeedback.notCompared(), empty.lease().succeeded(new ServedUsage(10, 0)), "empty key");
            empty.lease().close();
            ManagedReplicaSet none = ManagedReplicaSet.builder()
                    .add(new ReplicaSpec("full", 1, 0))
                    .build();
            try (Router full = Router.builder()
                    .replicas(none)
                    .policy(TestPolicies.followTheTree())
                    .evictionInterval(Duration.ZERO)
                    .build()) {
                RouteDecision held = full.choose(RouteRequest.of(KEY));
                RouteDecision refused = full.choose(RouteRequest.of(KEY));
                assertFalse(refused.routed());
                CacheFeedback f = refused.lease().succeeded(new ServedUsage(TOKENS, 0));
                assertSame(CacheFeedback.notCompared(), f, "no replica");
                assertEquals(CacheFeedback.Verdict.NOT_COMPARED, f.verdict());
                assertEquals(ServedUsage.UNKNOWN, f.predictedTokens());
                assertFalse(f.compared());
                held.lease().close();
            }
            assertEquals(List.of(), heard, "the listener hears only comparisons");
        }
    }

    @Test
    void learningOnSuccessAKnownUsageFirstLearnsTheRouteAndIsComparedOnce() {
        try (Router router = Router.builder()
                .replicas(ManagedReplicaSet.builder().add("a").build())
                .policy(TestPolicies.followTheTree())
                .learn(LearnMode.ON_SUCCESS)
                .evictionInterval(Duration.ZERO)
                .listener(new RoutingListener() {
                    @Override
                    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                        heard.add(f);
                    }
                })
                .build()) {
            RouteDecision miss = router.choose(RouteRequest.of(KEY));
            CacheFeedback first = miss.lease().succeeded(new ServedUsage(TOKENS, 0));
            assertEquals(CacheFeedback.Verdict.OK, first.verdict(), "compared at the first call: " + first);
            assertTrue(router.tree().stats().size() > 0, "and the route learned by the same call");
            assertSame(first, miss.lease().succeeded(new ServedUsage(TOKENS, 5)), "compared once");
            assertSame(
                    CacheFeedback.notCompared(),
                    miss.lease().succeeded(ServedUsage.unknown()),
                    "an unknown usage later compares nothing");
            assertEquals(List.of(first), heard);
            miss.lease().close();
            RouteDecision hit = router.choose(RouteRequest.of(KEY));
            assertEquals(Reason.CACHE_HIT, hit.reason());
            hit.lease().close();
        }
    }
}
