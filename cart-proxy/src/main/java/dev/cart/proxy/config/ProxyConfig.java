package dev.cart.proxy.config;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.LearnMode;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.proxy.config.Constraints.Bounds;
import dev.cart.proxy.config.Constraints.HttpStatus;
import dev.cart.proxy.config.Constraints.NotBlank;
import dev.cart.proxy.config.Constraints.Nullable;
import dev.cart.proxy.config.Constraints.OneOf;
import dev.cart.proxy.config.Constraints.PolicyKeys;
import dev.cart.proxy.config.Constraints.RealBounds;
import dev.cart.proxy.upstream.ModelDiscovery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * The proxy's whole configuration, immutable: one record per section of the YAML files, one component
 * per key (its name in {@code snake_case}). {@link ConfigLoader} binds the layered files into these
 * records with Jackson, over the defaults in {@code defaults.yaml}; what a key allows beyond its Java type
 * is declared on its component ({@link Constraints}: a range, not blank, an HTTP status, ...), and
 * {@link ConfigValidator} checks it, for the files (every problem at once, {@code file: key: problem})
 * and for a configuration built in code: this record's constructor refuses one that breaks a constraint,
 * with the same message. Key names and defaults are those of {@code config.example.yaml} and
 * {@code docs/configuration.md}.
 */
