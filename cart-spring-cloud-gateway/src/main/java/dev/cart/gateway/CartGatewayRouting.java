package dev.cart.gateway;

import dev.cart.core.LearnMode;
import dev.cart.core.PromptKey;
import dev.cart.core.Router;
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.Tokenizers;
import dev.cart.flow.FlowConfig;
import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowHeaders;
import dev.cart.flow.FlowListener;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * CART's state in a gateway: the validated settings, the one prompt extractor, and a router per load-balanced
 * service that CART balances ({@code cart.services}), each over that service's discovered instances.
 *
 * <p>Construction validates every {@code cart.*} value and reports all problems at once, each naming its key
 * ({@code cart.threshold must be in [0, 1], was 1.5}), so a bad configuration stops the application at start.
 *
 * <p>Thread-safe: routers are created on a service's first request ({@link ConcurrentHashMap#computeIfAbsent})
 * and live until {@link #close()}.
 */
public final class CartGatewayRouting implements AutoCloseable {

    private static final Set<String> TOKENIZERS = Set.of("cl100k_base", "o200k_base");

    private final CartProperties properties;
    private final Set<String> services;
    private final Map<String, Object> policySettings;
    private final PromptExtractor extractor;
    private final @Nullable MeterRegistry registry;
    private final Map<String, ServiceRouting> routings = new ConcurrentHashMap<>();
    private final FlowConfig flowConfig;
    private final FlowHeaders flowHeaders;
    private volatile boolean closed;

    /**
     * Validates {@code properties} and builds what every service shares (the prompt extractor, the admission
     * queue's settings); each service's router is built on its first request.
     *
     * @param properties the bound {@code cart.*} settings; read now and when a service's router is built, so
     *     not changed afterwards
     * @param registry   where each service's metrics go, or null for none
     * @throws IllegalArgumentException naming every invalid {@code cart.*} value
     */
    public CartGatewayRouting(CartProperties properties, @Nullable MeterRegistry registry) {
        this.properties = properties;
        this.registry = registry;
        this.policySettings = policySettings(properties);
        List<String> problems = validate(properties, policySettings);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid CART configuration:\n  " + String.join("\n  ", problems));
        }
        this.services = Set.copyOf(properties.getServices());
        this.flowConfig = flowConfig(properties.getFlow());
        CartProperties.Flow f = properties.getFlow();
        this.flowHeaders = FlowHeaders.builder(flowConfig)
                .priorityHeader(f.getPriorityHeader())
                .tenantHeader(f.getTenantHeader())
                .deadlineHeader(f.getDeadlineHeader())
                .defaultOutputTokens(f.getDefaultOutputTokens())
                .build();
        ExtractOptions.Builder eo = ExtractOptions.builder()
                .blockChars(properties.getBlockChars())
                .anchorLimit(1024); // the stable start consistent-hash placement hashes, as in the proxy
        String tokenizer = tokenizer();
        if (tokenizer != null) { // token mode
            eo.tokenizer(Tokenizers.jtokkit(tokenizer))
                    .blockTokens(properties.getBlockTokens())
                    .tokenCacheEntries(properties.getTokenCacheEntries())
                    .tokenCacheMaxChars(properties.getTokenCacheMaxChars());
            if (properties.getMaxConcurrentTokenizations() > 0) { // 0: the extractor's default, one per processor
                eo.maxConcurrentTokenizations(properties.getMaxConcurrentTokenizations());
            }
        }
        this.extractor = new PromptExtractor(eo.build());
    }

    /**
     * Whether CART chooses the instances of a service.
     *
     * @param serviceId a load-balanced service id, or null
     * @return true if it is listed in {@code cart.services}
     */
    public boolean balances(@Nullable String serviceId) {
        return serviceId != null && services.contains(serviceId);
    }

    /**
     * Requests in flight through CART to a service's current instances: each holds its slot from the balancer's
     * choice until its answer's last byte has passed (or the exchange ended). Any thread.
     *
     * @param serviceId a service id
     * @return the count; 0 for a service CART does not balance or before its first request
     */
    public int inFlight(String serviceId) {
        ServiceRouting r = routings.get(serviceId);
        return r == null ? 0 : r.replicas().inFlight();
    }

    /**
     * In-flight count per replica of a service. Any thread.
     *
     * @param serviceId a service id
     * @return each current instance's base URI and count, in discovery order; empty before the service's first
     *     request
     */
    public Map<String, Integer> inFlightByReplica(String serviceId) {
        ServiceRouting r = routings.get(serviceId);
        return r == null ? Map.of() : r.replicas().inFlightByReplica();
    }

    /**
     * Requests of a service waiting in its admission queue now ({@code cart.flow.enabled}). Any thread.
     *
     * @param serviceId a service id
     * @return the count; 0 when the queue is off or the service had no request yet
     */
    public int queued(String serviceId) {
        ServiceRouting r = routings.get(serviceId);
        FlowControl f = r == null ? null : r.flow();
        return f == null ? 0 : f.depth(null);
    }

    /** True once {@link #close()} has run. */
    boolean isClosed() {
        return closed;
    }

    /** True when requests that find no instance with room wait ({@code cart.flow.enabled}). */
    boolean flowEnabled() {
        return flowConfig.enabled();
    }

    /** Reads a request's band, tenant and deadline ({@code cart.flow.*-header}). */
    FlowHeaders flowHeaders() {
        return flowHeaders;
    }

    PromptExtractor extractor() {
        return extractor;
    }

    int maxBodyBytes() {
        return properties.getMaxBodyBytes();
    }

    /** The routing state of {@code serviceId}, created on first use. */
    ServiceRouting service(String serviceId) {
        return routings.computeIfAbsent(serviceId, this::build);
    }

    private ServiceRouting build(String serviceId) {
        CartProperties p = properties;
        InstanceReplicas replicas = new InstanceReplicas(p.getMaxLoad(), p.getLoadPenalty());
        RoutingPolicy policy = RoutingPolicyProvider.named(p.getPolicy()).create(policySettings);
        MeterRegistry meters = registry;
        CartMetrics metrics = meters == null ? null : new CartMetrics(meters, serviceId);
        Router router = Router.builder()
                .replicas(replicas)
                .policy(policy)
                .maxTreeSize(p.getMaxTreeSize())
                .routeTtl(Duration.ofSeconds(p.getRouteTtlSecs()))
                .keyFormat(
                        tokenMode() ? PromptKey.Unit.TOKENS : PromptKey.Unit.CHARS,
                        tokenMode() ? p.getBlockTokens() : p.getBlockChars())
                .listener(metrics == null ? RoutingListener.NONE : metrics)
                .evictionInterval(Duration.ofSeconds(p.getEvictionIntervalSecs()))
                .dailyResetHourUtc(p.getDailyCleanupHourUtc())
                .learn(Objects.requireNonNull(learnMode(p.getLearn()), "cart.learn was validated"))
                .feedback(p.isFeedback())
                .firstTokenReports(true) // the exchange reports each answer's first bytes
                .build();
        CartFlowMetrics flowMetrics =
                registry == null || !flowConfig.enabled() ? null : new CartFlowMetrics(registry, serviceId);
        FlowControl flow = flowConfig.enabled()
                ? FlowControl.builder(router)
                        .config(flowConfig)
                        .listener(flowMetrics == null ? FlowListener.NONE : flowMetrics)
                        .build()
                : null;
        if (flowMetrics != null && flow != null) {
            flowMetrics.bind(flow, flowConfig.bands());
        }
        ServiceRouting routing = new ServiceRouting(serviceId, replicas, router, flow);
        if (metrics != null) {
            metrics.bind(routing);
        }
        return routing;
    }

    /** Counts a request the gateway filter answered itself (bad body, too large, no replica). */
    void rejected(String serviceId, String cause) {
        MeterRegistry meters = registry;
        if (meters != null) {
            CartMetrics.rejected(meters, serviceId, cause);
        }
    }

    private boolean tokenMode() {
        return tokenizer() != null;
    }

    private @Nullable String tokenizer() {
        String t = properties.getTokenizer();
        return t == null || t.isBlank() || t.equals("none") ? null : t;
    }

    /**
     * Closes every service's admission queue (requests still waiting are answered 503) and router (its
     * maintenance stops). The application context calls it when it is destroyed, which is after the web server
     * has stopped: with Spring Boot's graceful shutdown, after the requests in flight have finished or the grace
     * period has ended. Idempotent.
     */
    @Override
    public void close() {
        closed = true;
        for (ServiceRouting r : routings.values()) {
            FlowControl flow = r.flow();
            if (flow != null) {
                flow.close(); // waiting requests are answered 503
            }
            r.router().close();
        }
    }

    // ---- validation ----

    /** The policy settings the configuration names, under the proxy's keys. */
    static Map<String, Object> policySettings(CartProperties p) {
        Map<String, Object> m = new LinkedHashMap<>();
        putIfSet(m, "threshold", p.getThreshold());
        putIfSet(m, "match_abs_threshold", p.getMatchAbsThreshold());
        putIfSet(m, "balance_abs_threshold", p.getBalanceAbsThreshold());
        putIfSet(m, "balance_rel_threshold", p.getBalanceRelThreshold());
        putIfSet(m, "guard", p.getGuard());
        putIfSet(m, "median_factor", p.getMedianFactor());
        putIfSet(m, "bounded_load_factor", p.getBoundedLoadFactor());
        putIfSet(m, "miss_placement", p.getMissPlacement());
        putIfSet(m, "hash_load_factor", p.getHashLoadFactor());
        putIfSet(m, "prefill_aware", p.getPrefillAware());
        return m;
    }

    private static void putIfSet(Map<String, Object> m, String key, @Nullable Object v) {
        if (v != null) {
            m.put(key, v);
        }
    }

    /** Every problem with {@code p}, each naming its {@code cart.*} key; empty when valid. */
    static List<String> validate(CartProperties p, Map<String, Object> policySettings) {
        List<String> problems = new ArrayList<>();
        for (String s : p.getServices()) {
            if (s == null || s.isBlank()) {
                problems.add("cart.services: a service id must not be blank");
            }
        }
        range(problems, "cart.max-load", p.getMaxLoad(), 1, Integer.MAX_VALUE);
        range(problems, "cart.load-penalty", p.getLoadPenalty(), 0, Integer.MAX_VALUE);
        range(problems, "cart.max-body-bytes", p.getMaxBodyBytes(), 1, Integer.MAX_VALUE - 16);
        range(problems, "cart.max-tree-size", p.getMaxTreeSize(), 1, Long.MAX_VALUE);
        range(problems, "cart.block-chars", p.getBlockChars(), 1, 65536);
        range(problems, "cart.eviction-interval-secs", p.getEvictionIntervalSecs(), 0, Integer.MAX_VALUE);
        range(problems, "cart.daily-cleanup-hour-utc", p.getDailyCleanupHourUtc(), -1, 23);
        range(problems, "cart.route-ttl-secs", p.getRouteTtlSecs(), 0, Integer.MAX_VALUE);
        range(problems, "cart.block-tokens", p.getBlockTokens(), 1, 65536);
        range(problems, "cart.token-cache-entries", p.getTokenCacheEntries(), 0, 10_000_000);
        range(problems, "cart.token-cache-max-chars", p.getTokenCacheMaxChars(), 1, 64 * 1024 * 1024);
        range(problems, "cart.max-concurrent-tokenizations", p.getMaxConcurrentTokenizations(), 0, 100_000);
        if (learnMode(p.getLearn()) == null) {
            problems.add("cart.learn: must be one of on_route, on_success, was '" + p.getLearn() + "'");
        }
        String t = p.getTokenizer();
        if (t != null && !t.isBlank() && !t.equals("none") && !TOKENIZERS.contains(t)) {
            problems.add("cart.tokenizer: must be one of cl100k_base, o200k_base (or none), was '" + t + "'");
        }
        checkPolicy(p.getPolicy(), policySettings, problems);
        CartProperties.Flow f = p.getFlow();
        if (f == null) {
            problems.add("cart.flow: must be given");
        } else {
            try {
                flowConfig(f);
            } catch (IllegalArgumentException e) {
                // the library names the proxy's key (flow.max_depth); this says cart.flow.max-depth
                String m = String.valueOf(e.getMessage());
                int sp = m.indexOf(' ');
                problems.add(
                        sp < 0
                                ? "cart.flow: " + m
                                : "cart." + m.substring(0, sp).replace('_', '-') + ":" + m.substring(sp));
            }
            for (String[] h : new String[][] {
                {"priority-header", f.getPriorityHeader()},
                {"tenant-header", f.getTenantHeader()},
                {"deadline-header", f.getDeadlineHeader()}
            }) {
                if (h[1] == null || h[1].isBlank()) {
                    problems.add("cart.flow." + h[0] + ": must name an HTTP header");
                }
            }
            range(problems, "cart.flow.default-output-tokens", f.getDefaultOutputTokens(), 1, 1_000_000);
        }
        return problems;
    }

    /** The library's settings from {@code cart.flow.*}; throws IllegalArgumentException naming a bad one. */
    static FlowConfig flowConfig(CartProperties.Flow f) {
        return new FlowConfig(
                f.isEnabled(),
                f.getMaxDepth(),
                Duration.ofMillis(f.getMaxWaitMs()),
                f.getBands(),
                f.getDefaultBand(),
                Duration.ofMillis(f.getAffinityWaitMs()),
                f.getHotSpotDepth(),
                f.getHotSpotMaxHolders(),
                f.getTenantLabels(),
                Duration.ofMillis(f.getRecheckIntervalMs()),
                f.getReserveRatio());
    }

    private static void range(List<String> problems, String key, long v, long min, long max) {
        if (v < min || v > max) {
            String hi = max >= Integer.MAX_VALUE - 16 ? "" : ", " + max;
            problems.add(key + ": must be " + (hi.isEmpty() ? ">= " + min : "in [" + min + hi + "]") + ", was " + v);
        }
    }

    static @Nullable LearnMode learnMode(@Nullable String s) {
        if (s == null) {
            return null;
        }
        for (LearnMode m : LearnMode.values()) {
            if (m.label().equals(s.trim().toLowerCase(Locale.ROOT))) {
                return m;
            }
        }
        return null;
    }

    /**
     * The policy's description judges the settings (every bad one named, with its range), then the policy is
     * made with all of them (for rules that relate them).
     */
    private static void checkPolicy(@Nullable String policy, Map<String, Object> settings, List<String> problems) {
        if (policy == null || policy.isBlank()) {
            problems.add("cart.policy: must name a routing policy");
            return;
        }
        RoutingPolicyProvider provider;
        try {
            provider = RoutingPolicyProvider.named(policy);
        } catch (IllegalArgumentException e) {
            problems.add("cart.policy: " + e.getMessage());
            return;
        }
        List<PolicySettings.Problem> found = provider.settings().problems(settings);
        for (PolicySettings.Problem p : found) {
            // the policy names keys as the proxy does (match_abs_threshold); this says cart.match-abs-threshold
            problems.add("cart." + p.key().replace('_', '-') + ": " + p.problem());
        }
        if (found.isEmpty()) {
            try {
                provider.create(settings);
            } catch (RuntimeException e) {
                problems.add("cart.policy: " + e.getMessage());
            }
        }
    }
}
