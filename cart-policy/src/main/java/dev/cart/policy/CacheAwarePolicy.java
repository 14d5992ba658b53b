package dev.cart.policy;

import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.spi.Candidates;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.PolicySettings.Setting;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The specification's cache-aware rule: route to a replica that holds a good enough prefix of the
 * prompt, unless it is overloaded, in which case load wins.
 *
 * <ol>
 *   <li>The router has already filtered the pool to usable candidates.</li>
 *   <li>The least-loaded candidate (load = in-flight + penalty; ties at random): the guard's reference.</li>
 *   <li>Prefix-match the key.</li>
 *   <li>A hit when matched/length &ge; {@code threshold} or matched &ge; {@code match_abs_threshold}.</li>
 *   <li>Among the holders of the longest match that are candidates, the best that the guard does not
 *       call overloaded; failing that, holders of the next-longest match that still counts as a hit.
 *       Holders exist but none qualifies: a new replica is chosen (below), reason {@code hit_overloaded}.
 *       Holders that cannot take the request (excluded by a retry, unhealthy, full) do not count: for
 *       this request it is a miss.</li>
 *   <li>Otherwise a miss, placed like a diversion, or by consistent hashing with bounded load when
 *       {@code miss_placement = consistent_hash} (on the key's start through the beginning of its second
 *       message, see {@link #hashAnchor}).</li>
 * </ol>
 * The router then records the routed prefix in the tree, so the next similar request follows it.
 *
 * <p><b>Prefill-aware ranking</b> ({@code prefill_aware}, on by default). The in-flight count says how
 * many requests a replica has, not how long a new one will wait for its first token there: that is the
 * prompt work queued ahead of it ({@link RoutingContext#pendingPrefill}: uncached units of the requests
 * routed there that have not had their first token) plus its own uncached part. A 2,000-token cold
 * prompt and a 50-token cached one count the same in flight; in the prefill queue they differ 40-fold.
 * So, with the guard unchanged (it still balances the in-flight load, which the decode batch and the
 * replica's memory follow):
 * <ul>
 *   <li>the best holder is the one with the least pending prefill, then the least load;</li>
 *   <li>a miss or a diversion goes to the candidate with the least pending prefill, then the least load
 *       (a cold prompt no longer lands on the replica the hot traffic avoids just because it has fewer
 *       requests, when those requests are cold prompts too);</li>
 *   <li>a holder whose pending prefill is at least the whole key is passed over when some candidate is
 *       idle (nothing in flight): the idle replica computes the whole prompt in no more time than the
 *       holder needs to reach it, with capacity that is otherwise wasted. Early in a hot prefix's life
 *       this spreads it while the pool is idle, instead of queueing every follower behind its first
 *       computation.</li>
 * </ul>
 * Off, every comparison is by load alone, as the specification words it. A replica set that does not
 * track pending prefill reports 0 for it, and the ranking falls back to load.
 *
 * <p>Guards ({@code guard}) decide when a holder is overloaded (by load, whatever the ranking):
 * <ul>
 *   <li>{@code abs_rel} (default): its load exceeds the least-loaded candidate's by more than
 *       {@code balance_abs_threshold} <em>and</em> by more than the factor {@code balance_rel_threshold}.
 *       Requiring both ignores noise in a lightly loaded pool.</li>
 *   <li>{@code median}: its load exceeds {@code median_factor} (2) times the median load of the other
 *       candidates (the lower middle one for an even count; taken as at least 1, so an idle pool does not
 *       divert everything).</li>
 *   <li>{@code bounded_load}: taking this request would put it above {@code bounded_load_factor} (1.25)
 *       times the mean load, rounded up; the tightest balance, at some cost in hit rate.</li>
 * </ul>
 *
 * <p>Stateless apart from its settings; thread-safe.
 */
public final class CacheAwarePolicy implements RoutingPolicy {

    /** When a cache holder counts as too busy to follow. */
    public enum Guard {
        /** Overloaded when above the least loaded by both the absolute and the relative margin. */
        ABS_REL,
        /** Overloaded when above {@code medianFactor} times the other candidates' median load. */
        MEDIAN,
        /** Overloaded when taking the request would exceed {@code boundedLoadFactor} times the mean load. */
        BOUNDED_LOAD
    }

    /** Where a request without a good match goes. */
    public enum MissPlacement {
        /** The least pending prefill, then the least load (ties at random), like a diversion. */
        LEAST_LOADED,
        /** Rendezvous hashing on the key's anchor, with the {@code hashLoadFactor} load bound. */
        CONSISTENT_HASH
    }

    /**
     * Every setting of a cache-aware policy, as its {@link Builder} made them; see the builder's methods
     * for what each means, its range and its default.
     *
     * @param threshold           {@link Builder#threshold}
     * @param matchAbsThreshold   {@link Builder#matchAbsThreshold}
     * @param balanceAbsThreshold {@link Builder#balanceAbsThreshold}
     * @param balanceRelThreshold {@link Builder#balanceRelThreshold}
     * @param guard               {@link Builder#guard}
     * @param medianFactor        {@link Builder#medianFactor}
     * @param boundedLoadFactor   {@link Builder#boundedLoadFactor}
     * @param missPlacement       {@link Builder#missPlacement}
     * @param hashLoadFactor      {@link Builder#hashLoadFactor}
     * @param prefillAware        {@link Builder#prefillAware}
     */
    public record Config(
            double threshold,
            int matchAbsThreshold,
            int balanceAbsThreshold,
            double balanceRelThreshold,
            Guard guard,
            double medianFactor,
            double boundedLoadFactor,
            MissPlacement missPlacement,
            double hashLoadFactor,
            boolean prefillAware) {}

    // The settings by name, with their defaults and ranges: what a configuration is checked against and what
    // the builder's methods check code's values against (one source for both).
    static final Setting<Double> THRESHOLD = PolicySettings.number(
            "threshold", 0.3, 0, 1, "matched fraction of the key at or above which a match is a hit");
    static final Setting<Integer> MATCH_ABS_THRESHOLD = PolicySettings.integer(
            "match_abs_threshold",
            8192,
            1,
            Integer.MAX_VALUE,
            "matched length (units) at or above which a match is a hit whatever the fraction");
    static final Setting<Integer> BALANCE_ABS_THRESHOLD = PolicySettings.integer(
            "balance_abs_threshold",
            8,
            0,
            Integer.MAX_VALUE,
            "abs_rel guard: a holder is overloaded above the least loaded candidate's load by more than this"
                    + " (and by the factor)");
    static final Setting<Double> BALANCE_REL_THRESHOLD = PolicySettings.number(
            "balance_rel_threshold",
            1.5,
            1,
            Double.MAX_VALUE,
            "abs_rel guard: a holder is overloaded above this times the least loaded candidate's load (and by the"
                    + " margin)");
    static final Setting<Guard> GUARD =
            PolicySettings.choice("guard", Guard.ABS_REL, "when a holder counts as too busy to follow");
    static final Setting<Double> MEDIAN_FACTOR = PolicySettings.number(
            "median_factor", 2.0, 1, 1000, "median guard: overloaded above this times the other candidates' median");
    static final Setting<Double> BOUNDED_LOAD_FACTOR = PolicySettings.number(
            "bounded_load_factor",
            1.25,
            1,
            1000,
            "bounded_load guard: overloaded when taking the request would exceed this times the mean load");
    static final Setting<MissPlacement> MISS_PLACEMENT = PolicySettings.choice(
            "miss_placement", MissPlacement.LEAST_LOADED, "where a request without a good match goes");
    static final Setting<Double> HASH_LOAD_FACTOR = PolicySettings.number(
                    "hash_load_factor", 1.25, 1, 1000, "load bound of consistent-hash miss placement")
            .orZero("unbounded");
    static final Setting<Boolean> PREFILL_AWARE = PolicySettings.bool(
            "prefill_aware",
            true,
            "rank by pending prefill before load, and pass over a holder with more prefill queued than the key"
                    + " when a replica is idle");

    /** Every setting of {@code cache_aware}, in the order of the documentation. */
    static final PolicySettings SETTINGS = PolicySettings.of(
            "cache_aware",
            THRESHOLD,
            MATCH_ABS_THRESHOLD,
            BALANCE_ABS_THRESHOLD,
            BALANCE_REL_THRESHOLD,
            GUARD,
            MEDIAN_FACTOR,
            BOUNDED_LOAD_FACTOR,
            MISS_PLACEMENT,
            HASH_LOAD_FACTOR,
            PREFILL_AWARE);

    private final double threshold;
    private final int matchAbsThreshold;
    private final int balanceAbsThreshold;
    private final double balanceRelThreshold;
    private final Guard guard;
    private final double medianFactor;
    private final double boundedLoadFactor;
    private final MissPlacement missPlacement;
    private final double hashLoadFactor;
    private final boolean prefillAware;
    private final Config config;

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
        this.prefillAware = b.prefillAware;
        this.config = new Config(
                threshold,
                matchAbsThreshold,
                balanceAbsThreshold,
                balanceRelThreshold,
                guard,
                medianFactor,
                boundedLoadFactor,
                missPlacement,
                hashLoadFactor,
                prefillAware);
    }

    /**
     * A builder at the defaults (the policy {@link Policies#cacheAware()} returns).
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** A policy from settings checked against {@link #SETTINGS} (what {@link Policies.CacheAwareProvider} makes). */
    static CacheAwarePolicy fromSettings(PolicySettings.Values v) {
        return builder()
                .threshold(v.get(THRESHOLD))
                .matchAbsThreshold(v.get(MATCH_ABS_THRESHOLD))
                .balanceAbsThreshold(v.get(BALANCE_ABS_THRESHOLD))
                .balanceRelThreshold(v.get(BALANCE_REL_THRESHOLD))
                .guard(v.get(GUARD))
                .medianFactor(v.get(MEDIAN_FACTOR))
                .boundedLoadFactor(v.get(BOUNDED_LOAD_FACTOR))
                .missPlacement(v.get(MISS_PLACEMENT))
                .hashLoadFactor(v.get(HASH_LOAD_FACTOR))
                .prefillAware(v.get(PREFILL_AWARE))
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

    @Override
    public String name() {
        return "cache_aware";
    }

    /** The loads the median guard sorts; none for the other guards. */
    private static final long[] NO_LOADS = new long[0];

    @Override
    public Choice choose(RoutingContext ctx) {
        List<Replica> candidates = ctx.candidates();
        Replica least = ctx.leastLoaded();
        PromptKey key = ctx.key();
        if (key.isEmpty()) {
            return Choice.of(place(ctx, least), Reason.EMPTY_TEXT);
        }
        // Only holders that can take the request count: a hit held by an excluded, unhealthy or full
        // replica is a miss for this request, not an overload.
        List<Match.Holding> holders = ctx.match().holders(); // longest first
        boolean hit = false;
        long leastLoad = least.load();
        long[] sorted = guard == Guard.MEDIAN ? sortedLoads(candidates) : NO_LOADS;
        long total = guard == Guard.BOUNDED_LOAD ? totalLoad(candidates) : 0;
        int idle = -1; // whether some candidate has nothing in flight: unknown until needed
        int i = 0;
        while (i < holders.size()) {
            int tier = holders.get(i).matchedLength();
            if (!isHit(tier, key.length())) {
                break;
            }
            List<Replica> eligible = new ArrayList<>(holders.size() - i);
            for (; i < holders.size() && holders.get(i).matchedLength() == tier; i++) {
                Replica r = holders.get(i).replica();
                if (!ctx.isCandidate(r)) {
                    continue;
                }
                hit = true;
                if (overloaded(r.load(), leastLoad, sorted, total, candidates.size())) {
                    continue;
                }
                if (prefillAware && ctx.pendingPrefill(r) >= key.length()) {
                    if (idle < 0) {
                        idle = anyIdle(candidates) ? 1 : 0;
                    }
                    if (idle == 1) {
                        continue; // an idle replica computes the whole prompt before this one reaches it
                    }
                }
                eligible.add(r);
            }
            Replica best = prefillAware
                    ? Candidates.leastByPendingPrefill(eligible, ctx)
                    : Candidates.least(eligible, Candidates.BY_LOAD, ctx.random());
            if (best != null) {
                return new Choice(best, Reason.CACHE_HIT, tier);
            }
        }
        if (hit) {
            return Choice.of(place(ctx, least), Reason.HIT_OVERLOADED);
        }
        if (missPlacement == MissPlacement.CONSISTENT_HASH) {
            return Choice.of(Rendezvous.pick(hashAnchor(key), candidates, hashLoadFactor), Reason.MISS_HASHED);
        }
        return Choice.of(place(ctx, least), Reason.MISS);
    }

    /**
     * Where a request goes when no holder takes it: the candidate with the least pending prefill, then the
     * least load (ties at random); without prefill awareness, {@code least}.
     */
    private Replica place(RoutingContext ctx, Replica least) {
        if (!prefillAware) {
            return least;
        }
        List<Replica> candidates = ctx.candidates();
        long minPending = Long.MAX_VALUE;
        for (int k = 0; k < candidates.size(); k++) {
            minPending = Math.min(minPending, ctx.pendingPrefill(candidates.get(k)));
        }
        if (ctx.pendingPrefill(least) == minPending) {
            return least; // the least loaded of all is also among the least pending: no second draw
        }
        Replica leastPending = Candidates.leastByPendingPrefill(candidates, ctx);
        return leastPending != null ? leastPending : least; // never null: there is a candidate
    }

    /**
     * What consistent-hash miss placement hashes: the key's prefix through the start of its second
     * message (at most {@link PromptKey#DEFAULT_ANCHOR_LIMIT} units of it) when the key has one, else
     * the key's own anchor (its first message). The first message is very often a system prompt every
     * request shares; hashing it alone sent every miss to one replica (only the load bound spread them).
     * With the second message's start, requests about the same document or from the same conversation
     * still meet, and different ones spread.
     */
    static long hashAnchor(PromptKey key) {
        if (key.boundaryCount() >= 2) {
            int end = Math.min(key.boundary(1), key.boundary(0) + PromptKey.DEFAULT_ANCHOR_LIMIT);
            int blocks = Math.min(end / key.blockSize(), key.blockCount());
            if (blocks > 0) {
                return key.blockHash(blocks - 1);
            }
        }
        return key.anchorHash();
    }

    private static boolean anyIdle(List<Replica> candidates) {
        for (int k = 0; k < candidates.size(); k++) {
            if (candidates.get(k).inFlight() == 0) {
                return true;
            }
        }
        return false;
    }

    private boolean isHit(int matched, int length) {
        return matched > 0 && (matched >= matchAbsThreshold || (double) matched / length >= threshold);
    }

    private boolean overloaded(long load, long leastLoad, long[] sorted, long total, int n) {
        return switch (guard) {
            case ABS_REL -> load - leastLoad > balanceAbsThreshold && load > leastLoad * balanceRelThreshold;
            case MEDIAN -> load > medianFactor * Math.max(medianOfOthers(sorted, load), 1.0);
            case BOUNDED_LOAD -> load + 1 > Rendezvous.boundedCap(boundedLoadFactor, total, n);
        };
    }

    private static long[] sortedLoads(List<Replica> candidates) {
        int n = candidates.size();
        long[] loads = new long[n];
        for (int i = 0; i < n; i++) {
            loads[i] = candidates.get(i).load();
        }
        Arrays.sort(loads);
        return loads;
    }

    /**
     * The median load of the other candidates (the lower middle one when they are an even number): the
     * holder is compared with the rest of the pool. Taking the holder and other hot holders into their
     * own median let two busy replicas beside two idle ones raise it to half their load, so the guard
     * could never trip (loads L, L, 0, 0: median L/2, and L &gt; 2 &times; L/2 never holds).
     */
    static long medianOfOthers(long[] sorted, long own) {
        int n = sorted.length - 1;
        if (n <= 0) {
            return 0;
        }
        int mid = (n - 1) / 2; // index among the others, lower middle for an even count
        int skip = Arrays.binarySearch(sorted, own); // one occurrence of the holder's own load
        return sorted[mid < skip || skip < 0 ? mid : mid + 1];
    }

    private static long totalLoad(List<Replica> candidates) {
        long t = 0;
        for (int i = 0; i < candidates.size(); i++) {
            t += candidates.get(i).load();
        }
        return t;
    }

    @Override
    public String toString() {
        return "cache_aware[threshold=" + threshold + " match_abs_threshold=" + matchAbsThreshold
                + " guard=" + guard.name().toLowerCase(java.util.Locale.ROOT) + " balance_abs_threshold="
                + balanceAbsThreshold
                + " balance_rel_threshold=" + balanceRelThreshold + " miss_placement="
                + missPlacement.name().toLowerCase(java.util.Locale.ROOT) + " prefill_aware=" + prefillAware + "]";
    }

    /**
     * Builds a {@link CacheAwarePolicy}. Every setting starts at its default (the specification's), given
     * with each method; each method checks its setting's range once, against the same range a configuration
     * is checked against, and the error names the method ({@code threshold must be in [0, 1], was 1.5}).
     * Not thread-safe; the policy it builds is.
     */
    public static final class Builder {
        private double threshold = THRESHOLD.defaultValue();
        private int matchAbsThreshold = MATCH_ABS_THRESHOLD.defaultValue();
        private int balanceAbsThreshold = BALANCE_ABS_THRESHOLD.defaultValue();
        private double balanceRelThreshold = BALANCE_REL_THRESHOLD.defaultValue();
        private Guard guard = GUARD.defaultValue();
        private double medianFactor = MEDIAN_FACTOR.defaultValue();
        private double boundedLoadFactor = BOUNDED_LOAD_FACTOR.defaultValue();
        private MissPlacement missPlacement = MISS_PLACEMENT.defaultValue();
        private double hashLoadFactor = HASH_LOAD_FACTOR.defaultValue();
        private boolean prefillAware = PREFILL_AWARE.defaultValue();

        private Builder() {}

        /**
         * Whether holders, misses and diversions are ranked by pending prefill before load, and a holder
         * with more prefill queued than the whole key is passed over for an idle replica (default true;
         * false compares by load alone, as the specification words it).
         *
         * @param v true to rank by pending prefill first
         * @return this builder
         */
        public Builder prefillAware(boolean v) {
            prefillAware = v;
            return this;
        }

        /**
         * Matched fraction of the key, in [0, 1], at or above which a match is a hit (default 0.3).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder threshold(double v) {
            threshold = THRESHOLD.check("threshold", v);
            return this;
        }

        /**
         * Matched length (units), at least 1, at or above which a match is a hit whatever the fraction (default 8192).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder matchAbsThreshold(int v) {
            matchAbsThreshold = MATCH_ABS_THRESHOLD.check("matchAbsThreshold", v);
            return this;
        }

        /**
         * The {@code abs_rel} guard's absolute margin: a holder is overloaded when its load exceeds the least
         * loaded candidate's by more than this (and by the relative factor); at least 0, default 8.
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder balanceAbsThreshold(int v) {
            balanceAbsThreshold = BALANCE_ABS_THRESHOLD.check("balanceAbsThreshold", v);
            return this;
        }

        /**
         * The {@code abs_rel} guard's relative factor, at least 1 (default 1.5).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder balanceRelThreshold(double v) {
            balanceRelThreshold = BALANCE_REL_THRESHOLD.check("balanceRelThreshold", v);
            return this;
        }

        /**
         * When a holder counts as overloaded (default {@link Guard#ABS_REL}).
         *
         * @param v the guard
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder guard(Guard v) {
            guard = java.util.Objects.requireNonNull(v);
            return this;
        }

        /**
         * {@code k} of the median guard, in [1, 1000] (default 2).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder medianFactor(double v) {
            medianFactor = MEDIAN_FACTOR.check("medianFactor", v);
            return this;
        }

        /**
         * {@code c} of the bounded-load guard, in [1, 1000] (default 1.25).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder boundedLoadFactor(double v) {
            boundedLoadFactor = BOUNDED_LOAD_FACTOR.check("boundedLoadFactor", v);
            return this;
        }

        /**
         * Where a request without a good match goes (default {@link MissPlacement#LEAST_LOADED}).
         *
         * @param v the placement
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder missPlacement(MissPlacement v) {
            missPlacement = java.util.Objects.requireNonNull(v);
            return this;
        }

        /**
         * Load bound {@code c} for consistent-hash miss placement: 0 for none, else in [1, 1000] (default 1.25).
         *
         * @param v the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder hashLoadFactor(double v) {
            hashLoadFactor = HASH_LOAD_FACTOR.check("hashLoadFactor", v);
            return this;
        }

        /**
         * The policy.
         *
         * @return a new policy with this builder's settings
         */
        public CacheAwarePolicy build() {
            return new CacheAwarePolicy(this);
        }
    }
}
