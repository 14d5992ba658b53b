package dev.cart.gateway;

import java.util.ArrayList;
import java.util.List;
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
    private Double threshold;
    private Integer matchAbsThreshold;
    private Integer balanceAbsThreshold;
    private Double balanceRelThreshold;
    private String guard;
    private Double medianFactor;
    private Double boundedLoadFactor;
    private String missPlacement;
    private Double hashLoadFactor;
    private Boolean prefillAware;

    private long maxTreeSize = 1_000_000;
    private int blockChars = 64;
    private long evictionIntervalSecs = 60;
    private int dailyCleanupHourUtc = -1;
    private long routeTtlSecs = 0;
    private String learn = "on_route";
    private boolean feedback = true;

    private String tokenizer;
    private int blockTokens = 16;
    private int tokenCacheEntries = 1000;
    private int tokenCacheMaxChars = 65_536;
    private int maxConcurrentTokenizations = 0;

    /** The admission queue ({@code cart.flow.*}, the proxy's {@code flow:} section); off by default. */
    private Flow flow = new Flow();

    public List<String> getServices() {
        return services;
    }

    public void setServices(List<String> services) {
        this.services = services;
    }

    public int getMaxLoad() {
        return maxLoad;
    }

    public void setMaxLoad(int maxLoad) {
        this.maxLoad = maxLoad;
    }

    public int getLoadPenalty() {
        return loadPenalty;
    }

    public void setLoadPenalty(int loadPenalty) {
        this.loadPenalty = loadPenalty;
    }

    public int getMaxBodyBytes() {
        return maxBodyBytes;
    }

    public void setMaxBodyBytes(int maxBodyBytes) {
        this.maxBodyBytes = maxBodyBytes;
    }

    public String getPolicy() {
        return policy;
    }

    public void setPolicy(String policy) {
        this.policy = policy;
    }

    public Double getThreshold() {
        return threshold;
    }

    public void setThreshold(Double threshold) {
        this.threshold = threshold;
    }

    public Integer getMatchAbsThreshold() {
        return matchAbsThreshold;
    }

    public void setMatchAbsThreshold(Integer matchAbsThreshold) {
        this.matchAbsThreshold = matchAbsThreshold;
    }

    public Integer getBalanceAbsThreshold() {
        return balanceAbsThreshold;
    }

    public void setBalanceAbsThreshold(Integer balanceAbsThreshold) {
        this.balanceAbsThreshold = balanceAbsThreshold;
    }

    public Double getBalanceRelThreshold() {
        return balanceRelThreshold;
    }

    public void setBalanceRelThreshold(Double balanceRelThreshold) {
        this.balanceRelThreshold = balanceRelThreshold;
    }

    public String getGuard() {
        return guard;
    }

    public void setGuard(String guard) {
        this.guard = guard;
    }

    public Double getMedianFactor() {
        return medianFactor;
    }

    public void setMedianFactor(Double medianFactor) {
        this.medianFactor = medianFactor;
    }

    public Double getBoundedLoadFactor() {
        return boundedLoadFactor;
    }

    public void setBoundedLoadFactor(Double boundedLoadFactor) {
        this.boundedLoadFactor = boundedLoadFactor;
    }

    public String getMissPlacement() {
        return missPlacement;
    }

    public void setMissPlacement(String missPlacement) {
        this.missPlacement = missPlacement;
    }

    public Double getHashLoadFactor() {
        return hashLoadFactor;
    }

    public void setHashLoadFactor(Double hashLoadFactor) {
        this.hashLoadFactor = hashLoadFactor;
    }

    public Boolean getPrefillAware() {
        return prefillAware;
    }

    public void setPrefillAware(Boolean prefillAware) {
        this.prefillAware = prefillAware;
    }

    public long getMaxTreeSize() {
        return maxTreeSize;
    }

    public void setMaxTreeSize(long maxTreeSize) {
        this.maxTreeSize = maxTreeSize;
    }

    public int getBlockChars() {
        return blockChars;
    }

    public void setBlockChars(int blockChars) {
        this.blockChars = blockChars;
    }

    public long getEvictionIntervalSecs() {
        return evictionIntervalSecs;
    }

    public void setEvictionIntervalSecs(long evictionIntervalSecs) {
        this.evictionIntervalSecs = evictionIntervalSecs;
    }

    public int getDailyCleanupHourUtc() {
        return dailyCleanupHourUtc;
    }

    public void setDailyCleanupHourUtc(int dailyCleanupHourUtc) {
        this.dailyCleanupHourUtc = dailyCleanupHourUtc;
    }

    public long getRouteTtlSecs() {
        return routeTtlSecs;
    }

    public void setRouteTtlSecs(long routeTtlSecs) {
        this.routeTtlSecs = routeTtlSecs;
    }

    public String getLearn() {
        return learn;
    }

    public void setLearn(String learn) {
        this.learn = learn;
    }

    public boolean isFeedback() {
        return feedback;
    }

    public void setFeedback(boolean feedback) {
        this.feedback = feedback;
    }

    public String getTokenizer() {
        return tokenizer;
    }

    public void setTokenizer(String tokenizer) {
        this.tokenizer = tokenizer;
    }

    public int getBlockTokens() {
        return blockTokens;
    }

    public void setBlockTokens(int blockTokens) {
        this.blockTokens = blockTokens;
    }

    public int getTokenCacheEntries() {
        return tokenCacheEntries;
    }

    public void setTokenCacheEntries(int tokenCacheEntries) {
        this.tokenCacheEntries = tokenCacheEntries;
    }

    public int getTokenCacheMaxChars() {
        return tokenCacheMaxChars;
    }

    public void setTokenCacheMaxChars(int tokenCacheMaxChars) {
        this.tokenCacheMaxChars = tokenCacheMaxChars;
    }

    public int getMaxConcurrentTokenizations() {
        return maxConcurrentTokenizations;
    }

    public void setMaxConcurrentTokenizations(int maxConcurrentTokenizations) {
        this.maxConcurrentTokenizations = maxConcurrentTokenizations;
    }

    public Flow getFlow() {
        return flow;
    }

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

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public int getMaxDepth() {
            return maxDepth;
        }

        public void setMaxDepth(int maxDepth) {
            this.maxDepth = maxDepth;
        }

        public long getMaxWaitMs() {
            return maxWaitMs;
        }

        public void setMaxWaitMs(long maxWaitMs) {
            this.maxWaitMs = maxWaitMs;
        }

        public int getBands() {
            return bands;
        }

        public void setBands(int bands) {
            this.bands = bands;
        }

        public int getDefaultBand() {
            return defaultBand;
        }

        public void setDefaultBand(int defaultBand) {
            this.defaultBand = defaultBand;
        }

        public long getAffinityWaitMs() {
            return affinityWaitMs;
        }

        public void setAffinityWaitMs(long affinityWaitMs) {
            this.affinityWaitMs = affinityWaitMs;
        }

        public int getHotSpotDepth() {
            return hotSpotDepth;
        }

        public void setHotSpotDepth(int hotSpotDepth) {
            this.hotSpotDepth = hotSpotDepth;
        }

        public int getHotSpotMaxHolders() {
            return hotSpotMaxHolders;
        }

        public void setHotSpotMaxHolders(int hotSpotMaxHolders) {
            this.hotSpotMaxHolders = hotSpotMaxHolders;
        }

        public int getTenantLabels() {
            return tenantLabels;
        }

        public void setTenantLabels(int tenantLabels) {
            this.tenantLabels = tenantLabels;
        }

        public long getRecheckIntervalMs() {
            return recheckIntervalMs;
        }

        public void setRecheckIntervalMs(long recheckIntervalMs) {
            this.recheckIntervalMs = recheckIntervalMs;
        }

        public double getReserveRatio() {
            return reserveRatio;
        }

        public void setReserveRatio(double reserveRatio) {
            this.reserveRatio = reserveRatio;
        }

        public String getPriorityHeader() {
            return priorityHeader;
        }

        public void setPriorityHeader(String priorityHeader) {
            this.priorityHeader = priorityHeader;
        }

        public String getTenantHeader() {
            return tenantHeader;
        }

        public void setTenantHeader(String tenantHeader) {
            this.tenantHeader = tenantHeader;
        }

        public String getDeadlineHeader() {
            return deadlineHeader;
        }

        public void setDeadlineHeader(String deadlineHeader) {
            this.deadlineHeader = deadlineHeader;
        }

        public int getDefaultOutputTokens() {
            return defaultOutputTokens;
        }

        public void setDefaultOutputTokens(int defaultOutputTokens) {
            this.defaultOutputTokens = defaultOutputTokens;
        }
    }
}
