package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
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
        return new RunResult(
                "w",
                "p",
                100,
                100,
                0,
                0,
                1_000_000,
                Math.round(hit * 1_000_000),
                1.0,
                ttft,
                0,
                1_000_000_000L,
                100,
                new int[] {50, 50},
                new int[] {1, 1},
                new long[] {1, 1},
                0,
                Map.of(Reason.POLICY, 100),
                null,
                RunResult.Feedback.NONE);
    }

    @Test
    void theRuleNeedsAPointOfHitRatioOrTenPercentOfP99() {
        assertEquals(Features.Better.NEITHER, Features.compare(result(0.80, 100), result(0.805, 95)));
        assertEquals(Features.Better.ALTERNATIVE, Features.compare(result(0.80, 100), result(0.82, 105)));
        assertEquals(Features.Better.ALTERNATIVE, Features.compare(result(0.80, 100), result(0.795, 85)));
        assertEquals(Features.Better.DEFAULT, Features.compare(result(0.80, 100), result(0.70, 100)));
        assertEquals(Features.Better.DEFAULT, Features.compare(result(0.80, 80), result(0.80, 100)));
        assertEquals(Features.Better.TRADE_OFF, Features.compare(result(0.80, 100), result(0.85, 150)));
        assertEquals(
                Features.Better.TRADE_OFF,
                Features.compare(result(0.80, 100), result(0.85, 115)),
                "a better hit ratio that costs more than 10% of P99 is not better");
        assertEquals(Features.Better.NEITHER, Features.compare(result(0.80, 100), result(0.795, 105)));
    }

    /** A feature of one workload whose seeds give {default, alternative} results as listed. */
    static Features.Feature feature(RunResult[]... seeds) {
        List<Features.CaseResult> rs = new java.util.ArrayList<>();
        long seed = 1;
        for (RunResult[] pair : seeds) {
            Features.Case c = new Features.Case("w", "", seed++, 0, List.of());
            rs.add(new Features.CaseResult(
                    c,
                    List.of(
                            new RunMatrix.Row(Variant.shipped("d", "cache_aware", Map.of()), pair[0]),
                            new RunMatrix.Row(Variant.shipped("a", "cache_aware", Map.of()), pair[1]))));
        }
        return new Features.Feature("F", "intro", "d", "a", "on", "off", Features.group(rs));
    }

    @Test
    void theVerdictWordsMatchTheSeeds() {
        RunResult[] defBetter = {result(0.80, 80), result(0.80, 100)};
        RunResult[] altBetter = {result(0.80, 100), result(0.80, 80)};
        RunResult[] same = {result(0.80, 100), result(0.80, 101)};
        RunResult[] trade = {result(0.80, 100), result(0.85, 150)};

        String allBetter = Features.verdict(feature(defBetter, defBetter, same));
        assertTrue(allBetter.contains("better on 2 of 3 (workload, seed) pairs, never worse"), allBetter);

        String mixed = Features.verdict(feature(defBetter, altBetter, defBetter));
        assertTrue(mixed.startsWith("a trade-off"), mixed);
        assertFalse(mixed.contains("never worse"), "one seed where the alternative wins: " + mixed);

        String traded = Features.verdict(feature(defBetter, trade, same));
        assertTrue(traded.contains("trade-off") && !traded.contains("never worse"), traded);

        String none = Features.verdict(feature(same, same));
        assertTrue(none.contains("no clear difference on all 2 (workload, seed) pairs"), none);

        String onlyTraded = Features.verdict(feature(trade, same, same));
        assertTrue(
                onlyTraded.startsWith(
                        "no clear winner: a trade-off (one measure better, the other worse) on 1 " + "of 3"),
                onlyTraded);

        String worse = Features.verdict(feature(altBetter, same));
        assertTrue(
                worse.contains("do not support the default: off is better on 1 of 2 (workload, seed) pairs and "
                        + "never worse (no clear difference on the other 1)"),
                worse);

        String text = Features.verdictText(feature(defBetter, altBetter, same));
        assertTrue(text.contains("on better on 1 seed, off better on 1 seed, no clear difference on 1 seed"), text);
    }

    @Test
    void aFeatureRunsItsCasesAndStatesAVerdict() {
        Report.Settings s = Report.Settings.parse(new String[] {"--replicas", "3", "--seed", "3"});
        Workload w = Workloads.multiTurn(7, new Workloads.ChatSpec(48, 4, 256, 16, 48, 32, 64))
                .poisson(60, 7);
        PreparedWorkload p = PreparedWorkload.of(w, EngineConfig.defaults());
        Features.Case c = new Features.Case(
                "multi-turn",
                "small",
                3,
                0,
                List.of(
                        new Features.Arm(Variant.shipped(Features.LL_REFERENCE, "least_loaded", Map.of()), p, null),
                        new Features.Arm(Variant.shipped(Features.MULTI_DEPTH, "cache_aware", Map.of()), p, null),
                        new Features.Arm(
                                Variant.shipped(Features.SINGLE_DEPTH, "cache_aware", Map.of())
                                        .singleDepth(true)
                                        .usage(false),
                                p,
                                null)));
        Features.CaseResult r = Features.runCase(s, c, RunMatrix::registered, false);
        Features.Feature f = new Features.Feature(
                "Multi-depth learning",
                "intro",
                Features.MULTI_DEPTH,
                Features.SINGLE_DEPTH,
                "multi-depth",
                "single-depth",
                Features.group(List.of(r)));
        String md = Features.markdown(List.of(f));
        assertTrue(md.contains("| multi-turn, small | least_loaded (reference) |"), md);
        assertTrue(md.contains("| Multi-depth learning | multi-depth | single-depth | 1 · 0 · 0 · 0 |"), md);
        assertTrue(md.contains("**Verdict:** the numbers support the default (multi-depth)"), md);
        assertEquals(3, Features.runs(List.of(f)));
        assertTrue(r.of(Features.MULTI_DEPTH).feedback().reports() > 0, "the default host reports usage");
        assertEquals(0, r.of(Features.SINGLE_DEPTH).feedback().reports());

        RunResult reused = r.of(Features.LL_REFERENCE);
        Features.Case again = new Features.Case(
                "multi-turn",
                "small",
                3,
                0,
                List.of(new Features.Arm(Variant.shipped(Features.LL_REFERENCE, "least_loaded", Map.of()), p, reused)));
        assertSame(
                reused,
                Features.runCase(s, again, RunMatrix::registered, false).of(Features.LL_REFERENCE),
                "a row the main tables already ran is not run again");
        assertEquals(
                0,
                Features.runs(List.of(new Features.Feature(
                        "x", "", "", "", "", "", Features.group(List.of(new Features.CaseResult(again, List.of())))))));
    }
}
