package dev.cart.policy;

import dev.cart.core.Outcome;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.PolicySettings.Setting;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Routes each request to the replica expected to give it its first token soonest.
 *
 * <p>For every candidate the policy predicts the request's time to first token (TTFT) from what the
 * router knows and a small model of that replica learned online:
 *
 * <pre>
 *   units     = pending prefill queued there + (key length - prefix it holds)
 *   predicted = prefill x units / 1000 + decode x in-flight load + base          (milliseconds)
 * </pre>
 *
 * and picks the smallest prediction (ties at random) among the candidates within the load bound (below).
 * The router has already removed candidates at their {@code max_load}, unhealthy or excluded, so the choice
 * is always admissible.
 *
 * <p><b>Learning.</b> The model's shape is the prior's ({@code prior_prefill_ms_per_1k_units},
 * {@code prior_decode_ms_per_request}, {@code prior_base_ms}); what is learned, per replica, is one speed
 * factor on it, from what each lease reports: the time from routing to its first token
 * ({@link RoutingPolicy#onFirstToken}) against the prediction the decision made. The factor is an
 * exponentially weighted mean of log(measured / predicted) ({@code learning_rate}, default 0.05: about the
 * last 20 first tokens of the replica count; its first {@value #WARM_UP} are a running mean). One factor
 * absorbs both what the prior cannot know (the unit: a character key needs about a quarter of a token
 * key's time per unit) and how fast the replica is (a GPU twice as fast learns half the factor). A lease
 * closed without a first token (a stall that timed out) counts as a lower bound when it took longer than
 * predicted. A log-mean of ratios, rather than a regression of three coefficients, was chosen because it
 * cannot diverge: the regression, tried first, blew up on the Mooncake trace replay, whose prompts range
 * over two orders of magnitude. Two bounds keep one bad replica from poisoning its own model or the
 * choice:
 * <ul>
 *   <li>an observation counts as at most 4 times (and at least a quarter of) what was predicted, so a
 *       single stall moves the factor a bounded step;</li>
 *   <li>a replica's factor is capped at 16 times the pool's (lower) median factor, so a replica that stalled is
 *       still tried again once the others are that much busier, and it recovers from what it then
 *       reports.</li>
 * </ul>
 * A replica never observed starts from the pool's median factor (1, the prior, while nothing is known),
 * so a new replica is tried as an ordinary one. Learned models are kept by replica id, so they
 * survive a reload that rebuilds the replica objects.
 *
 * <p><b>Load bound.</b> Greedy on TTFT alone, a prefix every request shares stays on the replicas that hold
 * it while their predicted TTFT (queue plus a short uncached tail) is lower than an idle replica's for the
 * whole prompt, which in-flight decode load rarely outweighs: on one seed of the report's multi-turn
 * workload two replicas took every request, up to 64 in flight each, while two stayed idle. So a candidate
 * is passed over when taking the request would put its load above {@code bounded_load_factor} (2) times the
 * candidates' mean load, rounded up, unless that is below {@code bounded_load_slack} (8) in flight: the
 * bound of consistent hashing with bounded loads, which the least loaded candidate always meets. Measured
 * on the report (seeds 1-5), it removes the collapses (the worst multi-turn seed's P99 went from 13x
 * {@code cache_aware}'s to 2.3x on the uniform pool, 7.4x to 0.9x on the heterogeneous one) and keeps the
 * heterogeneous pool's gains. A share of the bound weighted by each replica's learned speed lost on the
 * Mooncake replay (P99 1.68x {@code cache_aware}'s against 1.23x), whose noisy estimates skew the shares;
 * with it, tighter factors (1.25, 1.5) cost P99 on most workloads, and looser bounds (factor 3, or a slack
 * of 16) kept worse worst seeds (multi-turn on the heterogeneous pool 1.7-7.3x {@code cache_aware}'s).
 *
 * <p>The policy needs first-token reports ({@code Lease.firstToken()}); without them it never learns and
 * ranks by the prior model: least pending prefill plus uncached units, then least load.
 *
 * <p><b>Explanation.</b> Each choice carries an {@link Estimate} (the decision's
 * {@link RouteDecision#detail()}): the winner's prediction and model and the runner-up's, which say why
 * the winner won. {@link #replicaStats()} gives each replica's learned model and its recent estimate
 * error (predicted against measured TTFT).
 *
 * <p><b>Reasons.</b> {@code cache_hit} when the chosen replica holds the longest match among candidates,
 * {@code hit_overloaded} when a candidate holds a longer prefix than the chosen one (the router then
 * records the route when the first token comes, as for a diversion), {@code miss} when no candidate holds
 * any, {@code empty_text} for an empty key.
 *
 * <p>Concurrency: {@link #choose} reads each replica's model through one volatile snapshot; observations
 * update a replica's model under that model's lock and publish a new snapshot. Thread-safe; no I/O.
 */
public final class PredictedTtftPolicy implements RoutingPolicy {

    /** Observations of a replica before its estimate error is recorded ("warmed up"). */
    static final int WARM_UP = 32;
    /** Recent estimate errors kept per replica. */
    static final int ERROR_WINDOW = 256;
    /** Bound on one observation: within [predicted / 4, predicted x 4]. */
    static final double OBSERVATION_BOUND = 4.0;
    /** Bound on a replica's speed factor: at most this times the pool's (lower) median factor. */
    static final double POOL_BOUND = 16.0;
    /** Default {@code bounded_load_factor}. */
    static final double DEFAULT_BOUNDED_LOAD_FACTOR = 2.0;
    /** Default {@code bounded_load_slack}. */
    static final int DEFAULT_BOUNDED_LOAD_SLACK = 8;

    // The settings by name, with their defaults and ranges: what a configuration is checked against and what
    // the builder's methods check code's values against (one source for both).
    static final Setting<Double> PRIOR_PREFILL = PolicySettings.number(
            "prior_prefill_ms_per_1k_units", 50.0, 1e-6, 1e6, "the prior's prefill time per 1,000 prompt units, ms");
    static final Setting<Double> PRIOR_DECODE = PolicySettings.number(
            "prior_decode_ms_per_request", 0.5, 0, 1e6, "the prior's time per request in flight, ms");
    static final Setting<Double> PRIOR_BASE =
            PolicySettings.number("prior_base_ms", 15.0, 0, 1e6, "the prior's fixed time, ms");
    static final Setting<Double> LEARNING_RATE = PolicySettings.number(
            "learning_rate", 0.05, 1e-6, 1.0, "weight of each first token in its replica's speed factor");
    static final Setting<Double> BOUNDED_LOAD_FACTOR = PolicySettings.number(
                    "bounded_load_factor",
                    DEFAULT_BOUNDED_LOAD_FACTOR,
                    1,
                    1000,
                    "a candidate is passed over when taking the request would put it above this times the mean load")
            .orZero("unbounded");
    static final Setting<Integer> BOUNDED_LOAD_SLACK = PolicySettings.integer(
            "bounded_load_slack",
            DEFAULT_BOUNDED_LOAD_SLACK,
            1,
            1_000_000,
            "in-flight requests below which the load bound never passes a replica over");

    /** Every setting of {@code predicted_ttft}, in the order of the documentation. */
    static final PolicySettings SETTINGS = PolicySettings.of(
            "predicted_ttft",
            PRIOR_PREFILL,
            PRIOR_DECODE,
            PRIOR_BASE,
            LEARNING_RATE,
            BOUNDED_LOAD_FACTOR,
            BOUNDED_LOAD_SLACK);

    /**
     * A replica's learned model: milliseconds per 1,000 units of prefill, per request in flight, and fixed.
     *
     * @param prefillMillisPerKiloUnit time per 1,000 prompt units (characters or tokens, as the keys are)
     * @param decodeMillisPerRequest   time added per request in flight (the decode batch it shares)
     * @param baseMillis               fixed time (about one engine step)
     * @param observations             first tokens learned from so far (0: the prior or the pool median)
     */
    public record Speeds(
            double prefillMillisPerKiloUnit, double decodeMillisPerRequest, double baseMillis, long observations) {

        double predict(long units, long load) {
            return prefillMillisPerKiloUnit * units / 1000.0 + decodeMillisPerRequest * load + baseMillis;
        }

        @Override
        public String toString() {
            return String.format(
                    Locale.ROOT,
                    "prefill=%.3gms/1k decode=%.3gms/req base=%.3gms n=%d",
                    prefillMillisPerKiloUnit,
                    decodeMillisPerRequest,
                    baseMillis,
                    observations);
        }
    }

    /**
     * One replica's prediction for one request.
     *
     * @param replica         the replica's id
     * @param units           pending prefill there plus this prompt's part it does not hold
     * @param load            its in-flight load (in flight plus penalty) before this request
     * @param matchedLength   the prefix of the key it holds (units)
     * @param predictedMillis the predicted TTFT
     * @param speeds          the model the prediction used
     */
    public record ReplicaEstimate(
            String replica, long units, long load, int matchedLength, double predictedMillis, Speeds speeds) {
        @Override
        public String toString() {
            return String.format(
                    Locale.ROOT,
                    "%s %.1fms (units=%d load=%d matched=%d; %s)",
                    replica,
                    predictedMillis,
                    units,
                    load,
                    matchedLength,
                    speeds);
        }
    }

    /**
     * A decision's explanation, the {@link RouteDecision#detail()} of every choice this policy makes.
     *
     * @param chosen     the winner's estimate
     * @param runnerUp   the best other candidate within its load bound, or null when there was none
     * @param candidates how many candidates were compared
     * @param passedOver how many of them were passed over at their load bound ({@code bounded_load_factor})
     */
    public record Estimate(ReplicaEstimate chosen, @Nullable ReplicaEstimate runnerUp, int candidates, int passedOver) {
        /** Never contains prompt text. */
        @Override
        public String toString() {
            return "predicted_ttft chose " + chosen
                    + (runnerUp == null ? "" : " over " + runnerUp)
                    + " among " + candidates
                    + (passedOver == 0 ? "" : " (" + passedOver + " at their load bound)");
        }
    }

    /**
     * What the policy has learned about one replica, for hosts' displays and metrics.
     *
     * @param replica        the replica's id
     * @param speeds         its current model
     * @param errorSamples   estimate errors in the window (recorded once the replica is warmed up:
     *                       {@value #WARM_UP} observations)
     * @param errorP50       median relative error |predicted - measured| / measured over the last
     *                       {@value #ERROR_WINDOW} first tokens; NaN without samples
     * @param errorP90       its 90th percentile; NaN without samples
     */
    public record ReplicaStats(String replica, Speeds speeds, int errorSamples, double errorP50, double errorP90) {}

    /**
     * Every setting of the policy.
     *
     * @param prefillMillisPerKiloUnit the prior's {@link Speeds#prefillMillisPerKiloUnit}
     * @param decodeMillisPerRequest   the prior's {@link Speeds#decodeMillisPerRequest}
     * @param baseMillis               the prior's {@link Speeds#baseMillis}
     * @param learningRate             weight of each observation in a replica's speed factor
     * @param boundedLoadFactor        {@link Builder#boundedLoadFactor}
     * @param boundedLoadSlack         {@link Builder#boundedLoadSlack}
     */
    public record Config(
            double prefillMillisPerKiloUnit,
            double decodeMillisPerRequest,
            double baseMillis,
            double learningRate,
            double boundedLoadFactor,
            int boundedLoadSlack) {}

    private final Config config;
    private final Speeds prior;
    private final ConcurrentHashMap<String, ReplicaModel> models = new ConcurrentHashMap<>();
    private final double rate;
    private final double boundedLoadFactor;
    private final int boundedLoadSlack;
    /** The (lower) median of the observed replicas' speed factors, recomputed as observations come. */
    private volatile Speeds poolMedian;

    private final AtomicLong observations = new AtomicLong();

    private PredictedTtftPolicy(Builder b) {
        this.config = new Config(b.prefill, b.decode, b.base, b.rate, b.loadFactor, b.loadSlack);
        this.prior = new Speeds(b.prefill, b.decode, b.base, 0);
        this.rate = b.rate;
        this.boundedLoadFactor = b.loadFactor;
        this.boundedLoadSlack = b.loadSlack;

        this.poolMedian = prior;
    }

    /**
     * A builder at the defaults.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** A policy from settings checked against {@link #SETTINGS} (what {@link Policies.PredictedTtftProvider} makes). */
    static PredictedTtftPolicy fromSettings(PolicySettings.Values v) {
        return builder()
                .priorPrefillMillisPerKiloUnit(v.get(PRIOR_PREFILL))
                .priorDecodeMillisPerRequest(v.get(PRIOR_DECODE))
                .priorBaseMillis(v.get(PRIOR_BASE))
                .learningRate(v.get(LEARNING_RATE))
                .boundedLoadFactor(v.get(BOUNDED_LOAD_FACTOR))
                .boundedLoadSlack(v.get(BOUNDED_LOAD_SLACK))
                .build();
    }

    /**
     * Every setting of this policy.
     *
     * @return the settings it was built with
     */
    public Config config() {
        return config;
    }

    /** The prior model (speed factor 1). */
    Speeds prior() {
        return prior;
    }

    @Override
    public String name() {
        return "predicted_ttft";
    }

    @Override
    public Choice choose(RoutingContext ctx) {
        List<Replica> candidates = ctx.candidates();
        PromptKey key = ctx.key();
        Match match = key.isEmpty() ? Match.none(0) : ctx.match();
        Speeds median = poolMedian;
        int n = candidates.size();
        ReplicaEstimate[] estimates = new ReplicaEstimate[n];
        long total = 0;
        int longestCandidate = 0;
        for (int i = 0; i < n; i++) {
            Replica r = candidates.get(i);
            int matched = match.matchedLength(r);
            longestCandidate = Math.max(longestCandidate, matched);
            estimates[i] = estimate(r, ctx.pendingPrefill(r), key.length(), matched, median);
            total += estimates[i].load();
        }
        Replica best = null;
        ReplicaEstimate bestEstimate = null;
        ReplicaEstimate second = null;
        int ties = 0;
        int passedOver = 0;
        // the least loaded candidate is always within the bound: its load is at most the mean, rounded down
        double cap = boundedLoadFactor == 0
                ? Double.POSITIVE_INFINITY
                : Math.max(boundedLoadSlack, Rendezvous.boundedCap(boundedLoadFactor, total, n));
        for (int i = 0; i < n; i++) {
            ReplicaEstimate e = estimates[i];
            if (e.load() + 1 > cap) {
                passedOver++;
                continue;
            }
            int c = bestEstimate == null ? -1 : Double.compare(e.predictedMillis(), bestEstimate.predictedMillis());
            if (c < 0) {
                second = bestEstimate;
                best = candidates.get(i);
                bestEstimate = e;
                ties = 1;
            } else if (c == 0 && ctx.random().nextInt(++ties) == 0) {
                second = bestEstimate;
                best = candidates.get(i);
                bestEstimate = e;
            } else if (second == null || e.predictedMillis() < second.predictedMillis()) {
                second = e;
            }
        }
        if (best == null || bestEstimate == null) { // the least loaded candidate is always within the bound
            throw new IllegalStateException("predicted_ttft: no candidate within the load bound");
        }
        return choice(key, longestCandidate, best, new Estimate(bestEstimate, second, n, passedOver));
    }

    private static Choice choice(PromptKey key, int longestCandidate, Replica best, Estimate e) {
        Reason reason;
        if (key.isEmpty()) {
            reason = Reason.EMPTY_TEXT;
        } else if (longestCandidate == 0) {
            reason = Reason.MISS;
        } else if (e.chosen().matchedLength() < longestCandidate) {
            reason = Reason.HIT_OVERLOADED;
        } else {
            reason = Reason.CACHE_HIT;
        }
        return new Choice(best, reason, e.chosen().matchedLength(), e);
    }

    private ReplicaEstimate estimate(Replica r, long pending, int keyLength, int matched, Speeds median) {
        long units = Math.max(0, pending) + Math.max(0, keyLength - matched);
        long load = Math.max(0, r.load());
        ReplicaModel m = models.get(r.id());
        Speeds s = m == null ? median : m.speeds;
        if (s.prefillMillisPerKiloUnit() > POOL_BOUND * median.prefillMillisPerKiloUnit()) {
            s = scaled(
                    POOL_BOUND * median.prefillMillisPerKiloUnit() / prior.prefillMillisPerKiloUnit(),
                    s.observations());
        }
        return new ReplicaEstimate(r.id(), units, load, matched, s.predict(units, load), s);
    }

    @Override
    public void onFirstToken(RouteDecision decision, long nanos) {
        if (decision.detail() instanceof Estimate e) {
            learn(e.chosen(), nanos / 1e6, true);
        }
    }

    @Override
    public void onLeaseClosed(RouteDecision decision, Outcome outcome, boolean firstToken, long nanos) {
        if (!firstToken && outcome != Outcome.CANCELLED && decision.detail() instanceof Estimate e) {
            double ms = nanos / 1e6;
            if (ms > e.chosen().predictedMillis()) {
                learn(e.chosen(), ms, false); // no first token after this long: a lower bound on the TTFT
            }
        }
    }

    private void learn(ReplicaEstimate e, double measuredMillis, boolean exact) {
        ReplicaModel m = models.computeIfAbsent(
                e.replica(),
                id -> new ReplicaModel(poolMedian.prefillMillisPerKiloUnit() / prior.prefillMillisPerKiloUnit()));
        m.observe(e, measuredMillis, exact);
        long n = observations.incrementAndGet();
        if (n <= 64 || (n & 15) == 0) {
            refreshPool();
        }
    }

    /** Recomputes the pool's median speed from the replicas observed so far. */
    private void refreshPool() {
        List<Double> known = new ArrayList<>();
        for (ReplicaModel m : models.values()) {
            Speeds s = m.speeds;
            if (s.observations() > 0) {
                known.add(s.prefillMillisPerKiloUnit() / prior.prefillMillisPerKiloUnit());
            }
        }
        if (known.isEmpty()) {
            return;
        }
        double[] f = new double[known.size()];
        for (int i = 0; i < f.length; i++) {
            f[i] = known.get(i);
        }
        poolMedian = scaled(median(f), 0);
    }

    /** The lower median: of two replicas, the faster, so one stalled replica of two cannot lift the cap. */
    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[(s.length - 1) / 2];
    }

    /**
     * What the policy has learned about every replica it has observed, by id.
     *
     * @return a new list, sorted by id; a snapshot taken without stopping routing
     */
    public List<ReplicaStats> replicaStats() {
        List<ReplicaStats> out = new ArrayList<>();
        for (Map.Entry<String, ReplicaModel> en : new java.util.TreeMap<>(models).entrySet()) {
            out.add(en.getValue().stats(en.getKey()));
        }
        return out;
    }

    /**
     * What the policy has learned about replica {@code id}, or null when it has not observed it.
     *
     * @param id a replica's {@link dev.cart.core.spi.Replica#id()}
     * @return its figures, or null when the policy has not observed it
     */
    public @Nullable ReplicaStats replicaStats(String id) {
        ReplicaModel m = models.get(id);
        return m == null ? null : m.stats(id);
    }

    /**
     * The median relative estimate error, |predicted - measured| / measured, over the recent first tokens
     * of every warmed-up replica together; NaN when there are none.
     *
     * @return the median relative error, 0 or more, or NaN
     */
    public double estimateErrorP50() {
        List<double[]> windows = new ArrayList<>();
        for (ReplicaModel m : models.values()) {
            windows.add(m.errors());
        }
        return quantile(concat(windows), 0.5);
    }

    private static double[] concat(Collection<double[]> parts) {
        int n = 0;
        for (double[] p : parts) {
            n += p.length;
        }
        double[] out = new double[n];
        int i = 0;
        for (double[] p : parts) {
            System.arraycopy(p, 0, out, i, p.length);
            i += p.length;
        }
        return out;
    }

    static double quantile(double[] v, double q) {
        if (v.length == 0) {
            return Double.NaN;
        }
        double[] s = v.clone();
        Arrays.sort(s);
        int rank = (int) Math.ceil(q * s.length);
        return s[Math.max(0, Math.min(s.length - 1, rank - 1))];
    }

    /**
     * One replica's speed: a factor on the prior's shape, learned as an exponentially weighted mean of
     * log(measured / predicted), each observation's ratio clamped to [1/4, 4]. Updated under its own lock;
     * read through the volatile {@link #speeds} snapshot.
     */
    final class ReplicaModel {
        private final double[] errors = new double[ERROR_WINDOW];
        private int errorCount;
        private long n;
        private double logFactor;
        volatile Speeds speeds;

        ReplicaModel(double startFactor) {
            this.logFactor = Math.log(startFactor);
            speeds = scaled(startFactor, 0);
        }

        synchronized void observe(ReplicaEstimate e, double measured, boolean exact) {
            double predicted = Math.max(1e-3, e.predictedMillis());
            if (exact && n >= WARM_UP && measured > 0) {
                errors[errorCount++ % ERROR_WINDOW] = Math.abs(e.predictedMillis() - measured) / measured;
            }
            double ratio =
                    Math.min(Math.max(Math.max(measured, 1e-3) / predicted, 1 / OBSERVATION_BOUND), OBSERVATION_BOUND);
            // the prediction may have used the pool's factor (a new replica) or been capped: learn relative to
            // this replica's own factor at the time of the estimate
            double used = Math.log(e.speeds().prefillMillisPerKiloUnit() / prior.prefillMillisPerKiloUnit());
            double target = used + Math.log(ratio);
            double alpha = n < WARM_UP ? Math.max(rate, 1.0 / (n + 2)) : rate;
            logFactor += alpha * (target - logFactor);
            n++;
            speeds = scaled(Math.exp(logFactor), n);
        }

        synchronized double[] errors() {
            return Arrays.copyOf(errors, Math.min(errorCount, ERROR_WINDOW));
        }

        ReplicaStats stats(String id) {
            double[] e = errors();
            return new ReplicaStats(id, speeds, e.length, quantile(e, 0.5), quantile(e, 0.9));
        }
    }

    private Speeds scaled(double factor, long observations) {
        return new Speeds(
                prior.prefillMillisPerKiloUnit() * factor,
                prior.decodeMillisPerRequest() * factor,
                prior.baseMillis() * factor,
                observations);
    }

    /**
     * Builds a {@link PredictedTtftPolicy}; every setting starts at its default and is range-checked against
     * the same range a configuration is checked against (the error names the method). Not thread-safe; the
     * policy it builds is.
     */
    public static final class Builder {
        private double prefill = PRIOR_PREFILL.defaultValue();
        private double decode = PRIOR_DECODE.defaultValue();
        private double base = PRIOR_BASE.defaultValue();
        private double rate = LEARNING_RATE.defaultValue();
        private double loadFactor = BOUNDED_LOAD_FACTOR.defaultValue();
        private int loadSlack = BOUNDED_LOAD_SLACK.defaultValue();

        private Builder() {}

        /**
         * The prior's prefill time per 1,000 prompt units, in (0, 1e6] ms (default 50: about 20,000 tokens/s;
         * with character keys the model learns about a quarter of it).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder priorPrefillMillisPerKiloUnit(double v) {
            prefill = PRIOR_PREFILL.check("priorPrefillMillisPerKiloUnit", v);
            return this;
        }

        /**
         * The prior's time per request in flight, in [0, 1e6] ms (default 0.5).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder priorDecodeMillisPerRequest(double v) {
            decode = PRIOR_DECODE.check("priorDecodeMillisPerRequest", v);
            return this;
        }

        /**
         * The prior's fixed time, in [0, 1e6] ms (default 15: about one engine step).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder priorBaseMillis(double v) {
            base = PRIOR_BASE.check("priorBaseMillis", v);
            return this;
        }

        /**
         * Weight of each first token in its replica's speed factor, in (0, 1] (default 0.05: about the last 20
         * observations count). The first {@value #WARM_UP} observations of a replica weigh more, as a
         * running mean.
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder learningRate(double v) {
            rate = LEARNING_RATE.check("learningRate", v);
            return this;
        }

        /**
         * The load bound {@code c}: 0 for none (only the router's {@code max_load}), else in [1, 1000] (default
         * {@value PredictedTtftPolicy#DEFAULT_BOUNDED_LOAD_FACTOR}). A replica is passed over when taking the
         * request would put it above {@code c} times the candidates' mean load, rounded up, and above
         * {@link #boundedLoadSlack}.
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder boundedLoadFactor(double v) {
            loadFactor = BOUNDED_LOAD_FACTOR.check("boundedLoadFactor", v);
            return this;
        }

        /**
         * In-flight requests, at least 1, below which the load bound never passes a replica over (default
         * {@value PredictedTtftPolicy#DEFAULT_BOUNDED_LOAD_SLACK}): in a lightly loaded pool the cached replica wins.
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder boundedLoadSlack(int v) {
            loadSlack = BOUNDED_LOAD_SLACK.check("boundedLoadSlack", v);
            return this;
        }

        /**
         * The policy.
         *
         * @return a new policy with this builder's settings, which has learned nothing yet
         */
        public PredictedTtftPolicy build() {
            return new PredictedTtftPolicy(this);
        }
    }
}
