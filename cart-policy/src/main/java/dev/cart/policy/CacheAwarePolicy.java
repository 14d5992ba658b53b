package dev.cart.policy;

import dev.cart.core.Choice;
import dev.cart.core.Match;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.Replica;
import dev.cart.core.RoutingContext;
import dev.cart.core.RoutingPolicy;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The specification's cache-aware rule: route to a replica that holds a good enough prefix of the
 * prompt, unless it is overloaded, in which case load wins.
 *
 * <ol>
 *   <li>The router has already filtered the pool to usable candidates.</li>
 *   <li>The least-loaded candidate (load = in-flight + penalty; ties at random).</li>
 *   <li>Prefix-match the key.</li>
 *   <li>A hit when matched/length &ge; {@code threshold} or matched &ge; {@code match_abs_threshold}.</li>
 *   <li>Among the holders of the longest match that are candidates, the least loaded that the guard
 *       does not call overloaded; failing that, holders of the next-longest match that still counts as
 *       a hit. No such holder: the least-loaded candidate, reason {@code hit_overloaded}.</li>
 *   <li>Otherwise a miss, placed on the least-loaded candidate, or by consistent hashing with bounded
 *       load on the key's anchor when {@code miss_placement = consistent_hash}.</li>
 * </ol>
 * The router then records the routed prefix in the tree, so the next similar request follows it.
 *
 * <p>Guards ({@code guard}) decide when a holder is overloaded:
 * <ul>
 *   <li>{@code abs_rel} (default): its load exceeds the least-loaded candidate's by more than
 *       {@code balance_abs_threshold} <em>and</em> by more than the factor {@code balance_rel_threshold}.
 *       Requiring both ignores noise in a lightly loaded pool.</li>
 *   <li>{@code median}: its load exceeds {@code median_factor} (2) times the median candidate load
 *       (the median taken as at least 1, so an idle pool does not divert everything).</li>
 *   <li>{@code bounded_load}: taking this request would put it above {@code bounded_load_factor} (1.25)
 *       times the mean load, rounded up; the tightest balance, at some cost in hit rate.</li>
 * </ul>
 *
 * <p>Stateless apart from its settings; thread-safe.
 */
public final class CacheAwarePolicy implements RoutingPolicy {

    /** When a cache holder counts as too busy to follow. */
    public enum Guard { ABS_REL, MEDIAN, BOUNDED_LOAD }

    /** Where a request without a good match goes. */
    public enum MissPlacement { LEAST_LOADED, CONSISTENT_HASH }

    public static final double DEFAULT_THRESHOLD = 0.3;
    public static final int DEFAULT_MATCH_ABS_THRESHOLD = 8192;
    public static final int DEFAULT_BALANCE_ABS_THRESHOLD = 8;
    public static final double DEFAULT_BALANCE_REL_THRESHOLD = 1.5;
    public static final double DEFAULT_MEDIAN_FACTOR = 2.0;
    public static final double DEFAULT_BOUNDED_LOAD_FACTOR = 1.25;
    public static final double DEFAULT_HASH_LOAD_FACTOR = 1.25;

    private final double threshold;
    private final int matchAbsThreshold;
    private final int balanceAbsThreshold;
    private final double balanceRelThreshold;
    private final Guard guard;
    private final double medianFactor;
    private final double boundedLoadFactor;
    private final MissPlacement missPlacement;
    private final double hashLoadFactor;

