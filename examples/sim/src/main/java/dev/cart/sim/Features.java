package dev.cart.sim;

import dev.cart.core.PromptKey;
import dev.cart.core.spi.RoutingPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The report's section on learning: each feature of the router's learning compared on and off, on the
 * workloads where it can matter, with a verdict on its default that follows a fixed rule.
 *
 * <p>A feature is a list of cases (a workload with its arrivals and cluster, on each seed of the main
 * tables), each with two references (least_loaded, round_robin), the default configuration and the
 * alternative; rows that are the same configuration on the same prepared workload as a main-table run reuse
 * that run. The rule compares the default with the alternative on each (workload, seed) pair: one is
 * <em>better</em> when its hit ratio is higher by at least {@link #HIT_MARGIN} without a P99 TTFT more than
 * {@link #P99_MARGIN} higher, or its P99 is lower by at least {@link #P99_MARGIN} without a hit ratio lower
 * by {@link #HIT_MARGIN} or more; otherwise neither is (a <em>trade-off</em> when each wins one of the two
 * measures). The verdict says "never worse" only when the alternative is better on no pair and no pair is
 * a trade-off; "trade-off" whenever each side wins somewhere or a measure is traded.
 */
final class Features {

    /** Hit-ratio difference (absolute) that counts. */
    static final double HIT_MARGIN = 0.01;
    /** P99 TTFT difference (relative) that counts. */
    static final double P99_MARGIN = 0.10;
    /** Replica cache in the feedback cases, as a share of the modelled one. */
    static final int FEEDBACK_CACHE_DIVISOR = 4;
    /** The token-mode equivalent of the default {@code match_abs_threshold} of 8,192 characters. */
    static final int TOKEN_MATCH_ABS_THRESHOLD = 2048;

    private Features() {}

    /**
     * One routing configuration of a case, with the prepared workload it runs (keys differ by mode) and,
     * when the same configuration already ran on the same workload in the main tables, that run.
     */
    record Arm(Variant variant, PreparedWorkload prepared, RunResult reused) {}

    /**
     * One workload of a feature on one seed.
     *
     * @param workload    the workload's name
     * @param setting     what differs from the main tables ("" if nothing)
     * @param seed        the seed of the workload and the router
     * @param cacheTokens each replica's cache in tokens (0: the modelled default)
     * @param arms        the configurations, references first
     */
    record Case(String workload, String setting, long seed, long cacheTokens, List<Arm> arms) {
        String title() {
            return setting.isEmpty() ? workload : workload + ", " + setting;
        }
    }

    record CaseResult(Case c, List<RunMatrix.Row> rows) {
        RunResult of(String label) {
            for (RunMatrix.Row r : rows) {
                if (r.variant().label().equals(label)) {
                    return r.result();
                }
            }
            throw new IllegalArgumentException("no row " + label);
        }
    }

    /** One workload of a feature over every seed, in seed order. */
    record CaseRuns(String title, List<CaseResult> seeds) {
        Spread spread(String label, ToDoubleFunction<RunResult> f) {
            return Spread.of(seeds.stream()
                    .mapToDouble(c -> f.applyAsDouble(c.of(label)))
                    .toArray());
        }

        List<Variant> variants() {
            return seeds.get(0).rows().stream().map(RunMatrix.Row::variant).toList();
        }
    }

    /**
     * One feature: its cases' results and which rows are the default and the alternative.
     *
     * @param title        section title
     * @param intro        what is compared, and how
     * @param defaultLabel the default configuration's row
     * @param altLabel     the alternative's row
     * @param defaultName  the default, as the summary names it
     * @param altName      the alternative, as the summary names it
     * @param results      one per workload
     */
    record Feature(
            String title,
            String intro,
            String defaultLabel,
            String altLabel,
            String defaultName,
            String altName,
            List<CaseRuns> results) {}

    /** Which of two configurations the rule calls better on one case. */
    enum Better {
        DEFAULT,
        ALTERNATIVE,
        NEITHER,
        TRADE_OFF
    }

    static Better compare(RunResult def, RunResult alt) {
        double dh = alt.hitRatio() - def.hitRatio();
        double altOverDef = alt.ttftP99Millis() / def.ttftP99Millis();
        double defOverAlt = def.ttftP99Millis() / alt.ttftP99Millis();
        boolean altBetter = (dh >= HIT_MARGIN && altOverDef <= 1 + P99_MARGIN)
                || (altOverDef <= 1 - P99_MARGIN && dh > -HIT_MARGIN);
        boolean defBetter = (-dh >= HIT_MARGIN && defOverAlt <= 1 + P99_MARGIN)
                || (defOverAlt <= 1 - P99_MARGIN && -dh > -HIT_MARGIN);
        if (altBetter && !defBetter) {
            return Better.ALTERNATIVE;
        }
        if (defBetter && !altBetter) {
            return Better.DEFAULT;
        }
        boolean trade =
                (Math.abs(dh) >= HIT_MARGIN && (dh > 0) != (altOverDef < 1) && Math.abs(altOverDef - 1) >= P99_MARGIN);
        return trade ? Better.TRADE_OFF : Better.NEITHER;
    }

    /** Runs every feature's cases on the seeds of the main tables, reusing their runs where they match. */
    static List<Feature> run(
            Report.Settings s,
            RunMatrix.Matrix main,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        List<Feature> out = new ArrayList<>();
        out.add(multiDepth(s, main, policies, progress));
        out.add(feedback(s, main, policies, progress));
        out.add(tokenMode(s, main, policies, progress));
        out.add(whenToLearn(main));
        out.add(answers(s, main, policies, progress));
        return out;
    }

    static final String LL_REFERENCE = "least_loaded (reference)";
    static final String RR_REFERENCE = "round_robin (reference)";

    private static Variant cacheAware(String label) {
        return Variant.shipped(label, "cache_aware", Map.of());
    }

    /**
     * The references and the default from one seed's main-table runs (reused), then {@code alternative}
     * run on the same prepared workload.
     */
    private static Case mainCase(RunMatrix.ScenarioResult sr, String defaultLabel, Variant alternative) {
        return mainCase(sr, defaultLabel, alternative, sr.prepared());
    }

    private static Case mainCase(
            RunMatrix.ScenarioResult sr, String defaultLabel, Variant alternative, PreparedWorkload altPrepared) {
        PreparedWorkload p = sr.prepared();
        return new Case(
                sr.scenario().name(),
                "",
                sr.seed(),
                0,
                List.of(
                        new Arm(
                                Variant.named(Variant.LEAST_LOADED).label(LL_REFERENCE),
                                p,
                                sr.of(Variant.LEAST_LOADED)),
                        new Arm(Variant.named(Variant.ROUND_ROBIN).label(RR_REFERENCE), p, sr.of(Variant.ROUND_ROBIN)),
                        new Arm(cacheAware(defaultLabel), p, sr.of(Variant.CACHE_AWARE)),
                        new Arm(alternative, altPrepared, null)));
    }

    static CaseResult runCase(
            Report.Settings s, Case c, Function<Variant, Supplier<RoutingPolicy>> policies, boolean progress) {
        List<RunMatrix.Row> rows = new ArrayList<>();
        for (Arm a : c.arms()) {
            RunResult r = a.reused();
            if (r == null) {
                Simulation.Builder b = RunMatrix.simulation(s, c.seed(), a.variant(), policies, 0);
                if (c.cacheTokens() > 0) {
                    b.cacheTokens(c.cacheTokens());
                }
                r = b.build().run(a.prepared());
                if (progress) {
                    System.out.println("seed " + c.seed() + ", " + c.title() + ": " + r);
                }
            }
            rows.add(new RunMatrix.Row(a.variant(), r));
        }
        return new CaseResult(c, rows);
    }

    /** Runs the cases (in parallel) and groups them by title, in first-seen order. */
    private static List<CaseRuns> runAll(
            Report.Settings s,
            List<Supplier<Case>> cases,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        List<Callable<CaseResult>> tasks = new ArrayList<>();
        for (Supplier<Case> c : cases) {
            tasks.add(() -> runCase(s, c.get(), policies, progress));
        }
        return group(RunMatrix.parallel(s.threads, tasks));
    }

    static List<CaseRuns> group(List<CaseResult> results) {
        Map<String, List<CaseResult>> byTitle = new LinkedHashMap<>();
        for (CaseResult r : results) {
            byTitle.computeIfAbsent(r.c().title(), k -> new ArrayList<>()).add(r);
        }
        List<CaseRuns> out = new ArrayList<>();
        byTitle.forEach((t, rs) -> out.add(new CaseRuns(t, rs)));
        return out;
    }

    private static List<RunMatrix.ScenarioResult> seedsOf(RunMatrix.Matrix main, String name) {
        RunMatrix.WorkloadRuns w = main.named(name);
        return w == null || w.isSkipped() ? List.of() : w.seeds();
    }

    // ------------------------------------------------------------------------------------------------
    // the features

    static final String MULTI_DEPTH = "cache_aware (multi-depth)";
    static final String SINGLE_DEPTH = "cache_aware, single-depth (first boundary)";

    static Feature multiDepth(
            Report.Settings s,
            RunMatrix.Matrix main,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        List<Supplier<Case>> cases = new ArrayList<>();
        for (String name : List.of("branch-resume", "multi-turn")) {
            for (RunMatrix.ScenarioResult sr : seedsOf(main, name)) {
                cases.add(() -> mainCase(
                        sr,
                        MULTI_DEPTH,
                        cacheAware(SINGLE_DEPTH).singleDepth(true).usage(false)));
            }
        }
        return new Feature(
                "Multi-depth learning",
                "CART's tree records every prefix of a key it learns, so a "
                        + "learned request leaves a route at each of its message boundaries (and blocks): multi-depth "
                        + "learning is how matching works, not a setting, and a branching, continuing or resumed "
                        + "conversation matches the longest part it shares with what came before. The alternative is the "
                        + "single-depth router of the notes, one route per request at a fixed point: the router sees each "
                        + "key only up to its first message boundary (`key.prefix(key.boundary(0))`, the end of the system "
                        + "prompt here), for routing and for learning. Its predictions count that prefix, not the prompt, "
                        + "so it is given no usage feedback; everything else is the default. The references and the "
                        + "default are the main tables' runs.",
                MULTI_DEPTH,
                SINGLE_DEPTH,
                "multi-depth (inherent)",
                "single-depth at the first message boundary",
                runAll(s, cases, policies, progress));
    }

    static final String FEEDBACK_ON = "cache_aware (feedback on)";
    static final String FEEDBACK_OFF = "cache_aware, feedback off";

    static Feature feedback(
            Report.Settings s,
            RunMatrix.Matrix main,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        long small = EngineConfig.defaults().cacheTokens() / FEEDBACK_CACHE_DIVISOR;
        String setting = String.format(Locale.ROOT, "cache %,d tokens per replica", small);
        List<Supplier<Case>> cases = new ArrayList<>();
        for (String name : List.of("rag-zipf", "multi-turn", "branch-resume")) {
            for (RunMatrix.ScenarioResult sr : seedsOf(main, name)) {
                PreparedWorkload p = sr.prepared();
                cases.add(() -> new Case(
                        name,
                        setting,
                        sr.seed(),
                        small,
                        List.of(
                                new Arm(Variant.named(Variant.LEAST_LOADED).label(LL_REFERENCE), p, null),
                                new Arm(Variant.named(Variant.ROUND_ROBIN).label(RR_REFERENCE), p, null),
                                new Arm(cacheAware(FEEDBACK_ON), p, null),
                                new Arm(cacheAware(FEEDBACK_OFF).feedback(false), p, null))));
            }
        }
        for (RunMatrix.ScenarioResult sr : seedsOf(main, RunMatrix.MOONCAKE)) {
            cases.add(() -> mainCase(sr, FEEDBACK_ON, cacheAware(FEEDBACK_OFF).feedback(false)));
        }
        return new Feature(
                "Feedback from the replicas",
                String.format(
                        Locale.ROOT,
                        "Replicas whose caches are "
                                + "much smaller than what the router remembers: the RAG, multi-turn and branching workloads at "
                                + "the main tables' arrival rates on replicas with a %s of the modelled cache (%,d tokens each), "
                                + "and the Mooncake replay at the modelled cache, whose working set already exceeds it. The "
                                + "router's tree (1,000,000 blocks, no eviction pass in these runs) keeps every route it learns. "
                                + "Both configurations hand the replica's usage to the lease (`Lease.succeeded(ServedUsage)` with "
                                + "its `prompt_tokens` and `cached_tokens`): with feedback off (`Router.Builder.feedback(false)`) "
                                + "the router only compares, on (the default) it also drops the claims a lost prefix took with it "
                                + "(`PrefixTree.forgetBranches`): not the request's own route, since the replica has just computed "
                                + "the prompt again, but the replica's other claims that continue through the part it lost. "
                                + "A shortfall counts as a loss only where the replica could have held the part: what requests "
                                + "still in prefill on it when the request was sent were computing was not there to serve yet "
                                + "(a replica shares a prefix only once its prefill is over), and such a report is inconclusive, "
                                + "counted and not acted on. "
                                + "*Predicted → delivered* sums over the requests the cached "
                                + "tokens the router predicted on the replica it chose and those the replica reported "
                                + "(`RoutingListener.onCacheFeedback`), with delivered over predicted in brackets; "
                                + "*over-predicted* counts the requests whose prediction exceeded the delivery by more than two "
                                + "blocks (32 tokens) and a tenth of the prediction, by the replica's count, with in brackets the "
                                + "medians of the router's verdicts on them: stale (acted on with feedback on) · inconclusive.",
                        FEEDBACK_CACHE_DIVISOR == 4 ? "quarter" : "1/" + FEEDBACK_CACHE_DIVISOR,
                        small),
                FEEDBACK_ON,
                FEEDBACK_OFF,
                "feedback on",
                "feedback off",
                runAll(s, cases, policies, progress));
    }

    static final String CHAR_KEYS = "cache_aware, character keys";
    static final String TOKEN_KEYS = "cache_aware, token keys";

    /** Workloads of the token-mode comparison. */
    static final List<String> TOKEN_WORKLOADS =
            List.of("rag-zipf", "multi-turn", "branch-resume", "generated-shared-prefix");

    static Feature tokenMode(
            Report.Settings s,
            RunMatrix.Matrix main,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        List<Supplier<Case>> cases = new ArrayList<>();
        for (String name : TOKEN_WORKLOADS) {
            for (RunMatrix.ScenarioResult sr : seedsOf(main, name)) {
                cases.add(() -> {
                    PreparedWorkload chars = sr.prepared();
                    PreparedWorkload tokens = PreparedWorkload.of(
                            chars.workload, EngineConfig.defaults(), chars.options.withKeyUnit(PromptKey.Unit.TOKENS));
                    return mainCase(
                            sr,
                            CHAR_KEYS,
                            cacheAware(TOKEN_KEYS).settings(Map.of("match_abs_threshold", TOKEN_MATCH_ABS_THRESHOLD)),
                            tokens);
                });
            }
        }
        return new Feature(
                "Token mode against character mode",
                String.format(
                        Locale.ROOT,
                        "Both key modes "
                                + "against the main tables' tokenizing replica (see the top of this page), with the main tables' "
                                + "arrivals: character keys are the default (64-character blocks, the main tables' cache_aware "
                                + "runs); token keys are `cart-extract`'s token mode with the replica's encoding "
                                + "(`ExtractOptions.tokenizer(Tokenizers.jtokkit(\"cl100k_base\")).blockTokens(16)`, a router "
                                + "with `keyFormat(TOKENS, 16)` and `match_abs_threshold` %,d, the token equivalent of the "
                                + "default 8,192 characters). The router's token keys still come from its own serialization of "
                                + "the request, not the replica's chat template.",
                        TOKEN_MATCH_ABS_THRESHOLD),
                CHAR_KEYS,
                TOKEN_KEYS,
                "character keys",
                "token keys (cl100k_base)",
                runAll(s, cases, policies, progress));
    }

    static final String ON_ROUTE = "cache_aware (learn on_route)";

    static Feature whenToLearn(RunMatrix.Matrix main) {
        List<CaseResult> results = new ArrayList<>();
        for (RunMatrix.WorkloadRuns w : main.workloads()) {
            if (w.isSkipped() || !w.has(Variant.ON_SUCCESS)) {
                continue;
            }
            for (RunMatrix.ScenarioResult sr : w.seeds()) {
                Case c = new Case(w.name(), "", sr.seed(), 0, List.of());
                results.add(new CaseResult(
                        c,
                        List.of(
                                new RunMatrix.Row(
                                        Variant.named(Variant.LEAST_LOADED).label(LL_REFERENCE),
                                        sr.of(Variant.LEAST_LOADED)),
                                new RunMatrix.Row(
                                        Variant.named(Variant.ROUND_ROBIN).label(RR_REFERENCE),
                                        sr.of(Variant.ROUND_ROBIN)),
                                new RunMatrix.Row(cacheAware(ON_ROUTE), sr.of(Variant.CACHE_AWARE)),
                                new RunMatrix.Row(Variant.named(Variant.ON_SUCCESS), sr.of(Variant.ON_SUCCESS)))));
            }
        }
        return new Feature(
                "When to learn",
                "From the main tables (the same runs): routes recorded when a request "
                        + "is routed (`learn: on_route`, the default; a diverted request's route at its first token) "
                        + "against recorded when the replica has answered (`on_success`).",
                ON_ROUTE,
                Variant.ON_SUCCESS,
                "on_route",
                "on_success",
                group(results));
    }

    static final String ANSWERS_ON = "cache_aware (answers learned)";
    static final String ANSWERS_OFF = "cache_aware, answers not learned";

    static Feature answers(
            Report.Settings s,
            RunMatrix.Matrix main,
            Function<Variant, Supplier<RoutingPolicy>> policies,
            boolean progress) {
        List<Supplier<Case>> cases = new ArrayList<>();
        for (String name : List.of("multi-turn", "branch-resume")) {
            for (RunMatrix.ScenarioResult sr : seedsOf(main, name)) {
                cases.add(() -> mainCase(sr, ANSWERS_ON, cacheAware(ANSWERS_OFF).answers(false)));
            }
        }
        return new Feature(
                "Learning the answer",
                "The replica caches the blocks of the tokens it generates, as "
                        + "vLLM V1 does, so after a turn it holds the conversation through its reply, and the workloads' "
                        + "replies are the text their next turns carry back. With answers learned (the proxy's "
                        + "`cache.learn_answer`, on by default) the host records, when a chat answer completes, the key "
                        + "of the conversation followed by the reply, made by the same extractor from the request body "
                        + "with the assistant message appended; without, the router knows the conversation up to its last "
                        + "user message until the next turn is routed. Either way the next turn matches the replica that "
                        + "served the previous one, which also holds the reply; what learning the answer changes first is "
                        + "the router's prediction, which then covers the reply (compare predicted and delivered cached "
                        + "tokens).",
                ANSWERS_ON,
                ANSWERS_OFF,
                "answers learned",
                "answers not learned",
                runAll(s, cases, policies, progress));
    }

    // ------------------------------------------------------------------------------------------------
    // output

    /** Runs made for the learning section (rows reused from the main tables not counted). */
    static int runs(List<Feature> features) {
        int n = 0;
        for (Feature f : features) {
            for (CaseRuns cr : f.results()) {
                for (CaseResult c : cr.seeds()) {
                    for (Arm a : c.c().arms()) {
                        n += a.reused() == null ? 1 : 0;
                    }
                }
            }
        }
        return n;
    }

    static String markdown(List<Feature> features) {
        StringBuilder md = new StringBuilder();
        md.append("## Learning: each feature on and off\n\n");
        md.append(String.format(
                Locale.ROOT,
                "Each feature is compared on the workloads where it can matter, on "
                        + "every seed: the default configuration (everything as in *cache_aware* above) against the "
                        + "alternative, with least_loaded and round_robin for reference. The verdict follows one rule, "
                        + "fixed before the runs, applied to each workload on each seed: one configuration is *better* "
                        + "when its hit ratio is higher by at least %.2f without a P99 TTFT more than %.0f%% higher, or its "
                        + "P99 is at least %.0f%% lower without a hit ratio lower by %.2f or more; a *trade-off* when each "
                        + "wins one measure by those margins; otherwise there is *no clear difference*. A feature's "
                        + "verdict counts those (workload, seed) pairs: the numbers support a default outright only when "
                        + "the alternative is better on none and there is no trade-off; when each side wins somewhere, "
                        + "or one measure is traded for the other, the verdict says *trade-off*. Figures are the median "
                        + "over the seeds with the range in brackets.%n%n",
                HIT_MARGIN,
                100 * P99_MARGIN,
                100 * P99_MARGIN,
                HIT_MARGIN));
        md.append(summary(features)).append('\n');
        for (Feature f : features) {
            md.append("### ").append(f.title()).append("\n\n").append(f.intro()).append("\n\n");
            md.append(table(f)).append('\n');
            md.append(verdictText(f)).append("\n\n");
        }
        return md.toString();
    }

    static String table(Feature f) {
        StringBuilder t = new StringBuilder("| workload | configuration | hit ratio | of ideal | TTFT p50 (ms) "
                + "| TTFT p99 (ms) | max/mean req | cached tokens predicted → delivered | over-predicted |\n"
                + "|---|---|---|---:|---:|---|---:|---|---:|\n");
        for (CaseRuns cr : f.results()) {
            boolean first = true;
            for (Variant v : cr.variants()) {
                String l = v.label();
                boolean none = !v.policy().equals("cache_aware")
                        || cr.spread(l, r -> r.feedback().reports()).median() == 0;
                String pd = none
                        ? "—"
                        : String.format(
                                Locale.ROOT,
                                "%s → %s (%s)",
                                mega(cr.spread(l, r -> r.feedback().predicted()).median()),
                                mega(cr.spread(l, r -> r.feedback().delivered()).median()),
                                cr.spread(l, r -> r.feedback().deliveredShare()).format("%.2f"));
                String over = none
                        ? "—"
                        : String.format(
                                Locale.ROOT,
                                "%s (%.0f · %.0f)",
                                cr.spread(l, r -> r.feedback().overpredicted()).format("%.0f"),
                                cr.spread(l, r -> r.feedback().staleDropped()).median(),
                                cr.spread(l, r -> r.feedback().inconclusive()).median());
                t.append("| ")
                        .append(first ? cr.title() : "")
                        .append(" | ")
                        .append(l)
                        .append(" | ")
                        .append(cr.spread(l, RunResult::hitRatio).format("%.3f"))
                        .append(" | ")
                        .append(cr.spread(l, r -> r.hitRatio() / Math.max(1e-9, r.idealHitRatio()))
                                .format("%.2f"))
                        .append(" | ")
                        .append(cr.spread(l, RunResult::ttftP50Millis).format("%.0f"))
                        .append(" | ")
                        .append(cr.spread(l, RunResult::ttftP99Millis).format("%.0f"))
                        .append(" | ")
                        .append(cr.spread(l, RunResult::maxOverMeanRequests).format("%.2f"))
                        .append(" | ")
                        .append(pd)
                        .append(" | ")
                        .append(over)
                        .append(" |\n");
                first = false;
            }
        }
        return t.toString();
    }

    private static String mega(double tokens) {
        return String.format(Locale.ROOT, "%.2f M", tokens / 1e6);
    }

    /** The rule on each seed of one workload, counted: indexed by {@link Better#ordinal()}. */
    static int[] tally(Feature f, CaseRuns cr) {
        int[] n = new int[Better.values().length];
        for (CaseResult c : cr.seeds()) {
            n[compare(c.of(f.defaultLabel()), c.of(f.altLabel())).ordinal()]++;
        }
        return n;
    }

    /** The rule on every (workload, seed) pair, counted. */
    static int[] tally(Feature f) {
        int[] n = new int[Better.values().length];
        for (CaseRuns cr : f.results()) {
            int[] k = tally(f, cr);
            for (int i = 0; i < n.length; i++) {
                n[i] += k[i];
            }
        }
        return n;
    }

    /** Per workload: the figures and the rule's outcome on each seed; then the verdict. */
    static String verdictText(Feature f) {
        StringBuilder sb = new StringBuilder("By workload, ")
                .append(f.defaultName())
                .append(" (default) against ")
                .append(f.altName())
                .append(" (medians, then the rule seed by seed): ");
        boolean first = true;
        for (CaseRuns cr : f.results()) {
            int[] n = tally(f, cr);
            sb.append(first ? "" : "; ")
                    .append(cr.title())
                    .append(String.format(
                            Locale.ROOT,
                            " hit %.3f vs %.3f, P99 %.0f vs %.0f ms: ",
                            cr.spread(f.defaultLabel(), RunResult::hitRatio).median(),
                            cr.spread(f.altLabel(), RunResult::hitRatio).median(),
                            cr.spread(f.defaultLabel(), RunResult::ttftP99Millis)
                                    .median(),
                            cr.spread(f.altLabel(), RunResult::ttftP99Millis).median()))
                    .append(counts(f, n));
            first = false;
        }
        sb.append(".\n\n**Verdict:** ").append(verdict(f));
        return sb.toString();
    }

    /** "default better on 2 seeds, ..." for the non-zero counts. */
    private static String counts(Feature f, int[] n) {
        List<String> parts = new ArrayList<>();
        if (n[Better.DEFAULT.ordinal()] > 0) {
            parts.add(f.defaultName() + " better on " + seeds(n[Better.DEFAULT.ordinal()]));
        }
        if (n[Better.ALTERNATIVE.ordinal()] > 0) {
            parts.add(f.altName() + " better on " + seeds(n[Better.ALTERNATIVE.ordinal()]));
        }
        if (n[Better.TRADE_OFF.ordinal()] > 0) {
            parts.add("a trade-off on " + seeds(n[Better.TRADE_OFF.ordinal()]));
        }
        if (n[Better.NEITHER.ordinal()] > 0) {
            parts.add("no clear difference on " + seeds(n[Better.NEITHER.ordinal()]));
        }
        return String.join(", ", parts);
    }

    private static String seeds(int n) {
        return n + (n == 1 ? " seed" : " seeds");
    }

    static String verdict(Feature f) {
        int[] n = tally(f);
        int def = n[Better.DEFAULT.ordinal()];
        int alt = n[Better.ALTERNATIVE.ordinal()];
        int trade = n[Better.TRADE_OFF.ordinal()];
        int total = def + alt + trade + n[Better.NEITHER.ordinal()];
        if (total == 0) {
            return "no workload to compare.";
        }
        String pairs = String.format(Locale.ROOT, "of %d (workload, seed) pairs", total);
        if (alt == 0 && trade == 0 && def > 0) {
            return String.format(
                    Locale.ROOT,
                    "the numbers support the default (%s): better on %d %s, never " + "worse.",
                    f.defaultName(),
                    def,
                    pairs);
        }
        if (alt == 0 && trade == 0) {
            return String.format(
                    Locale.ROOT,
                    "the numbers support keeping the default (%s), without showing it "
                            + "better: no clear difference on all %d (workload, seed) pairs.",
                    f.defaultName(),
                    total);
        }
        if (alt == 0 && def == 0) {
            return String.format(
                    Locale.ROOT,
                    "no clear winner: a trade-off (one measure better, the other worse) "
                            + "on %d %s, no clear difference on the other %d; neither configuration better on any.",
                    trade,
                    pairs,
                    total - trade);
        }
        if (alt == 0) {
            return String.format(
                    Locale.ROOT,
                    "a trade-off, leaning to the default (%s): better on %d %s, a "
                            + "trade-off (one measure better, the other worse) on %d, %s better on none.",
                    f.defaultName(),
                    def,
                    pairs,
                    trade,
                    f.altName());
        }
        if (def == 0 && trade == 0) {
            return String.format(
                    Locale.ROOT,
                    "the numbers do not support the default: %s is better on %d %s and "
                            + "never worse (no clear difference on the other %d).",
                    f.altName(),
                    alt,
                    pairs,
                    total - alt);
        }
        if (def == 0) {
            return String.format(
                    Locale.ROOT,
                    "a trade-off, leaning to the alternative (%s): better on %d %s, a "
                            + "trade-off on %d, the default (%s) better on none.",
                    f.altName(),
                    alt,
                    pairs,
                    trade,
                    f.defaultName());
        }
        return String.format(
                Locale.ROOT,
                "a trade-off: the default (%s) is better on %d %s, %s on %d%s.",
                f.defaultName(),
                def,
                pairs,
                f.altName(),
                alt,
                trade > 0 ? ", a trade-off on " + trade : "");
    }

    static String summary(List<Feature> features) {
        StringBuilder t = new StringBuilder("| feature | default | alternative | (workload, seed) pairs: default "
                + "better · alternative better · trade-off · no clear difference | verdict |\n|---|---|---|---|---|\n");
        for (Feature f : features) {
            int[] n = tally(f);
            t.append("| ")
                    .append(f.title())
                    .append(" | ")
                    .append(f.defaultName())
                    .append(" | ")
                    .append(f.altName())
                    .append(" | ")
                    .append(n[Better.DEFAULT.ordinal()])
                    .append(" · ")
                    .append(n[Better.ALTERNATIVE.ordinal()])
                    .append(" · ")
                    .append(n[Better.TRADE_OFF.ordinal()])
                    .append(" · ")
                    .append(n[Better.NEITHER.ordinal()])
                    .append(" | ")
                    .append(verdict(f))
                    .append(" |\n");
        }
        return t.toString();
    }
}