public record ProxyConfig(
        Server server,
        List<Worker> workers,
        Cache cache,
        Health health,
        Circuit circuitBreaker,
        Proxy proxy,
        ClusterConfig cluster,
        FlowSettings flow,
        KvEventsSettings kvEvents) {

    /**
     * Checks every section against its constraints.
     *
     * @throws IllegalArgumentException naming each problem as {@code key: problem}
     */
    public ProxyConfig {
        workers = List.copyOf(workers);
        ConfigValidator.requireValid(server, workers, cache, health, circuitBreaker, proxy, cluster, flow, kvEvents);
    }

    /** A configuration with the default {@code kv_events} section (precise mode's settings). */
    public ProxyConfig(
            Server server,
            List<Worker> workers,
            Cache cache,
            Health health,
            Circuit circuitBreaker,
            Proxy proxy,
            ClusterConfig cluster,
            FlowSettings flow) {
        this(server, workers, cache, health, circuitBreaker, proxy, cluster, flow, KvEventsSettings.defaults());
    }

    /** The same configuration with another worker list (used by demo mode). */
    public ProxyConfig withWorkers(List<Worker> newWorkers) {
        return new ProxyConfig(server, newWorkers, cache, health, circuitBreaker, proxy, cluster, flow, kvEvents);
    }

    /** The same configuration with another {@code server} section (command-line overrides). */
    public ProxyConfig withServer(Server newServer) {
        return new ProxyConfig(newServer, workers, cache, health, circuitBreaker, proxy, cluster, flow, kvEvents);
    }

    /** True when some worker publishes KV-cache events ({@code workers[].kv_events}): precise mode is on. */
    public boolean precise() {
        for (Worker w : workers) {
            if (w.kvEvents() != null) {
                return true;
            }
        }
        return false;
    }

    /** Names of the top-level sections other than {@code workers} that differ from {@code other}. */
    public List<String> sectionsDifferingFrom(ProxyConfig other) {
        List<String> diff = new ArrayList<>();
        if (!server.equals(other.server)) {
            diff.add("server");
        }
        if (!cache.equals(other.cache)) {
            diff.add("cache");
        }
        if (!health.equals(other.health)) {
            diff.add("health");
        }
        if (!circuitBreaker.equals(other.circuitBreaker)) {
            diff.add("circuit_breaker");
        }
        if (!proxy.equals(other.proxy)) {
            diff.add("proxy");
        }
        if (!cluster.equals(other.cluster)) {
            diff.add("cluster");
        }
        if (!flow.equals(other.flow)) {
            diff.add("flow");
        }
        if (!kvEvents.equals(other.kvEvents)) {
            diff.add("kv_events");
        }
        return diff;
    }

    /**
     * Section {@code server}: where to listen, request threads, the limits that protect the proxy from its
     * clients (see docs/hardening.md for who enforces each), and how long a stop waits for requests in
     * flight.
     *
     * @param drainTimeoutMs on SIGTERM, once the proxy stops accepting and answers {@code /health} with 503:
     *                       how long requests and streams in flight may take to finish before the rest are
     *                       closed, in milliseconds (0: closed at once)
     */
    public record Server(
            @NotBlank String host,
            @Bounds(min = 0, max = 65535) int port,
            @Bounds(min = 1, max = 100_000) int maxThreads,
            @Bounds(min = 1, max = 1_000_000) int maxConnections,
            @Bounds(min = 1, max = 1_000_000) int maxConcurrentRequests,
            @Bounds(min = 1024, max = 16 * 1024 * 1024) int maxHeaderBytes,
            @Bounds(min = 1, max = 10_000) int maxHeaders,
            @Bounds(min = 256, max = 16 * 1024 * 1024) int maxRequestLineBytes,
            @Bounds(min = 1, max = 3_600) int requestReadTimeoutSecs,
            @Bounds(min = 1, max = 3_600) int idleTimeoutSecs,
            Engine engine,
            @Bounds(min = 0, max = 1L << 50) long maxBufferedBodyBytes,
            @Bounds(min = 0, max = 1L << 50) long maxBufferedAnswerBytes,
            @Bounds(min = 0, max = 600_000) int drainTimeoutMs) {
        public static final int DEFAULT_PORT = 6700;

        /** The range of {@code server.port} (and of {@code --port}). */
        public static final IntRange PORT = Schema.range(Server.class, "port");

        /** The HTTP front: Netty's event loops, the only one (the JDK front was removed). */
        public enum Engine {
            NETTY("netty");

            private final String label;

            Engine(String label) {
                this.label = label;
            }

            public String label() {
                return label;
            }
        }

        /** The section's defaults. */
        public static Server defaults() {
            return Defaults.config().server();
        }

        /** This section listening on {@code newHost} ({@code --host}). */
        public Server withHost(String newHost) {
            return ConfigLoader.with(this, "host", newHost);
        }

        /** This section listening on {@code newPort} ({@code --port}; 0 takes any free port). */
        public Server withPort(int newPort) {
            return ConfigLoader.with(this, "port", newPort);
        }

        /** This section on another HTTP front. */
        public Server withEngine(Engine newEngine) {
            return ConfigLoader.with(this, "engine", newEngine);
        }

        /** The total of request bodies buffered at once: the setting, or a quarter of the maximum heap for 0. */
        public long bufferedBodyLimit() {
            return maxBufferedBodyBytes > 0
                    ? maxBufferedBodyBytes
                    : Runtime.getRuntime().maxMemory() / 4;
        }

        /**
         * The total of answer bytes buffered for clients at once, across connections: the setting, or a
         * quarter of the maximum heap for 0.
         */
        public long bufferedAnswerLimit() {
            return maxBufferedAnswerBytes > 0
                    ? maxBufferedAnswerBytes
                    : Runtime.getRuntime().maxMemory() / 4;
        }
    }

    /**
     * One entry of {@code workers}: a replica's base URL, its load knobs and, for precise mode, where its
     * engine publishes its KV-cache events.
     *
     * @param url            {@code http://} or {@code https://}, without a trailing slash (one given is dropped)
     * @param models         the models the worker serves as configured ({@code workers[].models}; {@code ["*"]}:
     *                       any model); empty when the key is absent, and then the health checks learn them from
     *                       the replica's {@code GET /v1/models} ({@link ModelDiscovery})
     * @param kvEvents       the engine's KV-event PUB endpoint ({@code tcp://host:port}), or null: the worker is
     *                       routed approximately (by the prefix tree alone)
     * @param kvEventsReplay the engine's replay (ROUTER) endpoint, or null when it has none
     * @param kvEventsRanks  the engine's data-parallel ranks: rank r publishes (and replays) on the ports plus r
     * @param kvEventsTopic  the topic the engine publishes under ({@code ""}: every topic)
     */
    public record Worker(
            String url,
            @Bounds(min = 1, max = Integer.MAX_VALUE) int maxLoad,
            @Bounds(min = 0, max = Integer.MAX_VALUE) int loadPenalty,
            @Nullable List<String> models,
            @Nullable String kvEvents,
            @Nullable String kvEventsReplay,
            @Bounds(min = 1, max = 64) int kvEventsRanks,
            String kvEventsTopic) {
        /** Largest {@code workers[].models} list. */
        public static final int MAX_MODELS = 1024;

        /** {@code models: ["*"]}: the worker serves any model, and its models are not discovered. */
        static final String ANY_MODEL = "*";

        /** Drops a trailing slash of the URL; a null or absent {@code models} is empty (discovered). */
        public Worker {
            url = url == null ? null : stripSlashes(url.trim());
            models = models == null ? List.of() : List.copyOf(new LinkedHashSet<>(models));
            kvEvents = kvEvents == null ? null : kvEvents.trim();
            kvEventsReplay = kvEventsReplay == null ? null : kvEventsReplay.trim();
        }

        /** A worker without KV events (approximate). */
        public Worker(String url, int maxLoad, int loadPenalty, List<String> models) {
            this(url, maxLoad, loadPenalty, models, null, null, 1, "");
        }

        /** A worker whose models are discovered. */
        Worker(String url, int maxLoad, int loadPenalty) {
            this(url, maxLoad, loadPenalty, List.of());
        }

        /**
         * This worker publishing KV-cache events on {@code endpoint}, replaying on {@code replay} (null: none),
         * from one data-parallel rank on every topic.
         */
        public Worker withKvEvents(String endpoint, String replay) {
            return new Worker(url, maxLoad, loadPenalty, models, endpoint, replay, 1, "");
        }

        /** A worker with the default {@code max_load} and {@code load_penalty}, its models discovered. */
        public static Worker of(String url) {
            return ConfigLoader.worker(url);
        }

        static String stripSlashes(String url) {
            String s = url;
            while (s.endsWith("/")) {
                s = s.substring(0, s.length() - 1);
            }
            return s;
        }

        /** True when {@code workers[].models} is set: configured models win over discovery. */
        public boolean modelsConfigured() {
            return !models.isEmpty();
        }

        /** True when {@code other} is the same replica with the same cap and penalty (its models may differ). */
        public boolean sameReplica(Worker other) {
            return url.equals(other.url) && maxLoad == other.maxLoad && loadPenalty == other.loadPenalty;
        }

        /** The models as the replica set takes them: empty for any model. */
        public List<String> servedModels() {
            return models.equals(List.of(ANY_MODEL)) ? List.of() : models;
        }

        public ReplicaSpec spec() {
            return new ReplicaSpec(url, maxLoad, loadPenalty, servedModels());
        }
    }

    /**
     * Section {@code cache}: the policy by name, the settings handed to it (only those the files set; the
     * policy applies its own defaults), the tree and maintenance settings the proxy applies itself, how
     * the router learns (when routes are recorded, {@code learn}; whether the replicas' reported cache hits
     * correct the tree, {@code feedback}; whether a finished chat answer is recorded as the start of the
     * next turn, {@code learn_answer}), and token mode ({@link #tokens()}).
     *
     * @param tokenizer {@code cl100k_base} or {@code o200k_base}, or null ({@code none}) for character keys
     */
    public record Cache(
            String policy,
            @PolicyKeys Map<String, Object> policySettings,
            @Bounds(min = 1, max = Long.MAX_VALUE) long maxTreeSize,
            @Bounds(min = 1, max = 65536) int blockChars,
            @Bounds(min = 0, max = Integer.MAX_VALUE) long evictionIntervalSecs,
            @Bounds(min = -1, max = 23) int dailyCleanupHourUtc,
            @Bounds(min = 0, max = Integer.MAX_VALUE) long routeTtlSecs,
            LearnMode learn,
            boolean feedback,
            boolean learnAnswer,

            @Nullable @OneOf({"cl100k_base", "o200k_base", NO_TOKENIZER})
            String tokenizer,

            @Bounds(min = 1, max = 65536) int blockTokens,
            @Bounds(min = 0, max = 10_000_000) int tokenCacheEntries,
            @Bounds(min = 1, max = 64 * 1024 * 1024) int tokenCacheMaxChars,
            @Bounds(min = 0, max = 100_000) int maxConcurrentTokenizations) {
        static final String NO_TOKENIZER = "none";

        /** Keeps the settings in the order given; {@code tokenizer: none} is null. */
        public Cache {
            policySettings = policySettings == null
                    ? Map.of()
                    : Collections.unmodifiableMap(new LinkedHashMap<>(policySettings));
            tokenizer = NO_TOKENIZER.equals(tokenizer) ? null : tokenizer;
        }

        /** The section's defaults. */
        public static Cache defaults() {
            return Defaults.config().cache();
        }

        /** Token mode's settings ({@code tokenizer} and the keys that go with it). */
        public Tokens tokens() {
            return new Tokens(
                    tokenizer, blockTokens, tokenCacheEntries, tokenCacheMaxChars, maxConcurrentTokenizations);
        }
    }

    /**
     * Token mode ({@code cache.tokenizer} and friends): keys of token ids instead of characters. Off
     * (null tokenizer) by default. In token mode the thresholds and {@code max_tree_size} count tokens.
     *
     * @param tokenizer         {@code cl100k_base} or {@code o200k_base}, or null for character keys
     * @param blockTokens       tokens per key block ({@code cache.block_tokens}, vLLM's block size)
     * @param cacheEntries      segments the tokenization cache keeps ({@code cache.token_cache_entries})
     * @param cacheMaxChars     longest segment cached ({@code cache.token_cache_max_chars})
     * @param maxConcurrent     tokenizations at once before a request falls back to a character key
     *                          ({@code cache.max_concurrent_tokenizations}; 0 = one per processor)
     */
    public record Tokens(String tokenizer, int blockTokens, int cacheEntries, int cacheMaxChars, int maxConcurrent) {
        public boolean on() {
            return tokenizer != null;
        }
    }

    /** Section {@code health}: the probes of every replica. */
    public record Health(
            String endpoint,
            @Bounds(min = 1, max = 86_400) int intervalSecs,
            @Bounds(min = 1, max = 3_600) int timeoutSecs,
            @Bounds(min = 1, max = 1_000) int failureThreshold,
            @Bounds(min = 1, max = 1_000) int successThreshold,
            @Bounds(min = 1, max = 86_400) int modelsIntervalSecs) {

        /** The section's defaults. */
        public static Health defaults() {
            return Defaults.config().health();
        }

        public ManagedReplicaSet.HealthConfig thresholds() {
            return new ManagedReplicaSet.HealthConfig(failureThreshold, successThreshold);
        }
    }

    /** Section {@code circuit_breaker}: one circuit per replica. */
    public record Circuit(
            @Bounds(min = 1, max = 1_000_000) int failureThreshold,
            @Bounds(min = 1, max = 1_000_000) int successThreshold,
            @Bounds(min = 1, max = 86_400) int timeoutSecs,
            @Bounds(min = 1, max = 1_000_000) int halfOpenMaxRequests) {

        /** The section's defaults. */
        public static Circuit defaults() {
            return Defaults.config().circuitBreaker();
        }

        public CircuitBreaker.Config toCore() {
            return new CircuitBreaker.Config(
                    failureThreshold, successThreshold, Duration.ofSeconds(timeoutSecs), halfOpenMaxRequests);
        }
    }

    /**
     * Section {@code proxy}: forwarding, retries, timeouts, limits and logging.
     *
     * @param remoteMediaUrlPolicy a status in [400, 599] to refuse requests with remote media URLs, or
     *                             null to allow them
     */
    public record Proxy(
            @Bounds(min = 0, max = 10) int maxRetries,
            @Bounds(min = 0, max = 60_000) long initialBackoffMs,
            @RealBounds(min = 1.0, max = 10.0) double backoffMultiplier,
            @RealBounds(min = 0.0, max = 1.0) double jitterFactor,
            @HttpStatus List<Integer> retryableStatuses,
            @Bounds(min = 1, max = 3_600) int connectTimeoutSecs,
            @Bounds(min = 1, max = 86_400) int requestTimeoutSecs,
            boolean addRoutedPeerHeader,
            @Nullable @HttpStatus Integer remoteMediaUrlPolicy,
            @Bounds(min = 1, max = Integer.MAX_VALUE - 16) int maxBodyBytes,
            boolean decisionLog) {

        public Proxy {
            retryableStatuses = List.copyOf(retryableStatuses);
        }

        /** The section's defaults. */
        public static Proxy defaults() {
            return Defaults.config().proxy();
        }
    }

    /**
     * The allowed range of an integer key, as its component declares it ({@link Constraints.Bounds}).
     *
     * @param key the key's path, e.g. {@code server.port} or {@code workers[].max_load}
     */
    public record IntRange(String key, long min, long max) {
        public boolean contains(long value) {
            return value >= min && value <= max;
        }

        /** {@code in [0, 65535]}, or {@code >= 1} when the top is only the type's limit. */
        @Override
        public String toString() {
            if (max >= Integer.MAX_VALUE) {
                return ">= " + min;
            }
            return "in [" + min + ", " + max + "]";
        }
    }

    /** The allowed range of a real-valued key ({@link Constraints.RealBounds}). */
    record RealRange(String key, double min, double max) {
        boolean contains(double value) {
            return value >= min && value <= max;
        }

        @Override
        public String toString() {
            if (max >= Float.MAX_VALUE) {
                return ">= " + format(min);
            }
            return "in [" + format(min) + ", " + format(max) + "]";
        }

        /** {@code 1} for 1.0, {@code 0.25} for 0.25: a number as a person writes it. */
        static String format(double d) {
            return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
        }
    }
}