    private CacheAwarePolicy(Builder b) {
        this.threshold = b.threshold;
        this.matchAbsThreshold = b.matchAbsThreshold;
        this.balanceAbsThreshold = b.balanceAbsThreshold;
        this.balanceRelThreshold = b.balanceRelThreshold;
        this.guard = b.guard;
        this.medianFactor = b.medianFactor;
        this.boundedLoadFactor = b.boundedLoadFactor;
        this.missPlacement = b.missPlacement;
        this.hashLoadFactor = b.hashLoadFactor;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The policy with the specification's defaults. */
    public static CacheAwarePolicy defaults() {
        return builder().build();
    }

    /**
     * Reads the settings of the config's {@code cache} section: {@code threshold},
     * {@code match_abs_threshold}, {@code balance_abs_threshold}, {@code balance_rel_threshold},
     * {@code guard}, {@code median_factor}, {@code bounded_load_factor}, {@code miss_placement},
     * {@code hash_load_factor}. Other keys are ignored.
     */
    public static CacheAwarePolicy fromSettings(Map<String, ?> settings) {
        Settings s = new Settings(settings, "cache.");
        return builder()
                .threshold(s.decimal("threshold", DEFAULT_THRESHOLD, 0.0, 1.0))
                .matchAbsThreshold(s.integer("match_abs_threshold", DEFAULT_MATCH_ABS_THRESHOLD, 1,
                        Integer.MAX_VALUE))
                .balanceAbsThreshold(s.integer("balance_abs_threshold", DEFAULT_BALANCE_ABS_THRESHOLD, 0,
                        Integer.MAX_VALUE))
                .balanceRelThreshold(s.decimal("balance_rel_threshold", DEFAULT_BALANCE_REL_THRESHOLD, 1.0,
                        Double.MAX_VALUE))
                .guard(s.choice("guard", Guard.ABS_REL, Guard.class))
                .medianFactor(s.decimal("median_factor", DEFAULT_MEDIAN_FACTOR, 1.0, 1000.0))
                .boundedLoadFactor(s.decimal("bounded_load_factor", DEFAULT_BOUNDED_LOAD_FACTOR, 1.0, 1000.0))
                .missPlacement(s.choice("miss_placement", MissPlacement.LEAST_LOADED, MissPlacement.class))
                .hashLoadFactor(s.loadFactor("hash_load_factor", DEFAULT_HASH_LOAD_FACTOR))
                .build();
    }

    @Override
    public String name() {
        return "cache_aware";
    }

    @Override
    public Choice choose(RoutingContext ctx) {
        List<Replica> candidates = ctx.candidates();
        Replica least = ctx.leastLoaded();
        PromptKey key = ctx.key();
        if (key.isEmpty()) {
            return Choice.of(least, Reason.EMPTY_TEXT);
        }
        Match match = ctx.match();
        if (isHit(match.matchedLength(), key.length())) {
            long leastLoad = least.load();
            double median = guard == Guard.MEDIAN ? medianLoad(candidates) : 0;
            long total = guard == Guard.BOUNDED_LOAD ? totalLoad(candidates) : 0;
            List<Match.Holding> holders = match.holders(); // longest first
            int i = 0;
            while (i < holders.size()) {
                int tier = holders.get(i).matchedLength();
                if (!isHit(tier, key.length())) {
                    break;
                }
                Replica best = null;
                long bestLoad = Long.MAX_VALUE;
                int ties = 0;
                for (; i < holders.size() && holders.get(i).matchedLength() == tier; i++) {
                    Replica r = holders.get(i).replica();
                    if (!ctx.isCandidate(r)) {
                        continue;
                    }
                    long load = r.load();
                    if (overloaded(load, leastLoad, median, total, candidates.size())) {
                        continue;
                    }
                    if (load < bestLoad) {
                        best = r;
                        bestLoad = load;
                        ties = 1;
                    } else if (load == bestLoad && ctx.random().nextInt(++ties) == 0) {
                        best = r;
                    }
                }
                if (best != null) {
                    return new Choice(best, Reason.CACHE_HIT, tier);
                }
            }
            return Choice.of(least, Reason.HIT_OVERLOADED);
        }
        if (missPlacement == MissPlacement.CONSISTENT_HASH) {
            return Choice.of(Rendezvous.pick(key.anchorHash(), candidates, hashLoadFactor), Reason.MISS_HASHED);
        }
        return Choice.of(least, Reason.MISS);
    }

    private boolean isHit(int matched, int length) {
        return matched > 0 && (matched >= matchAbsThreshold || (double) matched / length >= threshold);
    }

    private boolean overloaded(long load, long leastLoad, double median, long total, int n) {
        return switch (guard) {
            case ABS_REL -> load - leastLoad > balanceAbsThreshold && load > leastLoad * balanceRelThreshold;
            case MEDIAN -> load > medianFactor * Math.max(median, 1.0);
            case BOUNDED_LOAD -> load + 1 > Math.ceil(boundedLoadFactor * (total + 1) / n);
        };
    }

    private static double medianLoad(List<Replica> candidates) {
        int n = candidates.size();
        long[] loads = new long[n];
        for (int i = 0; i < n; i++) {
            loads[i] = candidates.get(i).load();
        }
        Arrays.sort(loads);
        return n % 2 == 1 ? loads[n / 2] : (loads[n / 2 - 1] + loads[n / 2]) / 2.0;
    }

    private static long totalLoad(List<Replica> candidates) {
        long t = 0;
        for (int i = 0; i < candidates.size(); i++) {
            t += candidates.get(i).load();
        }
        return t;
    }

    public double threshold() {
        return threshold;
    }

    public int matchAbsThreshold() {
        return matchAbsThreshold;
    }

    public int balanceAbsThreshold() {
        return balanceAbsThreshold;
    }

    public double balanceRelThreshold() {
        return balanceRelThreshold;
    }

    public Guard guard() {
        return guard;
    }

    public MissPlacement missPlacement() {
        return missPlacement;
    }

    @Override
    public String toString() {
        return "cache_aware[threshold=" + threshold + " match_abs_threshold=" + matchAbsThreshold
                + " guard=" + guard.name().toLowerCase() + " balance_abs_threshold=" + balanceAbsThreshold
                + " balance_rel_threshold=" + balanceRelThreshold + " miss_placement="
                + missPlacement.name().toLowerCase() + "]";
    }

    /** Builds a {@link CacheAwarePolicy}; every setting has the documented default. */
    public static final class Builder {
        private double threshold = DEFAULT_THRESHOLD;
        private int matchAbsThreshold = DEFAULT_MATCH_ABS_THRESHOLD;
        private int balanceAbsThreshold = DEFAULT_BALANCE_ABS_THRESHOLD;
        private double balanceRelThreshold = DEFAULT_BALANCE_REL_THRESHOLD;
        private Guard guard = Guard.ABS_REL;
        private double medianFactor = DEFAULT_MEDIAN_FACTOR;
        private double boundedLoadFactor = DEFAULT_BOUNDED_LOAD_FACTOR;
        private MissPlacement missPlacement = MissPlacement.LEAST_LOADED;
        private double hashLoadFactor = DEFAULT_HASH_LOAD_FACTOR;

        private Builder() {
        }

        /** Matched fraction of the key, in [0, 1], at or above which a match is a hit. */
        public Builder threshold(double v) {
            if (!(v >= 0.0 && v <= 1.0)) {
                throw new IllegalArgumentException("cache.threshold must be in [0, 1], was " + v);
            }
            threshold = v;
            return this;
        }

        /** Matched length (units) at or above which a match is a hit whatever the fraction. */
        public Builder matchAbsThreshold(int v) {
            if (v < 1) {
                throw new IllegalArgumentException("cache.match_abs_threshold must be at least 1, was " + v);
            }
            matchAbsThreshold = v;
            return this;
        }

        public Builder balanceAbsThreshold(int v) {
            if (v < 0) {
                throw new IllegalArgumentException("cache.balance_abs_threshold must be at least 0, was " + v);
            }
            balanceAbsThreshold = v;
            return this;
        }

        public Builder balanceRelThreshold(double v) {
            if (!(v >= 1.0)) {
                throw new IllegalArgumentException("cache.balance_rel_threshold must be at least 1, was " + v);
            }
            balanceRelThreshold = v;
            return this;
        }

        public Builder guard(Guard v) {
            guard = java.util.Objects.requireNonNull(v);
            return this;
        }

        /** {@code k} of the median guard. */
        public Builder medianFactor(double v) {
            if (!(v >= 1.0)) {
                throw new IllegalArgumentException("cache.median_factor must be at least 1, was " + v);
            }
            medianFactor = v;
            return this;
        }

        /** {@code c} of the bounded-load guard. */
        public Builder boundedLoadFactor(double v) {
            if (!(v >= 1.0)) {
                throw new IllegalArgumentException("cache.bounded_load_factor must be at least 1, was " + v);
            }
            boundedLoadFactor = v;
            return this;
        }

        public Builder missPlacement(MissPlacement v) {
            missPlacement = java.util.Objects.requireNonNull(v);
            return this;
        }

        /** Load bound {@code c} for consistent-hash miss placement; 0 for none. */
        public Builder hashLoadFactor(double v) {
            if (!(v == 0.0 || v >= 1.0)) {
                throw new IllegalArgumentException(
                        "cache.hash_load_factor must be 0 (unbounded) or at least 1, was " + v);
            }
            hashLoadFactor = v;
            return this;
        }

        public CacheAwarePolicy build() {
            return new CacheAwarePolicy(this);
        }
    }
}
