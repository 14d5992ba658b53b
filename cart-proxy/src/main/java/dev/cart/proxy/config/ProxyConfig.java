package dev.cart.proxy.config;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.LearnMode;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.proxy.upstream.ModelDiscovery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The proxy's whole configuration, immutable. Built by {@link ConfigLoader} from layered YAML files,
 * which checks every key and reports all problems at once; each section is built through its
 * {@code Builder} (named setters starting from the defaults, so two settings of the same type cannot be
 * swapped by position). Every numeric range is declared once, as an {@link IntRange} or
 * {@link RealRange} constant of its record: the loader reports a value outside it as a problem, and the
 * record's constructor throws on it, so a configuration built in code is just as safe. Key names and
 * defaults are those of {@code config.example.yaml} and {@code docs/configuration.md}.
 */
public record ProxyConfig(
        Server server,
        List<Worker> workers,
        Cache cache,
        Health health,
        Circuit circuitBreaker,
        Proxy proxy,
        ClusterConfig cluster) {

    /** A configuration without the {@code cluster} section (one instance alone). */
    ProxyConfig(Server server, List<Worker> workers, Cache cache, Health health, Circuit circuitBreaker, Proxy proxy) {
        this(server, workers, cache, health, circuitBreaker, proxy, ClusterConfig.OFF);
    }

    public ProxyConfig {
        Objects.requireNonNull(cluster, "cluster");
        Objects.requireNonNull(server, "server");
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(health, "health");
        Objects.requireNonNull(circuitBreaker, "circuit_breaker");
        Objects.requireNonNull(proxy, "proxy");
        workers = List.copyOf(workers);
    }

    /** The same configuration with another worker list (used by demo mode). */
    public ProxyConfig withWorkers(List<Worker> newWorkers) {
        return new ProxyConfig(server, newWorkers, cache, health, circuitBreaker, proxy, cluster);
    }

    /** The same configuration with another {@code server} section (command-line overrides). */
    public ProxyConfig withServer(Server newServer) {
        return new ProxyConfig(newServer, workers, cache, health, circuitBreaker, proxy, cluster);
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
        return diff;
    }

    /**
     * Section {@code server}: where to listen, request threads, and the limits that protect the proxy from
     * its clients (see docs/hardening.md for who enforces each: the front or the core).
     */
    public record Server(
            String host,
            int port,
            int maxThreads,
            int maxConnections,
            int maxConcurrentRequests,
            int maxHeaderBytes,
            int maxHeaders,
            int maxRequestLineBytes,
            int requestReadTimeoutSecs,
            int idleTimeoutSecs,
            Engine engine,
            long maxBufferedBodyBytes,
            long maxBufferedAnswerBytes) {
        static final String DEFAULT_HOST = "0.0.0.0";
        public static final int DEFAULT_PORT = 6700;

        public static final IntRange PORT = new IntRange("server.port", 0, 65535);
        static final IntRange MAX_THREADS = new IntRange("server.max_threads", 1, 100_000);
        static final IntRange MAX_CONNECTIONS = new IntRange("server.max_connections", 1, 1_000_000);
        static final IntRange MAX_CONCURRENT_REQUESTS = new IntRange("server.max_concurrent_requests", 1, 1_000_000);
        static final IntRange MAX_HEADER_BYTES = new IntRange("server.max_header_bytes", 1024, 16 * 1024 * 1024);
        static final IntRange MAX_HEADERS = new IntRange("server.max_headers", 1, 10_000);
        static final IntRange MAX_REQUEST_LINE_BYTES =
                new IntRange("server.max_request_line_bytes", 256, 16 * 1024 * 1024);
        static final IntRange REQUEST_READ_TIMEOUT_SECS = new IntRange("server.request_read_timeout_secs", 1, 3_600);
        static final IntRange IDLE_TIMEOUT_SECS = new IntRange("server.idle_timeout_secs", 1, 3_600);
        /** 0: a quarter of the JVM's maximum heap ({@link #bufferedBodyLimit()}). */
        static final IntRange MAX_BUFFERED_BODY_BYTES = new IntRange("server.max_buffered_body_bytes", 0, 1L << 50);
        /** 0: a quarter of the JVM's maximum heap ({@link #bufferedAnswerLimit()}). */
        static final IntRange MAX_BUFFERED_ANSWER_BYTES = new IntRange("server.max_buffered_answer_bytes", 0, 1L << 50);

        /** The HTTP front: Netty (event loops; the only one since the JDK front was removed). */
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

        public Server {
            Objects.requireNonNull(host, "server.host");
            PORT.check(port);
            MAX_THREADS.check(maxThreads);
            MAX_CONNECTIONS.check(maxConnections);
            MAX_CONCURRENT_REQUESTS.check(maxConcurrentRequests);
            MAX_HEADER_BYTES.check(maxHeaderBytes);
            MAX_HEADERS.check(maxHeaders);
            MAX_REQUEST_LINE_BYTES.check(maxRequestLineBytes);
            REQUEST_READ_TIMEOUT_SECS.check(requestReadTimeoutSecs);
            IDLE_TIMEOUT_SECS.check(idleTimeoutSecs);
            Objects.requireNonNull(engine, "server.engine");
            MAX_BUFFERED_BODY_BYTES.check(maxBufferedBodyBytes);
            MAX_BUFFERED_ANSWER_BYTES.check(maxBufferedAnswerBytes);
        }

        public static Server defaults() {
            return builder().build();
        }

        public static Builder builder() {
            return new Builder();
        }

        /** This section with its other settings kept. */
        public Builder toBuilder() {
            return builder()
                    .host(host)
                    .port(port)
                    .maxThreads(maxThreads)
                    .maxConnections(maxConnections)
                    .maxConcurrentRequests(maxConcurrentRequests)
                    .maxHeaderBytes(maxHeaderBytes)
                    .maxHeaders(maxHeaders)
                    .maxRequestLineBytes(maxRequestLineBytes)
                    .requestReadTimeoutSecs(requestReadTimeoutSecs)
                    .idleTimeoutSecs(idleTimeoutSecs)
                    .engine(engine)
                    .maxBufferedBodyBytes(maxBufferedBodyBytes)
                    .maxBufferedAnswerBytes(maxBufferedAnswerBytes);
        }

        /** Named settings, starting from the defaults. */
        public static final class Builder {
            private String host = DEFAULT_HOST;
            private int port = DEFAULT_PORT;
            private int maxThreads = 512;
            private int maxConnections = 10_000;
            private int maxConcurrentRequests = 1024;
            private int maxHeaderBytes = 64 * 1024;
            private int maxHeaders = 100;
            private int maxRequestLineBytes = 8 * 1024;
            private int requestReadTimeoutSecs = 60;
            private int idleTimeoutSecs = 30;
            private Engine engine = Engine.NETTY;
            private long maxBufferedBodyBytes = 0;
            private long maxBufferedAnswerBytes = 0;

            public Builder engine(Engine v) {
                engine = v;
                return this;
            }

            Builder maxBufferedBodyBytes(long v) {
                maxBufferedBodyBytes = v;
                return this;
            }

            Builder maxBufferedAnswerBytes(long v) {
                maxBufferedAnswerBytes = v;
                return this;
            }

            public Builder host(String v) {
                host = v;
                return this;
            }

            public Builder port(int v) {
                port = v;
                return this;
            }

            public Builder maxThreads(int v) {
                maxThreads = v;
                return this;
            }

            public Builder maxConnections(int v) {
                maxConnections = v;
                return this;
            }

            public Builder maxConcurrentRequests(int v) {
                maxConcurrentRequests = v;
                return this;
            }

            Builder maxHeaderBytes(int v) {
                maxHeaderBytes = v;
                return this;
            }

            Builder maxHeaders(int v) {
                maxHeaders = v;
                return this;
            }

            Builder maxRequestLineBytes(int v) {
                maxRequestLineBytes = v;
                return this;
            }

            Builder requestReadTimeoutSecs(int v) {
                requestReadTimeoutSecs = v;
                return this;
            }

            Builder idleTimeoutSecs(int v) {
                idleTimeoutSecs = v;
                return this;
            }

            public Server build() {
                return new Server(
                        host,
                        port,
                        maxThreads,
                        maxConnections,
                        maxConcurrentRequests,
                        maxHeaderBytes,
                        maxHeaders,
                        maxRequestLineBytes,
                        requestReadTimeoutSecs,
                        idleTimeoutSecs,
                        engine,
                        maxBufferedBodyBytes,
                        maxBufferedAnswerBytes);
            }
        }
    }

    /** One entry of {@code workers}: a replica's base URL (no trailing slash) and its load knobs. */
    /**
     * One entry of {@code workers}.
     *
     * @param models the models the worker serves as configured ({@code workers[].models}; {@code ["*"]}:
     *               any model); empty when the key is absent, and then the health checks learn them from
     *               the replica's {@code GET /v1/models} ({@link ModelDiscovery})
     */
    public record Worker(String url, int maxLoad, int loadPenalty, List<String> models) {
        static final int DEFAULT_MAX_LOAD = ReplicaSpec.DEFAULT_MAX_LOAD;
        static final int DEFAULT_LOAD_PENALTY = 0;
        /** Largest {@code workers[].models} list. */
        public static final int MAX_MODELS = 1024;

        static final IntRange MAX_LOAD = new IntRange("workers[].max_load", 1, Integer.MAX_VALUE);
        static final IntRange LOAD_PENALTY = new IntRange("workers[].load_penalty", 0, Integer.MAX_VALUE);
        static final String MODELS = "models";
        /** {@code models: ["*"]}: the worker serves any model, and its models are not discovered. */
        static final String ANY_MODEL = "*";

        public Worker {
            Objects.requireNonNull(url, "url");
            MAX_LOAD.check(maxLoad);
            LOAD_PENALTY.check(loadPenalty);
            models = List.copyOf(models);
        }

        /** A worker whose models are discovered. */
        Worker(String url, int maxLoad, int loadPenalty) {
            this(url, maxLoad, loadPenalty, List.of());
        }

        public static Worker of(String url) {
            return new Worker(url, DEFAULT_MAX_LOAD, DEFAULT_LOAD_PENALTY);
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
     * Section {@code cache}: the policy by name, the settings handed to it (only those the file sets; the
     * policy applies its own defaults), the tree and maintenance settings the proxy applies itself, and
     * how the router learns: when routes are recorded ({@code learn}), whether the replicas' reported
     * cache hits correct the tree ({@code feedback}), and whether a finished chat answer is recorded as
     * the start of the next turn ({@code learn_answer}).
     */
    public record Cache(
            String policy,
            Map<String, Object> policySettings,
            long maxTreeSize,
            int blockChars,
            long evictionIntervalSecs,
            int dailyCleanupHourUtc,
            long routeTtlSecs,
            LearnMode learn,
            boolean feedback,
            boolean learnAnswer,
            Tokens tokens) {
        static final String DEFAULT_POLICY = "cache_aware";

        static final IntRange MAX_TREE_SIZE = new IntRange("cache.max_tree_size", 1, Long.MAX_VALUE);
        static final IntRange BLOCK_CHARS = new IntRange("cache.block_chars", 1, 65536);
        static final IntRange EVICTION_INTERVAL_SECS =
                new IntRange("cache.eviction_interval_secs", 0, Integer.MAX_VALUE);
        static final IntRange DAILY_CLEANUP_HOUR_UTC = new IntRange("cache.daily_cleanup_hour_utc", -1, 23);
        static final IntRange ROUTE_TTL_SECS = new IntRange("cache.route_ttl_secs", 0, Integer.MAX_VALUE);

        public Cache {
            Objects.requireNonNull(policy, "cache.policy");
            Objects.requireNonNull(learn, "cache.learn");
            Objects.requireNonNull(tokens, "cache tokens");
            policySettings = Collections.unmodifiableMap(new LinkedHashMap<>(policySettings));
            MAX_TREE_SIZE.check(maxTreeSize);
            BLOCK_CHARS.check(blockChars);
            EVICTION_INTERVAL_SECS.check(evictionIntervalSecs);
            DAILY_CLEANUP_HOUR_UTC.check(dailyCleanupHourUtc);
            ROUTE_TTL_SECS.check(routeTtlSecs);
        }

        public static Cache defaults() {
            return builder().build();
        }

        public static Builder builder() {
            return new Builder();
        }

        /** Named settings, starting from the defaults. */
        public static final class Builder {
            private String policy = DEFAULT_POLICY;
            private final Map<String, Object> policySettings = new LinkedHashMap<>();
            private long maxTreeSize = 1_000_000;
            private int blockChars = 64;
            private long evictionIntervalSecs = 60;
            private int dailyCleanupHourUtc = -1;
            private long routeTtlSecs = 0;
            private LearnMode learn = LearnMode.ON_ROUTE;
            private boolean feedback = true;
            private boolean learnAnswer = true;
            private Tokens tokens = Tokens.defaults();

            Builder policy(String v) {
                policy = v;
                return this;
            }

            /** A setting handed to the policy as it is (the policy checks it). */
            Builder policySetting(String key, Object value) {
                policySettings.put(key, value);
                return this;
            }

            Builder maxTreeSize(long v) {
                maxTreeSize = v;
                return this;
            }

            Builder blockChars(int v) {
                blockChars = v;
                return this;
            }

            Builder evictionIntervalSecs(long v) {
                evictionIntervalSecs = v;
                return this;
            }

            Builder dailyCleanupHourUtc(int v) {
                dailyCleanupHourUtc = v;
                return this;
            }

            Builder routeTtlSecs(long v) {
                routeTtlSecs = v;
                return this;
            }

            Builder learn(LearnMode v) {
                learn = v;
                return this;
            }

            Builder feedback(boolean v) {
                feedback = v;
                return this;
            }

            Builder learnAnswer(boolean v) {
                learnAnswer = v;
                return this;
            }

            Builder tokens(Tokens v) {
                tokens = v;
                return this;
            }

            public Cache build() {
                return new Cache(
                        policy,
                        policySettings,
                        maxTreeSize,
                        blockChars,
                        evictionIntervalSecs,
                        dailyCleanupHourUtc,
                        routeTtlSecs,
                        learn,
                        feedback,
                        learnAnswer,
                        tokens);
            }
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
        static final Set<String> TOKENIZERS = Set.of("cl100k_base", "o200k_base");
        static final IntRange BLOCK_TOKENS = new IntRange("cache.block_tokens", 1, 65536);
        static final IntRange CACHE_ENTRIES = new IntRange("cache.token_cache_entries", 0, 10_000_000);
        static final IntRange CACHE_MAX_CHARS = new IntRange("cache.token_cache_max_chars", 1, 64 * 1024 * 1024);
        static final IntRange MAX_CONCURRENT = new IntRange("cache.max_concurrent_tokenizations", 0, 100_000);

        public Tokens {
            if (tokenizer != null && !TOKENIZERS.contains(tokenizer)) {
                throw new IllegalArgumentException(
                        "cache.tokenizer: must be one of cl100k_base, o200k_base, was '" + tokenizer + "'");
            }
            BLOCK_TOKENS.check(blockTokens);
            CACHE_ENTRIES.check(cacheEntries);
            CACHE_MAX_CHARS.check(cacheMaxChars);
            MAX_CONCURRENT.check(maxConcurrent);
        }

        public static Tokens defaults() {
            return builder().build();
        }

        public static Builder builder() {
            return new Builder();
        }

        public boolean on() {
            return tokenizer != null;
        }

        /** Named settings, starting from the defaults (character mode). */
        public static final class Builder {
            private String tokenizer;
            private int blockTokens = 16;
            private int cacheEntries = 1000;
            private int cacheMaxChars = 65_536;
            private int maxConcurrent = 0;

            /** {@code cl100k_base}, {@code o200k_base}, or null for character keys. */
            Builder tokenizer(String v) {
                tokenizer = v;
                return this;
            }

            Builder blockTokens(int v) {
                blockTokens = v;
                return this;
            }

            Builder cacheEntries(int v) {
                cacheEntries = v;
                return this;
            }

            Builder cacheMaxChars(int v) {
                cacheMaxChars = v;
                return this;
            }

            Builder maxConcurrent(int v) {
                maxConcurrent = v;
                return this;
            }

            public Tokens build() {
                return new Tokens(tokenizer, blockTokens, cacheEntries, cacheMaxChars, maxConcurrent);
            }
        }
    }

    /** Section {@code health}. */
    public record Health(
            String endpoint, int intervalSecs, int timeoutSecs, int failureThreshold, int successThreshold) {
        static final IntRange INTERVAL_SECS = new IntRange("health.interval_secs", 1, 86_400);
        static final IntRange TIMEOUT_SECS = new IntRange("health.timeout_secs", 1, 3_600);
        static final IntRange FAILURE_THRESHOLD = new IntRange("health.failure_threshold", 1, 1_000);
        static final IntRange SUCCESS_THRESHOLD = new IntRange("health.success_threshold", 1, 1_000);

        public Health {
            Objects.requireNonNull(endpoint, "health.endpoint");
            if (!endpoint.startsWith("/")) {
                throw new IllegalArgumentException("health.endpoint: must start with '/', was " + endpoint);
            }
            INTERVAL_SECS.check(intervalSecs);
            TIMEOUT_SECS.check(timeoutSecs);
            FAILURE_THRESHOLD.check(failureThreshold);
            SUCCESS_THRESHOLD.check(successThreshold);
        }

        public static Health defaults() {
            return builder().build();
        }

        public static Builder builder() {
            return new Builder();
        }

        public ManagedReplicaSet.HealthConfig thresholds() {
            return new ManagedReplicaSet.HealthConfig(failureThreshold, successThreshold);
        }

        /** Named settings, starting from the defaults. */
        public static final class Builder {
            private String endpoint = "/health";
            private int intervalSecs = 10;
            private int timeoutSecs = 5;
            private int failureThreshold =
                    ManagedReplicaSet.HealthConfig.defaults().failureThreshold();
            private int successThreshold =
                    ManagedReplicaSet.HealthConfig.defaults().successThreshold();

            Builder endpoint(String v) {
                endpoint = v;
                return this;
            }

            Builder intervalSecs(int v) {
                intervalSecs = v;
                return this;
            }

            Builder timeoutSecs(int v) {
                timeoutSecs = v;
                return this;
            }

            Builder failureThreshold(int v) {
                failureThreshold = v;
                return this;
            }

            Builder successThreshold(int v) {
                successThreshold = v;
                return this;
            }

            public Health build() {
                return new Health(endpoint, intervalSecs, timeoutSecs, failureThreshold, successThreshold);
            }
        }
    }

    /** Section {@code circuit_breaker}. */
    public record Circuit(int failureThreshold, int successThreshold, int timeoutSecs, int halfOpenMaxRequests) {
        static final IntRange FAILURE_THRESHOLD = new IntRange("circuit_breaker.failure_threshold", 1, 1_000_000);
        static final IntRange SUCCESS_THRESHOLD = new IntRange("circuit_breaker.success_threshold", 1, 1_000_000);
        static final IntRange TIMEOUT_SECS = new IntRange("circuit_breaker.timeout_secs", 1, 86_400);
        static final IntRange HALF_OPEN_MAX_REQUESTS =
                new IntRange("circuit_breaker.half_open_max_requests", 1, 1_000_000);

        public Circuit {
            FAILURE_THRESHOLD.check(failureThreshold);
            SUCCESS_THRESHOLD.check(successThreshold);
            TIMEOUT_SECS.check(timeoutSecs);
            HALF_OPEN_MAX_REQUESTS.check(halfOpenMaxRequests);
        }

        public static Circuit defaults() {
            return builder().build();
        }

        public static Builder builder() {
            return new Builder();
        }

        public CircuitBreaker.Config toCore() {
            return new CircuitBreaker.Config(
                    failureThreshold, successThreshold, Duration.ofSeconds(timeoutSecs), halfOpenMaxRequests);
        }

        /** Named settings, starting from the defaults (those of the core's circuit breaker). */
        public static final class Builder {
            private int failureThreshold = CircuitBreaker.Config.defaults().failureThreshold();
            private int successThreshold = CircuitBreaker.Config.defaults().successThreshold();
            private int timeoutSecs =
                    (int) CircuitBreaker.Config.defaults().openTimeout().toSeconds();
            private int halfOpenMaxRequests = CircuitBreaker.Config.defaults().halfOpenMaxRequests();

            Builder failureThreshold(int v) {
                failureThreshold = v;
                return this;
            }

            Builder successThreshold(int v) {
                successThreshold = v;
                return this;
            }

            Builder timeoutSecs(int v) {
                timeoutSecs = v;
                return this;
            }

            Builder halfOpenMaxRequests(int v) {
                halfOpenMaxRequests = v;
                return this;
            }

            public Circuit build() {
                return new Circuit(failureThreshold, successThreshold, timeoutSecs, halfOpenMaxRequests);
            }
        }
    }

    /** Section {@code proxy}: forwarding, retries, timeouts, limits and logging. */
    public record Proxy(
            int maxRetries,
            long initialBackoffMs,
            double backoffMultiplier,
            double jitterFactor,
            List<Integer> retryableStatuses,
            int connectTimeoutSecs,
            int requestTimeoutSecs,
            boolean addRoutedPeerHeader,
            Integer remoteMediaUrlPolicy,
            int maxBodyBytes,
            boolean decisionLog) {
        static final int MAX_BODY_LIMIT = Integer.MAX_VALUE - 16;

        static final IntRange MAX_RETRIES = new IntRange("proxy.max_retries", 0, 10);
        static final IntRange INITIAL_BACKOFF_MS = new IntRange("proxy.initial_backoff_ms", 0, 60_000);
        static final RealRange BACKOFF_MULTIPLIER = new RealRange("proxy.backoff_multiplier", 1.0, 10.0);
        static final RealRange JITTER_FACTOR = new RealRange("proxy.jitter_factor", 0.0, 1.0);
        /** An HTTP error status: the elements of {@code retryable_statuses}, and {@code remote_media_url_policy}. */
        static final IntRange ERROR_STATUS = new IntRange("proxy.retryable_statuses[]", 400, 599);

        static final IntRange REMOTE_MEDIA_URL_POLICY = new IntRange("proxy.remote_media_url_policy", 400, 599);
        static final IntRange CONNECT_TIMEOUT_SECS = new IntRange("proxy.connect_timeout_secs", 1, 3_600);
        static final IntRange REQUEST_TIMEOUT_SECS = new IntRange("proxy.request_timeout_secs", 1, 86_400);
        static final IntRange MAX_BODY_BYTES = new IntRange("proxy.max_body_bytes", 1, MAX_BODY_LIMIT);

        public Proxy {
            MAX_RETRIES.check(maxRetries);
            INITIAL_BACKOFF_MS.check(initialBackoffMs);
            BACKOFF_MULTIPLIER.check(backoffMultiplier);
            JITTER_FACTOR.check(jitterFactor);
            retryableStatuses = List.copyOf(retryableStatuses);
            for (int s : retryableStatuses) {
                ERROR_STATUS.check(s);
            }
            CONNECT_TIMEOUT_SECS.check(connectTimeoutSecs);
            REQUEST_TIMEOUT_SECS.check(requestTimeoutSecs);
            if (remoteMediaUrlPolicy != null) {
                REMOTE_MEDIA_URL_POLICY.check(remoteMediaUrlPolicy);
            }
            MAX_BODY_BYTES.check(maxBodyBytes);
        }

        public static Proxy defaults() {
            return builder().build();
        }

        public static Builder builder() {
            return new Builder();
        }

        /** Named settings, starting from the defaults. */
        public static final class Builder {
            private int maxRetries = 2;
            private long initialBackoffMs = 100;
            private double backoffMultiplier = 2.0;
            private double jitterFactor = 0.2;
            private List<Integer> retryableStatuses = List.of(502, 503, 504);
            private int connectTimeoutSecs = 2;
            private int requestTimeoutSecs = 600;
            private boolean addRoutedPeerHeader = false;
            private Integer remoteMediaUrlPolicy = null;
            private int maxBodyBytes = 32 * 1024 * 1024;
            private boolean decisionLog = true;

            Builder maxRetries(int v) {
                maxRetries = v;
                return this;
            }

            Builder initialBackoffMs(long v) {
                initialBackoffMs = v;
                return this;
            }

            Builder backoffMultiplier(double v) {
                backoffMultiplier = v;
                return this;
            }

            Builder jitterFactor(double v) {
                jitterFactor = v;
                return this;
            }

            Builder retryableStatuses(List<Integer> v) {
                retryableStatuses = v;
                return this;
            }

            Builder connectTimeoutSecs(int v) {
                connectTimeoutSecs = v;
                return this;
            }

            Builder requestTimeoutSecs(int v) {
                requestTimeoutSecs = v;
                return this;
            }

            Builder addRoutedPeerHeader(boolean v) {
                addRoutedPeerHeader = v;
                return this;
            }

            /** A status in [400, 599] to refuse requests with remote media URLs, or null to allow them. */
            Builder remoteMediaUrlPolicy(Integer v) {
                remoteMediaUrlPolicy = v;
                return this;
            }

            Builder maxBodyBytes(int v) {
                maxBodyBytes = v;
                return this;
            }

            Builder decisionLog(boolean v) {
                decisionLog = v;
                return this;
            }

            public Proxy build() {
                return new Proxy(
                        maxRetries,
                        initialBackoffMs,
                        backoffMultiplier,
                        jitterFactor,
                        retryableStatuses,
                        connectTimeoutSecs,
                        requestTimeoutSecs,
                        addRoutedPeerHeader,
                        remoteMediaUrlPolicy,
                        maxBodyBytes,
                        decisionLog);
            }
        }
    }

    /** The allowed range of an integer key; the one place its bounds are written. */
    public record IntRange(String key, long min, long max) {
        /** Throws, naming the key and the range, when {@code value} is outside. */
        void check(long value) {
            if (!contains(value)) {
                throw new IllegalArgumentException(key + ": must be " + this + ", was " + value);
            }
        }

        public boolean contains(long value) {
            return value >= min && value <= max;
        }

        /** The key's name within its section ({@code port} for {@code server.port}). */
        String name() {
            return key.substring(key.lastIndexOf('.') + 1);
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

    /** The allowed range of a real-valued key; the one place its bounds are written. */
    record RealRange(String key, double min, double max) {
        void check(double value) {
            if (!contains(value)) {
                throw new IllegalArgumentException(key + ": must be " + this + ", was " + format(value));
            }
        }

        public boolean contains(double value) {
            return value >= min && value <= max;
        }

        String name() {
            return key.substring(key.lastIndexOf('.') + 1);
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
