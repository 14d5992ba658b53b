package dev.cart.sim;

import dev.cart.core.PromptKey;
import dev.cart.core.spi.RoutingPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The report's section on learning: each feature of the router's learning compared on and off, on the
 * workloads where it can matter, with a verdict on its default that follows a fixed rule.
 *
 * <p>A feature is a list of cases (a workload with its arrivals and cluster), each run under a reference
 * policy (least_loaded), the default configuration and the alternative. The verdict compares the default
 * with the alternative case by case: one is <em>better</em> when its hit ratio is higher by at least
 * {@link #HIT_MARGIN} without a P99 TTFT more than {@link #P99_MARGIN} higher, or its P99 is lower by at
 * least {@link #P99_MARGIN} without a hit ratio lower by {@link #HIT_MARGIN} or more; otherwise neither
 * is (a <em>trade-off</em> when each wins one of the two measures). The default is supported when the
 * alternative is better on no case.
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

    static final String REFERENCE = "least_loaded (reference)";

    private Features() {
    }

    /** One routing configuration of a case, with the prepared workload it runs (keys differ by mode). */
    record Arm(Report.Variant variant, PreparedWorkload prepared) {
    }

    /**
     * One workload of a feature.
     *
     * @param workload    the workload's name
     * @param setting     what differs from the main tables ("" if nothing)
     * @param arrivals    how requests arrive
     * @param cacheTokens each replica's cache in tokens (0: the modelled default)
     * @param arms        the configurations, reference first
     */
    record Case(String workload, String setting, String arrivals, long cacheTokens, List<Arm> arms) {
        String title() {
            return setting.isEmpty() ? workload : workload + ", " + setting;
        }
    }

    record CaseResult(Case c, List<Report.Row> rows) {
        RunResult of(String label) {
            for (Report.Row r : rows) {
                if (r.variant().label().equals(label)) {
                    return r.result();
                }
            }
            throw new IllegalArgumentException("no row " + label);
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
     * @param results      one per case
     * @param reused       true when the rows come from the main tables (not run again)
     */
    record Feature(String title, String intro, String defaultLabel, String altLabel, String defaultName,
                   String altName, List<CaseResult> results, boolean reused) {
    }

    /** Which of two configurations the rule calls better on one case. */
    enum Better { DEFAULT, ALTERNATIVE, NEITHER, TRADE_OFF }

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
        boolean trade = (Math.abs(dh) >= HIT_MARGIN && (dh > 0) != (altOverDef < 1)
                && Math.abs(altOverDef - 1) >= P99_MARGIN);
        return trade ? Better.TRADE_OFF : Better.NEITHER;
    }

    /** Runs every feature's cases ({@code main}: the main tables, whose prepared workloads are reused). */
    static List<Feature> run(Report.Settings s, List<Report.ScenarioResult> main,
                             Function<Report.Variant, Supplier<RoutingPolicy>> policies, boolean progress) {
        List<Feature> out = new ArrayList<>();
        out.add(multiDepth(s, main, policies, progress));
        out.add(feedback(s, main, policies, progress));
        out.add(tokenMode(s, policies, progress));
        out.add(whenToLearn(main));
        out.add(answers(s, main, policies, progress));
        return out;
    }

    private static Report.Variant reference() {
        return Report.Variant.shipped(REFERENCE, "least_loaded", Map.of());
    }

    private static Report.Variant cacheAware(String label) {
        return Report.Variant.shipped(label, "cache_aware", Map.of());
    }

    private static Report.ScenarioResult find(List<Report.ScenarioResult> main, String name) {
        for (Report.ScenarioResult r : main) {
            if (r.scenario().name().equals(name)) {
                return r;
            }
        }
        return null;
    }

    private static Case mainCase(Report.ScenarioResult sr, String setting, long cacheTokens, Report.Variant... vs) {
        List<Arm> arms = new ArrayList<>();
        for (Report.Variant v : vs) {
            arms.add(new Arm(v, sr.prepared()));
        }
        return new Case(sr.scenario().name(), setting, sr.scenario().arrivals(), cacheTokens, arms);
    }

    static CaseResult runCase(Report.Settings s, Case c, Function<Report.Variant, Supplier<RoutingPolicy>> policies,
                              boolean progress) {
        List<Report.Row> rows = new ArrayList<>();
        for (Arm a : c.arms()) {
            Simulation.Builder b = Report.simulation(s, a.variant(), policies, 0);
            if (c.cacheTokens() > 0) {
                b.cacheTokens(c.cacheTokens());
            }
            RunResult r = b.build().run(a.prepared());
            rows.add(new Report.Row(a.variant(), r));
            if (progress) {
                System.out.println(c.title() + ": " + r);
            }
        }
        return new CaseResult(c, rows);
    }

    private static List<CaseResult> runAll(Report.Settings s, List<Case> cases,
                                           Function<Report.Variant, Supplier<RoutingPolicy>> policies,
                                           boolean progress) {
        List<CaseResult> out = new ArrayList<>();
        for (Case c : cases) {
            out.add(runCase(s, c, policies, progress));
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------------
    // the features

    static final String MULTI_DEPTH = "cache_aware (multi-depth)";
    static final String SINGLE_DEPTH = "cache_aware, single-depth (first boundary)";

    static Feature multiDepth(Report.Settings s, List<Report.ScenarioResult> main,
                              Function<Report.Variant, Supplier<RoutingPolicy>> policies, boolean progress) {
        List<Case> cases = new ArrayList<>();
        for (String name : List.of("branch-resume", "multi-turn")) {
            Report.ScenarioResult sr = find(main, name);
            if (sr != null) {
                cases.add(mainCase(sr, "", 0, reference(), cacheAware(MULTI_DEPTH),
                        cacheAware(SINGLE_DEPTH).singleDepth(true).usage(false)));
            }
        }
        return new Feature("Multi-depth learning", "CART's tree records every prefix of a key it learns, so a "
                + "learned request leaves a route at each of its message boundaries (and blocks): multi-depth "
                + "learning is how matching works, not a setting, and a branching, continuing or resumed "
                + "conversation matches the longest part it shares with what came before. The alternative is the "
                + "single-depth router of the notes, one route per request at a fixed point: the router sees each "
                + "key only up to its first message boundary (`key.prefix(key.boundary(0))`, the end of the system "
                + "prompt here), for routing and for learning. Its predictions count that prefix, not the prompt, "
                + "so it is given no usage feedback; everything else is the default.",
                MULTI_DEPTH, SINGLE_DEPTH, "multi-depth (inherent)", "single-depth at the first message boundary",
                runAll(s, cases, policies, progress), false);
    }

    static final String FEEDBACK_ON = "cache_aware (feedback on)";
    static final String FEEDBACK_OFF = "cache_aware, feedback off";

    static Feature feedback(Report.Settings s, List<Report.ScenarioResult> main,
                            Function<Report.Variant, Supplier<RoutingPolicy>> policies, boolean progress) {
        long small = EngineConfig.defaults().cacheTokens() / FEEDBACK_CACHE_DIVISOR;
        String setting = String.format(Locale.ROOT, "cache %,d tokens per replica", small);
        List<Case> cases = new ArrayList<>();
        for (String name : List.of("rag-zipf", "multi-turn", "branch-resume")) {
            Report.ScenarioResult sr = find(main, name);
            if (sr != null) {
                cases.add(mainCase(sr, setting, small, reference(), cacheAware(FEEDBACK_ON),
                        cacheAware(FEEDBACK_OFF).feedback(false)));
            }
        }
        Report.ScenarioResult moon = find(main, "mooncake-trace");
        if (moon != null) {
            cases.add(mainCase(moon, "", 0, reference(), cacheAware(FEEDBACK_ON),
                    cacheAware(FEEDBACK_OFF).feedback(false)));
        }
        return new Feature("Feedback from the replicas", String.format(Locale.ROOT, "Replicas whose caches are "
                + "much smaller than what the router remembers: the RAG, multi-turn and branching workloads at "
                + "the main tables' arrival rates on replicas with a %s of the modelled cache (%,d tokens each), "
                + "and the Mooncake replay at the modelled cache, whose working set already exceeds it. The "
                + "router's tree (1,000,000 blocks, no eviction pass in these runs) keeps every route it learns. "
                + "Both configurations hand the replica's usage to the lease (`Lease.succeeded(ServedUsage)` with "
                + "its `prompt_tokens` and `cached_tokens`): with feedback off (`Router.Builder.feedback(false)`) "
                + "the router only compares, on (the default) it also drops the claims a lost prefix took with it "
                + "(`PrefixTree.forgetBranches`): not the request's own route, since the replica has just computed "
                + "the prompt again, but the replica's other claims that continue through the part it lost. "
                + "*Predicted → delivered* sums over the requests the cached "
                + "tokens the router predicted on the replica it chose and those the replica reported "
                + "(`RoutingListener.onCacheFeedback`), with delivered over predicted in brackets; "
                + "*over-predicted* counts the requests whose prediction exceeded the delivery by more than two "
                + "blocks (32 tokens) and a tenth of the prediction: a route the replica's cache no longer backed.",
                FEEDBACK_CACHE_DIVISOR == 4 ? "quarter" : "1/" + FEEDBACK_CACHE_DIVISOR, small),
                FEEDBACK_ON, FEEDBACK_OFF, "feedback on", "feedback off", runAll(s, cases, policies, progress), false);
    }

    static final String CHAR_KEYS = "cache_aware, character keys";
    static final String TOKEN_KEYS = "cache_aware, token keys";

    /** Workloads of the token-mode comparison, built from the seed like the main ones. */
    static List<Workload> tokenWorkloads(Report.Settings s) {
        long clusterCache = s.replicas * EngineConfig.defaults().cacheTokens();
        return List.of(Workloads.rag(s.seed, clusterCache), Workloads.multiTurn(s.seed), Workloads.branching(s.seed),
                Workloads.sharedPrefix(s.seed));
    }

    static Feature tokenMode(Report.Settings s, Function<Report.Variant, Supplier<RoutingPolicy>> policies,
                             boolean progress) {
        EngineConfig cfg = EngineConfig.defaults();
        List<Case> cases = new ArrayList<>();
        for (Workload w : tokenWorkloads(s)) {
            PreparedWorkload chars = PreparedWorkload.of(w, cfg,
                    new PreparedWorkload.Options(PromptKey.Unit.CHARS, true, true));
            double rate = rateForTokens(s, chars);
            Workload timed = w.poisson(rate, s.seed);
            chars = chars.retimed(timed);
            PreparedWorkload tokens = PreparedWorkload.of(w, cfg,
                    new PreparedWorkload.Options(PromptKey.Unit.TOKENS, true, true)).retimed(timed);
            String setting = String.format(Locale.ROOT, "tokenizing replica (mean prompt %,.0f tokens)",
                    chars.meanPromptTokens());
            cases.add(new Case(w.name(), setting, String.format(Locale.ROOT, "Poisson, %.1f req/s", rate), 0, List.of(
                    new Arm(reference(), chars), new Arm(cacheAware(CHAR_KEYS), chars),
                    new Arm(cacheAware(TOKEN_KEYS).settings(Map.of("match_abs_threshold", TOKEN_MATCH_ABS_THRESHOLD)),
                            tokens))));
        }
        return new Feature("Token mode against character mode", String.format(Locale.ROOT, "Both key modes "
                + "against the same replica, one that counts real tokens: the prompt rendered in its Llama-3 "
                + "template, each template marker one special token and the text between them encoded with "
                + "`cl100k_base` (jtokkit), 16-token blocks; it generates each answer's text, as many tokens as "
                + "that text encodes to, and caches those blocks too (see `examples/sim/README.md`). Character "
                + "keys are the default (64-character blocks); token keys are `cart-extract`'s token mode with the "
                + "same encoding (`ExtractOptions.tokenizer(Tokenizers.jtokkit(\"cl100k_base\")).blockTokens(16)`, "
                + "a router with `keyFormat(TOKENS, 16)` and `match_abs_threshold` %,d, the token equivalent of the "
                + "default 8,192 characters). Arrivals follow the load rule on the replica's token counts, so "
                + "rates and figures differ from the main tables'.", TOKEN_MATCH_ABS_THRESHOLD),
                CHAR_KEYS, TOKEN_KEYS, "character keys", "token keys (cl100k_base)",
                runAll(s, cases, policies, progress), false);
    }

    /** The load rule on a prepared workload's token counts (as the replica counts them). */
    static double rateForTokens(Report.Settings s, PreparedWorkload p) {
        EngineConfig cfg = EngineConfig.defaults();
        double tokensPerSecond = 1e9 / cfg.prefillTokenNanos() * s.replicas;
        return s.load * tokensPerSecond / p.meanPromptTokens();
    }

    static final String ON_ROUTE = "cache_aware (learn on_route)";

    static Feature whenToLearn(List<Report.ScenarioResult> main) {
        List<CaseResult> results = new ArrayList<>();
        for (Report.ScenarioResult sr : main) {
            RunResult ll = sr.of(Report.LEAST_LOADED);
            RunResult def = sr.of(Report.CACHE_AWARE);
            RunResult alt = sr.of(Report.ON_SUCCESS);
            if (ll == null || def == null || alt == null) {
                continue;
            }
            Case c = new Case(sr.scenario().name(), "", sr.scenario().arrivals(), 0, List.of());
            results.add(new CaseResult(c, List.of(new Report.Row(reference(), ll),
                    new Report.Row(cacheAware(ON_ROUTE), def),
                    new Report.Row(cacheAware(Report.ON_SUCCESS).learn(dev.cart.core.LearnMode.ON_SUCCESS), alt))));
        }
        return new Feature("When to learn", "From the main tables (the same runs): routes recorded when a request "
                + "is routed (`learn: on_route`, the default; a diverted request's route at its first token) "
                + "against recorded when the replica has answered (`on_success`).", ON_ROUTE, Report.ON_SUCCESS,
                "on_route", "on_success", results, true);
    }

    static final String ANSWERS_ON = "cache_aware (answers learned)";
    static final String ANSWERS_OFF = "cache_aware, answers not learned";

    static Feature answers(Report.Settings s, List<Report.ScenarioResult> main,
                           Function<Report.Variant, Supplier<RoutingPolicy>> policies, boolean progress) {
        List<Case> cases = new ArrayList<>();
        for (String name : List.of("multi-turn", "branch-resume")) {
            Report.ScenarioResult sr = find(main, name);
            if (sr != null) {
                cases.add(mainCase(sr, "", 0, reference(), cacheAware(ANSWERS_ON),
                        cacheAware(ANSWERS_OFF).answers(false)));
            }
        }
        return new Feature("Learning the answer", "The replica caches the blocks of the tokens it generates, as "
                + "vLLM V1 does, so after a turn it holds the conversation through its reply, and the workloads' "
                + "replies are the text their next turns carry back. With answers learned (the proxy's "
                + "`cache.learn_answer`, on by default) the host records, when a chat answer completes, the key "
                + "of the conversation followed by the reply, made by the same extractor from the request body "
                + "with the assistant message appended; without, the router knows the conversation up to its last "
                + "user message until the next turn is routed. Either way the next turn matches the replica that "
                + "served the previous one, which also holds the reply; what learning the answer changes first is "
                + "the router's prediction, which then covers the reply (compare predicted and delivered cached "
                + "tokens).", ANSWERS_ON, ANSWERS_OFF, "answers learned",
                "answers not learned", runAll(s, cases, policies, progress), false);
    }

    // ------------------------------------------------------------------------------------------------
    // output

    static int runs(List<Feature> features) {
        int n = 0;
        for (Feature f : features) {
            if (!f.reused()) {
                for (CaseResult c : f.results()) {
                    n += c.rows().size();
                }
            }
        }
        return n;
    }

    static String markdown(List<Feature> features) {
        StringBuilder md = new StringBuilder();
        md.append("## Learning: each feature on and off\n\n");
        md.append(String.format(Locale.ROOT, "Each feature is compared on the workloads where it can matter: "
                + "the default configuration (everything as in *cache_aware* above) against the alternative, with "
                + "least_loaded for reference. The verdict follows one rule, fixed before the runs: on a workload, "
                + "one configuration is *better* when its hit ratio is higher by at least %.2f without a P99 TTFT "
                + "more than %.0f%% higher, or its P99 is at least %.0f%% lower without a hit ratio lower by %.2f "
                + "or more; a *trade-off* when each wins one measure by those margins; otherwise there is *no "
                + "clear difference*. The numbers support a default when the alternative is better on no "
                + "workload.%n%n", HIT_MARGIN, 100 * P99_MARGIN, 100 * P99_MARGIN, HIT_MARGIN));
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
                + "| TTFT p99 (ms) | req/s | max/mean req | cached tokens predicted → delivered | over-predicted "
                + "| decisions |\n|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|\n");
        for (CaseResult cr : f.results()) {
            boolean first = true;
            for (Report.Row row : cr.rows()) {
                RunResult r = row.result();
                RunResult.Feedback fb = r.feedback();
                boolean none = fb.reports() == 0 || !row.variant().policy().equals("cache_aware");
                String pd = none ? "—" : String.format(Locale.ROOT, "%s → %s (%.2f)", mega(fb.predicted()),
                        mega(fb.delivered()), fb.deliveredShare());
                String over = none ? "—" : String.format(Locale.ROOT, "%d", fb.overpredicted());
                t.append(String.format(Locale.ROOT, "| %s | %s | %.3f | %.2f | %.0f | %.0f | %.2f | %.2f | %s | %s "
                                + "| %s |%n", first ? cr.c().title() : "", row.variant().label(), r.hitRatio(),
                        r.hitRatio() / Math.max(1e-9, r.idealHitRatio()), r.ttftP50Millis(), r.ttftP99Millis(),
                        r.requestsPerSecond(), r.maxOverMeanRequests(), pd, over, Report.decisions(r)));
                first = false;
            }
        }
        return t.toString();
    }

    private static String mega(long tokens) {
        return String.format(Locale.ROOT, "%.2f M", tokens / 1e6);
    }

    /** Per case: the comparison; then the verdict. */
    static String verdictText(Feature f) {
        StringBuilder sb = new StringBuilder("By workload, ").append(f.defaultName()).append(" (default) against ")
                .append(f.altName()).append(": ");
        boolean first = true;
        for (CaseResult cr : f.results()) {
            RunResult d = cr.of(f.defaultLabel());
            RunResult a = cr.of(f.altLabel());
            sb.append(first ? "" : "; ").append(cr.c().title()).append(String.format(Locale.ROOT,
                    " hit %.3f vs %.3f, P99 %.0f vs %.0f ms: ", d.hitRatio(), a.hitRatio(), d.ttftP99Millis(),
                    a.ttftP99Millis())).append(describe(compare(d, a), f));
            first = false;
        }
        sb.append(".\n\n**Verdict:** ").append(verdict(f));
        return sb.toString();
    }

    private static String describe(Better b, Feature f) {
        return switch (b) {
            case DEFAULT -> f.defaultName() + " better";
            case ALTERNATIVE -> f.altName() + " better";
            case TRADE_OFF -> "a trade-off";
            case NEITHER -> "no clear difference";
        };
    }

    static int[] tally(Feature f) {
        int[] n = new int[Better.values().length];
        for (CaseResult cr : f.results()) {
            n[compare(cr.of(f.defaultLabel()), cr.of(f.altLabel())).ordinal()]++;
        }
        return n;
    }

    static String verdict(Feature f) {
        int[] n = tally(f);
        int def = n[Better.DEFAULT.ordinal()];
        int alt = n[Better.ALTERNATIVE.ordinal()];
        int total = f.results().size();
        if (total == 0) {
            return "no workload to compare.";
        }
        if (alt == 0 && def > 0) {
            return String.format(Locale.ROOT, "the numbers support the default (%s): better on %d of %d workloads, "
                    + "never worse.", f.defaultName(), def, total);
        }
        if (alt == 0) {
            return String.format(Locale.ROOT, "the numbers support keeping the default (%s), without showing it "
                    + "better: no clear difference on %d of %d workloads%s.", f.defaultName(),
                    n[Better.NEITHER.ordinal()], total, n[Better.TRADE_OFF.ordinal()] > 0
                            ? ", a trade-off on " + n[Better.TRADE_OFF.ordinal()] : "");
        }
        if (def == 0) {
            return String.format(Locale.ROOT, "the numbers do not support the default: %s is better on %d of %d "
                    + "workloads and never worse; the default should change.", f.altName(), alt, total);
        }
        return String.format(Locale.ROOT, "mixed: %s better on %d workloads, %s on %d, of %d.", f.defaultName(),
                def, f.altName(), alt, total);
    }

    static String summary(List<Feature> features) {
        StringBuilder t = new StringBuilder("| feature | default | alternative | workloads: default better "
                + "· alternative better · trade-off · no clear difference | verdict |\n|---|---|---|---|---|\n");
        for (Feature f : features) {
            int[] n = tally(f);
            t.append("| ").append(f.title()).append(" | ").append(f.defaultName()).append(" | ")
                    .append(f.altName()).append(" | ").append(n[Better.DEFAULT.ordinal()]).append(" · ")
                    .append(n[Better.ALTERNATIVE.ordinal()]).append(" · ").append(n[Better.TRADE_OFF.ordinal()])
                    .append(" · ").append(n[Better.NEITHER.ordinal()]).append(" | ").append(verdict(f))
                    .append(" |\n");
        }
        return t.toString();
    }
}
