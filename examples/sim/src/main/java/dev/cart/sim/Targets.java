package dev.cart.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The routing-quality targets (issue 6) and their verdicts over seeds. Each target is computed seed by
 * seed (cache_aware against its baseline from the same seed's runs) and judged twice: on the median over
 * the seeds and on the worst seed. A workload that was skipped keeps its targets, marked skipped.
 */
final class Targets {

    enum Kind {
        HIT_SHARE,
        P99_RATIO,
        MAX_MEAN
    }

    /**
     * One target: what it says, how it is measured, against which baseline (P99 ratios) and its limit.
     * Every kind but {@link Kind#HIT_SHARE} is met at or below the limit; a hit share at or above it.
     */
    record Target(String text, Kind kind, String baseline, double limit) {
        boolean met(double v) {
            return kind == Kind.HIT_SHARE ? v >= limit : v <= limit;
        }

        /** The worst of a spread: the lowest share, the highest ratio. */
        double worst(Spread s) {
            return kind == Kind.HIT_SHARE ? s.min() : s.max();
        }

        String format() {
            return kind == Kind.HIT_SHARE ? "%.3f" : "%.2f";
        }
    }

    /** The targets of one workload, in the order the issue lists them. */
    static List<Target> of(String workload) {
        List<Target> t = new ArrayList<>();
        if (workload.equals("rag-zipf") || workload.equals("multi-turn")) {
            t.add(new Target("cache_aware hit ratio >= 0.9 x ideal", Kind.HIT_SHARE, null, 0.9));
            t.add(new Target("cache_aware P99 TTFT <= 0.5 x round_robin", Kind.P99_RATIO, Variant.ROUND_ROBIN, 0.5));
        }
        if (workload.startsWith("hot-prefix")) {
            t.add(new Target("cache_aware max/mean load <= 1.5", Kind.MAX_MEAN, null, 1.5));
            t.add(new Target("cache_aware P99 TTFT <= 0.6 x strict affinity", Kind.P99_RATIO, Variant.STRICT, 0.6));
        }
        t.add(new Target("cache_aware P99 TTFT <= 1.1 x least_loaded", Kind.P99_RATIO, Variant.LEAST_LOADED, 1.1));
        return t;
    }

    /**
     * One target on one workload.
     *
     * @param ca         cache_aware's measure per seed (share, ratio or max/mean)
     * @param spec       the same for cache_aware as specified
     * @param rrRatio    cache_aware's P99 over round_robin's per seed (P99 targets; beside every baseline)
     * @param notes      per seed where cache_aware misses: why
     */
    record Verdict(
            Target target,
            String workload,
            String skipped,
            Spread ca,
            Spread spec,
            Spread rrRatio,
            Spread caP99,
            Spread baseP99,
            List<String> notes) {
        boolean skippedTarget() {
            return skipped != null;
        }

        boolean metMedian() {
            return !skippedTarget() && target.met(ca.median());
        }

        boolean metWorst() {
            return !skippedTarget() && target.met(target.worst(ca));
        }

        boolean specMetMedian() {
            return !skippedTarget() && target.met(spec.median());
        }

        boolean specMetWorst() {
            return !skippedTarget() && target.met(target.worst(spec));
        }
    }

    private Targets() {}

    static double value(Target t, RunResult r, RunMatrix.ScenarioResult sr) {
        return switch (t.kind()) {
            case HIT_SHARE -> r.hitRatio() / r.idealHitRatio();
            case MAX_MEAN -> r.maxOverMeanRequests();
            case P99_RATIO -> r.ttftP99Millis() / sr.of(t.baseline()).ttftP99Millis();
        };
    }

    /** Every target of every workload of {@code m}. */
    static List<Verdict> verdicts(RunMatrix.Matrix m) {
        List<Verdict> out = new ArrayList<>();
        for (RunMatrix.WorkloadRuns w : m.workloads()) {
            for (Target t : of(w.name())) {
                if (w.isSkipped()) {
                    out.add(new Verdict(t, w.name(), w.skipped(), null, null, null, null, null, List.of()));
                    continue;
                }
                int n = w.seeds().size();
                double[] ca = new double[n];
                double[] spec = new double[n];
                double[] rr = new double[n];
                List<String> notes = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    RunMatrix.ScenarioResult sr = w.seeds().get(i);
                    RunResult c = sr.of(Variant.CACHE_AWARE);
                    ca[i] = value(t, c, sr);
                    spec[i] = value(t, sr.of(Variant.SPECIFIED), sr);
                    rr[i] = c.ttftP99Millis() / sr.of(Variant.ROUND_ROBIN).ttftP99Millis();
                    if (!t.met(ca[i])) {
                        notes.add(note(t, sr, c));
                    }
                }
                Spread caP99 = w.spread(Variant.CACHE_AWARE, RunResult::ttftP99Millis);
                Spread baseP99 = t.baseline() == null ? null : w.spread(t.baseline(), RunResult::ttftP99Millis);
                out.add(new Verdict(
                        t,
                        w.name(),
                        null,
                        Spread.of(ca),
                        Spread.of(spec),
                        t.kind() == Kind.P99_RATIO ? Spread.of(rr) : null,
                        caP99,
                        baseP99,
                        notes));
            }
        }
        return out;
    }

    /** Why cache_aware misses {@code t} on one seed: out of reach (the TTFT floor), or by how much. */
    static String note(Target t, RunMatrix.ScenarioResult sr, RunResult ca) {
        if (t.kind() != Kind.P99_RATIO) {
            return String.format(Locale.ROOT, "seed %d: " + t.format(), sr.seed(), value(t, ca, sr));
        }
        double limit = t.limit() * sr.of(t.baseline()).ttftP99Millis();
        double floor = sr.prepared().ttftFloorMillis(0.99);
        if (floor > limit) {
            return String.format(
                    Locale.ROOT,
                    "seed %d: %.0f ms against %.0f ms allowed, out of reach (TTFT floor " + "%.0f ms)",
                    sr.seed(),
                    ca.ttftP99Millis(),
                    limit,
                    floor);
        }
        int[] slow = ReportMarkdown.slowest(sr, Variant.CACHE_AWARE);
        return String.format(
                Locale.ROOT,
                "seed %d: %.0f ms against %.0f ms allowed (floor %.0f ms; of the %d "
                        + "slowest requests %d sent during warm-up, %d with under half the prompt cached)",
                sr.seed(),
                ca.ttftP99Millis(),
                limit,
                floor,
                slow[0],
                slow[1],
                slow[2]);
    }

    /** How many of {@code vs} are met: {median, worst seed, specified median, specified worst, skipped}. */
    static int[] count(List<Verdict> vs) {
        int[] n = new int[5];
        for (Verdict v : vs) {
            n[0] += v.metMedian() ? 1 : 0;
            n[1] += v.metWorst() ? 1 : 0;
            n[2] += v.specMetMedian() ? 1 : 0;
            n[3] += v.specMetWorst() ? 1 : 0;
            n[4] += v.skippedTarget() ? 1 : 0;
        }
        return n;
    }
}
