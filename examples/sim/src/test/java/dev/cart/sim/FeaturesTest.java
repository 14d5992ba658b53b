package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.Reason;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The learning section: the verdict rule, and a small feature through runs and Markdown. */
class FeaturesTest {

    /** A result with the given hit ratio and every TTFT equal to {@code p99} ms. */
    static RunResult result(double hit, double p99) {
        long[] ttft = new long[100];
        java.util.Arrays.fill(ttft, (long) (p99 * 1e6));
        return new RunResult("w", "p", 100, 100, 0, 0, 1_000_000, Math.round(hit * 1_000_000), 1.0, ttft, 0,
                1_000_000_000L, 100, new int[] {50, 50}, new int[] {1, 1}, new long[] {1, 1}, 0,
                Map.of(Reason.POLICY, 100), null, RunResult.Feedback.NONE);
    }

    @Test
    void theRuleNeedsAPointOfHitRatioOrTenPercentOfP99() {
        assertEquals(Features.Better.NEITHER, Features.compare(result(0.80, 100), result(0.805, 95)));
        assertEquals(Features.Better.ALTERNATIVE, Features.compare(result(0.80, 100), result(0.82, 105)));
        assertEquals(Features.Better.ALTERNATIVE, Features.compare(result(0.80, 100), result(0.795, 85)));
        assertEquals(Features.Better.DEFAULT, Features.compare(result(0.80, 100), result(0.70, 100)));
        assertEquals(Features.Better.DEFAULT, Features.compare(result(0.80, 80), result(0.80, 100)));
        assertEquals(Features.Better.TRADE_OFF, Features.compare(result(0.80, 100), result(0.85, 150)));
        assertEquals(Features.Better.TRADE_OFF, Features.compare(result(0.80, 100), result(0.85, 115)),
                "a better hit ratio that costs more than 10% of P99 is not better");
        assertEquals(Features.Better.NEITHER, Features.compare(result(0.80, 100), result(0.795, 105)));
    }

    @Test
    void aFeatureRunsItsCasesAndStatesAVerdict() {
        Report.Settings s = Report.Settings.parse(new String[] {"--replicas", "3", "--seed", "3"});
        Workload w = Workloads.multiTurn(7, new Workloads.ChatSpec(48, 4, 256, 16, 48, 32, 64)).poisson(60, 7);
        PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults());
        Features.Case c = new Features.Case("multi-turn", "small", "Poisson, 60 req/s", 0, List.of(
                new Features.Arm(Report.Variant.shipped(Features.REFERENCE, "least_loaded", Map.of()), p),
                new Features.Arm(Report.Variant.shipped(Features.MULTI_DEPTH, "cache_aware", Map.of()), p),
                new Features.Arm(Report.Variant.shipped(Features.SINGLE_DEPTH, "cache_aware", Map.of())
                        .singleDepth(true).usage(false), p)));
        Features.CaseResult r = Features.runCase(s, c, Report::registered, false);
        Features.Feature f = new Features.Feature("Multi-depth learning", "intro", Features.MULTI_DEPTH,
                Features.SINGLE_DEPTH, "multi-depth", "single-depth", List.of(r), false);
        String md = Features.markdown(List.of(f));
        assertTrue(md.contains("| multi-turn, small | least_loaded (reference) |"), md);
        assertTrue(md.contains("| Multi-depth learning | multi-depth | single-depth | 1 · 0 · 0 · 0 |"), md);
        assertTrue(md.contains("**Verdict:** the numbers support the default (multi-depth)"), md);
        assertEquals(3, Features.runs(List.of(f)));
        assertTrue(r.of(Features.MULTI_DEPTH).feedback().reports() > 0, "the default host reports usage");
        assertEquals(0, r.of(Features.SINGLE_DEPTH).feedback().reports());
    }
}
