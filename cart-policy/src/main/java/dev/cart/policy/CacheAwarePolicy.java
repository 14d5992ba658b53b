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
 * prompt work queued ahead of it ({@link Replica#pendingPrefill()}: uncached units of the requests
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
    public static final boolean DEFAULT_PREFILL_AWARE = true;

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
     * {@code hash_load_factor}, {@code prefill_aware}. Other keys are ignored.
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
                .prefillAware(s.bool("prefill_aware", DEFAULT_PREFILL_AWARE))
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
            return Choice.of(place(ctx, least), Reason.EMPTY_TEXT);
        }
        // Only holders that can take the request count: a hit held by an excluded, unhealthy or full
        // replica is a miss for this request, not an overload.
        List<Match.Holding> holders = ctx.match().holders(); // longest first
        boolean hit = false;
        long leastLoad = least.load();
        long[] sorted = guard == Guard.MEDIAN ? sortedLoads(candidates) : null;
        long total = guard == Guard.BOUNDED_LOAD ? totalLoad(candidates) : 0;
        int idle = -1; // whether some candidate has nothing in flight: unknown until needed
        int i = 0;
        while (i < holders.size()) {
            int tier = holders.get(i).matchedLength();
            if (!isHit(tier, key.length())) {
                break;
            }
            Replica best = null;
            long bestPending = Long.MAX_VALUE;
            long bestLoad = Long.MAX_VALUE;
            int ties = 0;
            for (; i < holders.size() && holders.get(i).matchedLength() == tier; i++) {
                Replica r = holders.get(i).replica();
                if (!ctx.isCandidate(r)) {
                    continue;
                }
                hit = true;
                long load = r.load();
                if (overloaded(load, leastLoad, sorted, total, candidates.size())) {
                    continue;
                }
                long pending = 0;
                if (prefillAware) {
                    pending = r.pendingPrefill();
                    if (pending >= key.length()) {
                        if (idle < 0) {
                            idle = anyIdle(candidates) ? 1 : 0;
                        }
                        if (idle == 1) {
                            continue; // an idle replica computes the whole prompt before this one reaches it
                        }
                    }
                }
                int c = pending != bestPending ? Long.compare(pending, bestPending) : Long.compare(load, bestLoad);
                if (c < 0) {
                    best = r;
                    bestPending = pending;
                    bestLoad = load;
                    ties = 1;
                } else if (c == 0 && ctx.random().nextInt(++ties) == 0) {
                    best = r; // ties among holders at random, like RoutingContext.leastLoaded
                }
            }
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
            minPending = Math.min(minPending, candidates.get(k).pendingPrefill());
        }
        if (least.pendingPrefill() == minPending) {
            return least; // the least loaded of all is also among the least pending: no second draw
        }
        Replica best = null;
        long bestPending = Long.MAX_VALUE;
        long bestLoad = Long.MAX_VALUE;
        int ties = 0;
        for (int k = 0; k < candidates.size(); k++) {
            Replica r = candidates.get(k);
            long pending = r.pendingPrefill();
            long load = r.load();
            int c = pending != bestPending ? Long.compare(pending, bestPending) : Long.compare(load, bestLoad);
            if (c < 0) {
                best = r;
                bestPending = pending;
                bestLoad = load;
                ties = 1;
            } else if (c == 0 && ctx.random().nextInt(++ties) == 0) {
                best = r;
            }
        }
        return best;
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

    public boolean prefillAware() {
        return prefillAware;
    }

    @Override
    public String toString() {
        return "cache_aware[threshold=" + threshold + " match_abs_threshold=" + matchAbsThreshold
                + " guard=" + guard.name().toLowerCase() + " balance_abs_threshold=" + balanceAbsThreshold
                + " balance_rel_threshold=" + balanceRelThreshold + " miss_placement="
                + missPlacement.name().toLowerCase() + " prefill_aware=" + prefillAware + "]";
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
        private boolean prefillAware = DEFAULT_PREFILL_AWARE;

        private Builder() {
        }

        /**
         * Whether holders, misses and diversions are ranked by pending prefill before load, and a holder
         * with more prefill queued than the whole key is passed over for an idle replica (default true;
         * false compares by load alone, as the specification words it).
         */
        public Builder prefillAware(boolean v) {
            prefillAware = v;
            return this;
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
