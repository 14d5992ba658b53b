package dev.cart.gateway;

import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * CART's settings in a Spring Cloud Gateway, bound from {@code cart.*} in {@code application.yaml}. The keys
 * and defaults are the proxy's {@code cache:} section (docs/configuration.md), written in kebab case
 * ({@code cart.match-abs-threshold}; the proxy's {@code match_abs_threshold} spelling binds too), plus what a
 * gateway needs instead of the proxy's {@code workers:} list: which load-balanced services CART routes
 * ({@code services}) and the per-replica admission defaults that a service instance's metadata may override.
 *
 * <p>An unknown key under {@code cart.} is an error, as in the proxy. The values are checked, all at once, when
 * the routing state is built ({@link CartGatewayRouting}); each problem names its key and the allowed range.
 * The policy settings ({@code threshold} … {@code prefill-aware}) are left null when not set, so the policy's
 * own defaults apply, exactly as the proxy hands the policy only the settings a file names.
 */
@ConfigurationProperties(prefix = "cart", ignoreUnknownFields = false)
public class CartProperties {

    /** Service ids (the host of an {@code lb://} route URI) whose instances CART chooses among. */
    private List<String> services = new ArrayList<>();
    /** Default admission cap per replica; instance metadata {@code cart.max-load} overrides it. */
    private int maxLoad = 256;
    /** Default load penalty per replica; instance metadata {@code cart.load-penalty} overrides it. */
    private int loadPenalty = 0;
    /** Request bodies larger than this get 413 (the proxy's {@code proxy.max_body_bytes}). */
    private int maxBodyBytes = 32 * 1024 * 1024;

    private String policy = "cache_aware";
    private @Nullable Double threshold;
    private @Nullable Integer matchAbsThreshold;
    private @Nullable Integer balanceAbsThreshold;
    private @Nullable Double balanceRelThreshold;
    private @Nullable String guard;
    private @Nullable Double medianFactor;
    private @Nullable Double boundedLoadFactor;
    private @Nullable String missPlacement;
    private @Nullable Double hashLoadFactor;
    private @Nullable Boolean prefillAware;

    private long maxTreeSize = 1_000_000;
    private int blockChars = 64;
    private long evictionIntervalSecs = 60;
    private int dailyCleanupHourUtc = -1;
    private long routeTtlSecs = 0;
    private String learn = "on_route";
    private boolean feedback = true;

    private @Nullable String tokenizer;
    private int blockTokens = 16;
    private int tokenCacheEntries = 1000;
    private int tokenCacheMaxChars = 65_536;
    private int maxConcurrentTokenizations = 0;

    /** The admission queue ({@code cart.flow.*}, the proxy's {@code flow:} section); off by default. */
    private Flow flow = new Flow();

    /**
     * {@return the service ids (the host of an {@code lb://} route URI) whose instances CART chooses among; empty (the
     * default): none, with a warning at start ({@code cart.services})}
     */
    public List<String> getServices() {
        return services;
    }

    /**
     * Sets {@code cart.services}: the service ids (the host of an {@code lb://} route URI) whose instances CART chooses
     * among; empty (the default): none, with a warning at start. Checked with every other value when the routing state
     * is built.
     *
     * @param services service ids, none blank
     */
    public void setServices(List<String> services) {
        this.services = services;
    }

    /**
     * {@return the default admission cap per instance (default 256); an instance's metadata {@code cart.max-load}
     * overrides it ({@code cart.max-load})}
     */
    public int getMaxLoad() {
        return maxLoad;
    }

    /**
     * Sets {@code cart.max-load}: the default admission cap per instance (default 256); an instance's metadata {@code
     * cart.max-load} overrides it. Checked with every other value when the routing state is built.
     *
     * @param maxLoad at least 1
     */
    public void setMaxLoad(int maxLoad) {
        this.maxLoad = maxLoad;
    }

    /**
     * {@return the default load penalty per instance (default 0); an instance's metadata {@code cart.load-penalty}
     * overrides it ({@code cart.load-penalty})}
     */
    public int getLoadPenalty() {
        return loadPenalty;
    }

    /**
     * Sets {@code cart.load-penalty}: the default load penalty per instance (default 0); an instance's metadata {@code
     * cart.load-penalty} overrides it. Checked with every other value when the routing state is built.
     *
     * @param loadPenalty at least 0
     */
    public void setLoadPenalty(int loadPenalty) {
        this.loadPenalty = loadPenalty;
    }

    /**
     * {@return the largest request body read for its key (default 32 MiB); a larger one is answered 413 ({@code
     * cart.max-body-bytes})}
     */
    public int getMaxBodyBytes() {
        return maxBodyBytes;
    }

    /**
     * Sets {@code cart.max-body-bytes}: the largest request body read for its key (default 32 MiB); a larger one is
     * answered 413. Checked with every other value when the routing state is built.
     *
     * @param maxBodyBytes at least 1
     */
    public void setMaxBodyBytes(int maxBodyBytes) {
        this.maxBodyBytes = maxBodyBytes;
    }

    /** {@return the routing policy's name (default {@code cache_aware}) ({@code cart.policy})} */
    public String getPolicy() {
        return policy;
    }

    /**
     * Sets {@code cart.policy}: the routing policy's name (default {@code cache_aware}). Checked with every other value
     * when the routing state is built.
     *
     * @param policy a policy name known to {@code RoutingPolicyProvider.named}
     */
    public void setPolicy(String policy) {
        this.policy = policy;
    }

    /**
     * {@return the matched fraction of the prompt at which a holder counts as a cache hit, or null for the policy's
     * default (0.3) ({@code cart.threshold})}
     */
    public @Nullable Double getThreshold() {
        return threshold;
    }

    /**
     * Sets {@code cart.threshold}: the matched fraction of the prompt at which a holder counts as a cache hit, or null
     * for the policy's default (0.3). Checked with every other value when the routing state is built.
     *
     * @param threshold in [0, 1], or null
     */
    public void setThreshold(@Nullable Double threshold) {
        this.threshold = threshold;
    }

    /**
     * {@return the matched length (key units) that counts as a hit whatever the fraction, or null for the policy's
     * default (8192) ({@code cart.match-abs-threshold})}
     */
    public @Nullable Integer getMatchAbsThreshold() {
        return matchAbsThreshold;
    }

    /**
     * Sets {@code cart.match-abs-threshold}: the matched length (key units) that counts as a hit whatever the fraction,
     * or null for the policy's default (8192). Checked with every other value when the routing state is built.
     *
     * @param matchAbsThreshold at least 1, or null
     */
    public void setMatchAbsThreshold(@Nullable Integer matchAbsThreshold) {
        this.matchAbsThreshold = matchAbsThreshold;
    }

    /**
     * {@return {@code abs_rel} guard: how many requests more than the least-loaded replica make a holder overloaded
     * (with the relative threshold), or null for the policy's default (8) ({@code cart.balance-abs-threshold})}
     */
    public @Nullable Integer getBalanceAbsThreshold() {
        return balanceAbsThreshold;
    }

    /**
     * Sets {@code cart.balance-abs-threshold}: {@code abs_rel} guard: how many requests more than the least-loaded
     * replica make a holder overloaded (with the relative threshold), or null for the policy's default (8). Checked
     * with every other value when the routing state is built.
     *
     * @param balanceAbsThreshold at least 0, or null
     */
    public void setBalanceAbsThreshold(@Nullable Integer balanceAbsThreshold) {
        this.balanceAbsThreshold = balanceAbsThreshold;
    }

    /**
     * {@return {@code abs_rel} guard: the load factor over the least-loaded replica that makes a holder overloaded
     * (with the absolute threshold), or null for the policy's default (1.5) ({@code cart.balance-rel-threshold})}
     */
    public @Nullable Double getBalanceRelThreshold() {
        return balanceRelThreshold;
    }

    /**
     * Sets {@code cart.balance-rel-threshold}: {@code abs_rel} guard: the load factor over the least-loaded replica
     * that makes a holder overloaded (with the absolute threshold), or null for the policy's default (1.5). Checked
     * with every other value when the routing state is built.
     *
     * @param balanceRelThreshold at least 1, or null
     */
    public void setBalanceRelThreshold(@Nullable Double balanceRelThreshold) {
        this.balanceRelThreshold = balanceRelThreshold;
    }

    /**
     * {@return when a cache holder counts as overloaded ({@code abs_rel}, {@code median}, {@code bounded_load}), or
     * null for the policy's default ({@code abs_rel}) ({@code cart.guard})}
     */
    public @Nullable String getGuard() {
        return guard;
    }

    /**
     * Sets {@code cart.guard}: when a cache holder counts as overloaded ({@code abs_rel}, {@code median}, {@code
     * bounded_load}), or null for the policy's default ({@code abs_rel}). Checked with every other value when the
     * routing state is built.
     *
     * @param guard a guard name, or null
     */
    public void setGuard(@Nullable String guard) {
        this.guard = guard;
    }

    /**
     * {@return {@code median} guard: overloaded above this times the median load of the other candidates, or null for
     * the policy's default (2.0) ({@code cart.median-factor})}
     */
    public @Nullable Double getMedianFactor() {
        return medianFactor;
    }

    /**
     * Sets {@code cart.median-factor}: {@code median} guard: overloaded above this times the median load of the other
     * candidates, or null for the policy's default (2.0). Checked with every other value when the routing state is
     * built.
     *
     * @param medianFactor at least 1, or null
     */
    public void setMedianFactor(@Nullable Double medianFactor) {
        this.medianFactor = medianFactor;
    }

    /**
     * {@return {@code bounded_load} guard (and {@code predicted_ttft}): the bound on a replica's load as a multiple of
     * the mean, or null for the policy's default ({@code cart.bounded-load-factor})}
     */
    public @Nullable Double getBoundedLoadFactor() {
        return boundedLoadFactor;
    }

    /**
     * Sets {@code cart.bounded-load-factor}: {@code bounded_load} guard (and {@code predicted_ttft}): the bound on a
     * replica's load as a multiple of the mean, or null for the policy's default. Checked with every other value when
     * the routing state is built.
     *
     * @param boundedLoadFactor at least 1 ({@code predicted_ttft}: 0 too), or null
     */
    public void setBoundedLoadFactor(@Nullable Double boundedLoadFactor) {
        this.boundedLoadFactor = boundedLoadFactor;
    }

    /**
     * {@return where a request without a good match goes ({@code least_loaded}, {@code consistent_hash}), or null for
     * the policy's default ({@code least_loaded}) ({@code cart.miss-placement})}
     */
    public @Nullable String getMissPlacement() {
        return missPlacement;
    }

    /**
     * Sets {@code cart.miss-placement}: where a request without a good match goes ({@code least_loaded}, {@code
     * consistent_hash}), or null for the policy's default ({@code least_loaded}). Checked with every other value when
     * the routing state is built.
     *
     * @param missPlacement a placement name, or null
     */
    public void setMissPlacement(@Nullable String missPlacement) {
        this.missPlacement = missPlacement;
    }

    /**
     * {@return the load bound of consistent-hash placement, or null for the policy's default (1.25; 0 is unbounded)
     * ({@code cart.hash-load-factor})}
     */
    public @Nullable Double getHashLoadFactor() {
        return hashLoadFactor;
    }

    /**
     * Sets {@code cart.hash-load-factor}: the load bound of consistent-hash placement, or null for the policy's default
     * (1.25; 0 is unbounded). Checked with every other value when the routing state is built.
     *
     * @param hashLoadFactor 0 or at least 1, or null
     */
    public void setHashLoadFactor(@Nullable Double hashLoadFactor) {
        this.hashLoadFactor = hashLoadFactor;
    }

    /**
     * {@return whether holders, misses and diversions are ranked by the prefill work queued on each replica, or null
     * for the policy's default (true) ({@code cart.prefill-aware})}
     */
    public @Nullable Boolean getPrefillAware() {
        return prefillAware;
    }

    /**
     * Sets {@code cart.prefill-aware}: whether holders, misses and diversions are ranked by the prefill work queued on
     * each replica, or null for the policy's default (true). Checked with every other value when the routing state is
     * built.
     *
     * @param prefillAware true, false, or null
     */
    public void setPrefillAware(@Nullable Boolean prefillAware) {
        this.prefillAware = prefillAware;
    }

    /**
     * {@return the prefix tree's size cap in blocks (default 1,000,000); least-recently-used entries above it are
     * evicted ({@code cart.max-tree-size})}
     */
    public long getMaxTreeSize() {
        return maxTreeSize;
    }

    /**
     * Sets {@code cart.max-tree-size}: the prefix tree's size cap in blocks (default 1,000,000); least-recently-used
     * entries above it are evicted. Checked with every other value when the routing state is built.
     *
     * @param maxTreeSize at least 1
     */
    public void setMaxTreeSize(long maxTreeSize) {
        this.maxTreeSize = maxTreeSize;
    }

    /** {@return characters per key block (default 64): matches are multiples of it ({@code cart.block-chars})} */
    public int getBlockChars() {
        return blockChars;
    }

    /**
     * Sets {@code cart.block-chars}: characters per key block (default 64): matches are multiples of it. Checked with
     * every other value when the routing state is built.
     *
     * @param blockChars in [1, 65536]
     */
    public void setBlockChars(int blockChars) {
        this.blockChars = blockChars;
    }

    /**
     * {@return seconds between eviction passes (default 60; 0 disables eviction) ({@code cart.eviction-interval-secs})}
     */
    public long getEvictionIntervalSecs() {
        return evictionIntervalSecs;
    }

    /**
     * Sets {@code cart.eviction-interval-secs}: seconds between eviction passes (default 60; 0 disables eviction).
     * Checked with every other value when the routing state is built.
     *
     * @param evictionIntervalSecs at least 0
     */
    public void setEvictionIntervalSecs(long evictionIntervalSecs) {
        this.evictionIntervalSecs = evictionIntervalSecs;
    }

    /**
     * {@return the hour (UTC) the whole tree is dropped daily (default -1: never) ({@code
     * cart.daily-cleanup-hour-utc})}
     */
    public int getDailyCleanupHourUtc() {
        return dailyCleanupHourUtc;
    }

    /**
     * Sets {@code cart.daily-cleanup-hour-utc}: the hour (UTC) the whole tree is dropped daily (default -1: never).
     * Checked with every other value when the routing state is built.
     *
     * @param dailyCleanupHourUtc -1, or in [0, 23]
     */
    public void setDailyCleanupHourUtc(int dailyCleanupHourUtc) {
        this.dailyCleanupHourUtc = dailyCleanupHourUtc;
    }

    /**
     * {@return seconds after which an unused route is forgotten by the next pass (default 0: never) ({@code
     * cart.route-ttl-secs})}
     */
    public long getRouteTtlSecs() {
        return routeTtlSecs;
    }

    /**
     * Sets {@code cart.route-ttl-secs}: seconds after which an unused route is forgotten by the next pass (default 0:
     * never). Checked with every other value when the routing state is built.
     *
     * @param routeTtlSecs at least 0
     */
    public void setRouteTtlSecs(long routeTtlSecs) {
        this.routeTtlSecs = routeTtlSecs;
    }

    /**
     * {@return when a routed prefix is recorded: {@code on_route} (the default) or {@code on_success} ({@code
     * cart.learn})}
     */
    public String getLearn() {
        return learn;
    }

    /**
     * Sets {@code cart.learn}: when a routed prefix is recorded: {@code on_route} (the default) or {@code on_success}.
     * Checked with every other value when the routing state is built.
     *
     * @param learn {@code on_route} or {@code on_success}
     */
    public void setLearn(String learn) {
        this.learn = learn;
    }

    /**
     * {@return whether a predicted hit the replica reports it did not deliver drops the stale route (default true)
     * ({@code cart.feedback})}
     */
    public boolean isFeedback() {
        return feedback;
    }

    /**
     * Sets {@code cart.feedback}: whether a predicted hit the replica reports it did not deliver drops the stale route
     * (default true). Checked with every other value when the routing state is built.
     *
     * @param feedback whether to act on the replicas' usage reports
     */
    public void setFeedback(boolean feedback) {
        this.feedback = feedback;
    }

    /**
     * {@return the tokenizer of token mode ({@code cl100k_base}, {@code o200k_base}), or null or {@code none} (the
     * default) for keys of characters ({@code cart.tokenizer})}
     */
    public @Nullable String getTokenizer() {
        return tokenizer;
    }

    /**
     * Sets {@code cart.tokenizer}: the tokenizer of token mode ({@code cl100k_base}, {@code o200k_base}), or null or
     * {@code none} (the default) for keys of characters. Checked with every other value when the routing state is
     * built.
     *
     * @param tokenizer a tokenizer name, {@code none}, or null
     */
    public void setTokenizer(@Nullable String tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** {@return token mode: tokens per key block (default 16, vLLM's block size) ({@code cart.block-tokens})} */
    public int getBlockTokens() {
        return blockTokens;
    }

    /**
     * Sets {@code cart.block-tokens}: token mode: tokens per key block (default 16, vLLM's block size). Checked with
     * every other value when the routing state is built.
     *
     * @param blockTokens in [1, 65536]
     */
    public void setBlockTokens(int blockTokens) {
        this.blockTokens = blockTokens;
    }

    /**
     * {@return token mode: key segments the tokenization cache keeps (default 1000; 0: no cache) ({@code
     * cart.token-cache-entries})}
     */
    public int getTokenCacheEntries() {
        return tokenCacheEntries;
    }

    /**
     * Sets {@code cart.token-cache-entries}: token mode: key segments the tokenization cache keeps (default 1000; 0: no
     * cache). Checked with every other value when the routing state is built.
     *
     * @param tokenCacheEntries in [0, 10,000,000]
     */
    public void setTokenCacheEntries(int tokenCacheEntries) {
        this.tokenCacheEntries = tokenCacheEntries;
    }

    /**
     * {@return token mode: the longest segment cached, in characters (default 65,536) ({@code
     * cart.token-cache-max-chars})}
     */
    public int getTokenCacheMaxChars() {
        return tokenCacheMaxChars;
    }

    /**
     * Sets {@code cart.token-cache-max-chars}: token mode: the longest segment cached, in characters (default 65,536).
     * Checked with every other value when the routing state is built.
     *
     * @param tokenCacheMaxChars in [1, 67,108,864]
     */
    public void setTokenCacheMaxChars(int tokenCacheMaxChars) {
        this.tokenCacheMaxChars = tokenCacheMaxChars;
    }

    /**
     * {@return token mode: tokenizations at once (default 0: one per processor); a request over it is keyed by
     * characters and routed as an unlearned miss ({@code cart.max-concurrent-tokenizations})}
     */
    public int getMaxConcurrentTokenizations() {
        return maxConcurrentTokenizations;
    }

    /**
     * Sets {@code cart.max-concurrent-tokenizations}: token mode: tokenizations at once (default 0: one per processor);
     * a request over it is keyed by characters and routed as an unlearned miss. Checked with every other value when the
     * routing state is built.
     *
     * @param maxConcurrentTokenizations in [0, 100,000]
     */
    public void setMaxConcurrentTokenizations(int maxConcurrentTokenizations) {
        this.maxConcurrentTokenizations = maxConcurrentTokenizations;
    }

    /** {@return the admission queue's settings ({@code cart.flow.*}) ({@code cart.flow})} */
    public Flow getFlow() {
        return flow;
    }

    /**
     * Sets {@code cart.flow}: the admission queue's settings ({@code cart.flow.*}). Checked with every other value when
     * the routing state is built.
     *
     * @param flow the settings; not null
     */
    public void setFlow(Flow flow) {
        this.flow = flow;
    }

    /**
     * The admission queue's settings ({@code cart.flow.*}), the proxy's {@code flow:} keys in kebab case, with
     * the same defaults and ranges ({@code dev.cart.flow.FlowConfig}); checked with the rest at start.
     */
    public static class Flow {
        /** A request that finds no instance with room waits for one (false: 503 at once, the default). */
        private boolean enabled = false;
        /** Requests waiting per service at most. */
        private int maxDepth = 1024;
        /** The longest a request waits, and its deadline when it gives none. */
        private long maxWaitMs = 2000;
        /** Priority bands; band 0 is served first. */
        private int bands = 3;
        /** The band of a request that names none or an unknown one. */
        private int defaultBand = 1;
        /** How much longer a waiting request holds out for an instance holding its prefix (0: off). */
        private long affinityWaitMs = 50;
        /** More requests than this waiting for the same holders spread a hot prefix to another instance. */
        private int hotSpotDepth = 4;
        /** Spreading stops once a prefix has this many holders. */
        private int hotSpotMaxHolders = 3;
        /** Tenants named in metric labels at most. */
        private int tenantLabels = 10;
        /** How often the queue looks again for room it was not told of. */
        private long recheckIntervalMs = 100;
        /** The share of a service's slots held back for band 0 and tenants below their share. */
        private double reserveRatio = 0.1;
        /** The header naming a request's band. */
        private String priorityHeader = "x-cart-priority";
        /** The header naming a request's tenant (its digest is used); without it, a digest of the API key. */
        private String tenantHeader = "x-cart-tenant";
        /** The header giving a request's deadline in milliseconds. */
        private String deadlineHeader = "x-cart-deadline-ms";
        /** Output tokens a request that names no {@code max_tokens} is counted for (its cost). */
        private int defaultOutputTokens = 256;

        /**
         * {@return whether a request that finds no instance with room waits for one (default false: 503 at once)
         * ({@code cart.flow.enabled})}
         */
        public boolean isEnabled() {
            return enabled;
        }

        /**
         * Sets {@code cart.flow.enabled}: whether a request that finds no instance with room waits for one (default
         * false: 503 at once). Checked with every other value when the routing state is built.
         *
         * @param enabled whether to queue
         */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** {@return requests waiting per service at most (default 1024) ({@code cart.flow.max-depth})} */
        public int getMaxDepth() {
            return maxDepth;
        }

        /**
         * Sets {@code cart.flow.max-depth}: requests waiting per service at most (default 1024). Checked with every
         * other value when the routing state is built.
         *
         * @param maxDepth in [1, 1,000,000]
         */
        public void setMaxDepth(int maxDepth) {
            this.maxDepth = maxDepth;
        }

        /**
         * {@return the longest a request waits in milliseconds, and its deadline when it gives none (default 2000)
         * ({@code cart.flow.max-wait-ms})}
         */
        public long getMaxWaitMs() {
            return maxWaitMs;
        }

        /**
         * Sets {@code cart.flow.max-wait-ms}: the longest a request waits in milliseconds, and its deadline when it
         * gives none (default 2000). Checked with every other value when the routing state is built.
         *
         * @param maxWaitMs in [1, 600,000]
         */
        public void setMaxWaitMs(long maxWaitMs) {
            this.maxWaitMs = maxWaitMs;
        }

        /** {@return the number of priority bands, band 0 served first (default 3) ({@code cart.flow.bands})} */
        public int getBands() {
            return bands;
        }

        /**
         * Sets {@code cart.flow.bands}: the number of priority bands, band 0 served first (default 3). Checked with
         * every other value when the routing state is built.
         *
         * @param bands in [1, 8]
         */
        public void setBands(int bands) {
            this.bands = bands;
        }

        /**
         * {@return the band of a request without a usable priority header (default 1) ({@code cart.flow.default-band})}
         */
        public int getDefaultBand() {
            return defaultBand;
        }

        /**
         * Sets {@code cart.flow.default-band}: the band of a request without a usable priority header (default 1).
         * Checked with every other value when the routing state is built.
         *
         * @param defaultBand in [0, bands)
         */
        public void setDefaultBand(int defaultBand) {
            this.defaultBand = defaultBand;
        }

        /**
         * {@return how much longer, in milliseconds, a waiting request holds out for the instance holding its prefix
         * while another has room (default 50; 0: off) ({@code cart.flow.affinity-wait-ms})}
         */
        public long getAffinityWaitMs() {
            return affinityWaitMs;
        }

        /**
         * Sets {@code cart.flow.affinity-wait-ms}: how much longer, in milliseconds, a waiting request holds out for
         * the instance holding its prefix while another has room (default 50; 0: off). Checked with every other value
         * when the routing state is built.
         *
         * @param affinityWaitMs in [0, max-wait-ms]
         */
        public void setAffinityWaitMs(long affinityWaitMs) {
            this.affinityWaitMs = affinityWaitMs;
        }

        /**
         * {@return when more requests than this wait for the same holders, the next takes an instance with room at
         * once, spreading the prefix (default 4) ({@code cart.flow.hot-spot-depth})}
         */
        public int getHotSpotDepth() {
            return hotSpotDepth;
        }

        /**
         * Sets {@code cart.flow.hot-spot-depth}: when more requests than this wait for the same holders, the next takes
         * an instance with room at once, spreading the prefix (default 4). Checked with every other value when the
         * routing state is built.
         *
         * @param hotSpotDepth in [1, 1,000,000]
         */
        public void setHotSpotDepth(int hotSpotDepth) {
            this.hotSpotDepth = hotSpotDepth;
        }

        /**
         * {@return the most instances a hot prefix is spread to (default 3) ({@code cart.flow.hot-spot-max-holders})}
         */
        public int getHotSpotMaxHolders() {
            return hotSpotMaxHolders;
        }

        /**
         * Sets {@code cart.flow.hot-spot-max-holders}: the most instances a hot prefix is spread to (default 3).
         * Checked with every other value when the routing state is built.
         *
         * @param hotSpotMaxHolders in [1, 1024]
         */
        public void setHotSpotMaxHolders(int hotSpotMaxHolders) {
            this.hotSpotMaxHolders = hotSpotMaxHolders;
        }

        /**
         * {@return tenants named in metric labels at most, the top by admitted work (default 10) ({@code
         * cart.flow.tenant-labels})}
         */
        public int getTenantLabels() {
            return tenantLabels;
        }

        /**
         * Sets {@code cart.flow.tenant-labels}: tenants named in metric labels at most, the top by admitted work
         * (default 10). Checked with every other value when the routing state is built.
         *
         * @param tenantLabels in [0, 100]
         */
        public void setTenantLabels(int tenantLabels) {
            this.tenantLabels = tenantLabels;
        }

        /**
         * {@return while requests wait, how often in milliseconds the queue looks again for room nobody announced
         * (default 100) ({@code cart.flow.recheck-interval-ms})}
         */
        public long getRecheckIntervalMs() {
            return recheckIntervalMs;
        }

        /**
         * Sets {@code cart.flow.recheck-interval-ms}: while requests wait, how often in milliseconds the queue looks
         * again for room nobody announced (default 100). Checked with every other value when the routing state is
         * built.
         *
         * @param recheckIntervalMs in [1, 10,000]
         */
        public void setRecheckIntervalMs(long recheckIntervalMs) {
            this.recheckIntervalMs = recheckIntervalMs;
        }

        /**
         * {@return the share of a service's slots held back for band 0 and tenants below their share (default 0.1)
         * ({@code cart.flow.reserve-ratio})}
         */
        public double getReserveRatio() {
            return reserveRatio;
        }

        /**
         * Sets {@code cart.flow.reserve-ratio}: the share of a service's slots held back for band 0 and tenants below
         * their share (default 0.1). Checked with every other value when the routing state is built.
         *
         * @param reserveRatio in [0, 0.5]
         */
        public void setReserveRatio(double reserveRatio) {
            this.reserveRatio = reserveRatio;
        }

        /**
         * {@return the request header naming the band (default {@code x-cart-priority}) ({@code
         * cart.flow.priority-header})}
         */
        public String getPriorityHeader() {
            return priorityHeader;
        }

        /**
         * Sets {@code cart.flow.priority-header}: the request header naming the band (default {@code x-cart-priority}).
         * Checked with every other value when the routing state is built.
         *
         * @param priorityHeader a header name
         */
        public void setPriorityHeader(String priorityHeader) {
            this.priorityHeader = priorityHeader;
        }

        /**
         * {@return the request header naming the tenant (default {@code x-cart-tenant}); without it, a digest of the
         * API key ({@code cart.flow.tenant-header})}
         */
        public String getTenantHeader() {
            return tenantHeader;
        }

        /**
         * Sets {@code cart.flow.tenant-header}: the request header naming the tenant (default {@code x-cart-tenant});
         * without it, a digest of the API key. Checked with every other value when the routing state is built.
         *
         * @param tenantHeader a header name
         */
        public void setTenantHeader(String tenantHeader) {
            this.tenantHeader = tenantHeader;
        }

        /**
         * {@return the request header giving the longest wait in milliseconds (default {@code x-cart-deadline-ms})
         * ({@code cart.flow.deadline-header})}
         */
        public String getDeadlineHeader() {
            return deadlineHeader;
        }

        /**
         * Sets {@code cart.flow.deadline-header}: the request header giving the longest wait in milliseconds (default
         * {@code x-cart-deadline-ms}). Checked with every other value when the routing state is built.
         *
         * @param deadlineHeader a header name
         */
        public void setDeadlineHeader(String deadlineHeader) {
            this.deadlineHeader = deadlineHeader;
        }

        /**
         * {@return the output tokens a request that names no {@code max_tokens} is counted for in its tenant's share
         * (default 256) ({@code cart.flow.default-output-tokens})}
         */
        public int getDefaultOutputTokens() {
            return defaultOutputTokens;
        }

        /**
         * Sets {@code cart.flow.default-output-tokens}: the output tokens a request that names no {@code max_tokens} is
         * counted for in its tenant's share (default 256). Checked with every other value when the routing state is
         * built.
         *
         * @param defaultOutputTokens in [1, 1,000,000]
         */
        public void setDefaultOutputTokens(int defaultOutputTokens) {
            this.defaultOutputTokens = defaultOutputTokens;
        }
    }
}
