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
}
