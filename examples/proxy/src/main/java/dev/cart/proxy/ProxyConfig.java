package dev.cart.proxy;

import dev.cart.core.CircuitBreakerConfig;
import dev.cart.core.HealthConfig;
import dev.cart.core.LearnMode;
import dev.cart.core.ReplicaSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The proxy's whole configuration, immutable. Built by {@link ConfigLoader} from layered YAML files,
 * which checks every key and reports all problems at once; the records' constructors check the same
 * ranges so that a configuration built in code is just as safe. Every numeric range is declared once,
 * as an {@link IntRange} or {@link RealRange} constant of its record, and both the loader and the
 * constructors read it from there. Key names and defaults are those of {@code config.example.yaml} and
 * {@code docs/configuration.md}.
 */
record ProxyConfig(Server server, List<Worker> workers, Cache cache, Health health, Circuit circuitBreaker,
                   Proxy proxy) {

    ProxyConfig {
        Objects.requireNonNull(server, "server");
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(health, "health");
        Objects.requireNonNull(circuitBreaker, "circuit_breaker");
        Objects.requireNonNull(proxy, "proxy");
        workers = List.copyOf(workers);
    }

    /** The same configuration with another worker list (used by demo mode). */
    ProxyConfig withWorkers(List<Worker> newWorkers) {
        return new ProxyConfig(server, newWorkers, cache, health, circuitBreaker, proxy);
    }

    /** Names of the top-level sections other than {@code workers} that differ from {@code other}. */
    List<String> sectionsDifferingFrom(ProxyConfig other) {
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
        return diff;
    }

    /**
     * Section {@code server}: where to listen, request threads, and the limits that protect the proxy from
     * its clients (see docs/hardening.md for who enforces each: the JDK HTTP server or the handler).
     */
    record Server(String host, int port, int maxThreads, int maxConnections, int maxConcurrentRequests,
                  int maxHeaderBytes, int maxHeaders, int maxRequestLineBytes, int requestReadTimeoutSecs,
                  int idleTimeoutSecs) {
        static final String DEFAULT_HOST = "0.0.0.0";
        static final int DEFAULT_PORT = 6700;
        static final int DEFAULT_MAX_THREADS = 512;
        static final int DEFAULT_MAX_CONNECTIONS = 10_000;
        static final int DEFAULT_MAX_CONCURRENT_REQUESTS = 1024;
        static final int DEFAULT_MAX_HEADER_BYTES = 64 * 1024;
        static final int DEFAULT_MAX_HEADERS = 100;
        static final int DEFAULT_MAX_REQUEST_LINE_BYTES = 8 * 1024;
        static final int DEFAULT_REQUEST_READ_TIMEOUT_SECS = 60;
        static final int DEFAULT_IDLE_TIMEOUT_SECS = 30;

        static final IntRange PORT = new IntRange("server.port", 0, 65535);
        static final IntRange MAX_THREADS = new IntRange("server.max_threads", 1, 100_000);
        static final IntRange MAX_CONNECTIONS = new IntRange("server.max_connections", 1, 1_000_000);
        static final IntRange MAX_CONCURRENT_REQUESTS = new IntRange("server.max_concurrent_requests", 1, 1_000_000);
        static final IntRange MAX_HEADER_BYTES = new IntRange("server.max_header_bytes", 1024, 16 * 1024 * 1024);
        static final IntRange MAX_HEADERS = new IntRange("server.max_headers", 1, 10_000);
        static final IntRange MAX_REQUEST_LINE_BYTES = new IntRange("server.max_request_line_bytes", 256,
                16 * 1024 * 1024);
        static final IntRange REQUEST_READ_TIMEOUT_SECS = new IntRange("server.request_read_timeout_secs", 1, 3_600);
        static final IntRange IDLE_TIMEOUT_SECS = new IntRange("server.idle_timeout_secs", 1, 3_600);

        Server {
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
        }

        Server(String host, int port, int maxThreads) {
            this(host, port, maxThreads, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONCURRENT_REQUESTS,
                    DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_HEADERS, DEFAULT_MAX_REQUEST_LINE_BYTES,
                    DEFAULT_REQUEST_READ_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS);
        }

        static Server defaults() {
            return new Server(DEFAULT_HOST, DEFAULT_PORT, DEFAULT_MAX_THREADS);
        }
    }

    /** One entry of {@code workers}: a replica's base URL (no trailing slash) and its load knobs. */
    record Worker(String url, int maxLoad, int loadPenalty) {
        static final int DEFAULT_MAX_LOAD = ReplicaSpec.DEFAULT_MAX_LOAD;
        static final int DEFAULT_LOAD_PENALTY = 0;

        static final IntRange MAX_LOAD = new IntRange("workers[].max_load", 1, Integer.MAX_VALUE);
        static final IntRange LOAD_PENALTY = new IntRange("workers[].load_penalty", 0, Integer.MAX_VALUE);

        Worker {
            Objects.requireNonNull(url, "url");
            MAX_LOAD.check(maxLoad);
            LOAD_PENALTY.check(loadPenalty);
        }

        static Worker of(String url) {
            return new Worker(url, DEFAULT_MAX_LOAD, DEFAULT_LOAD_PENALTY);
        }

        ReplicaSpec spec() {
            return new ReplicaSpec(url, maxLoad, loadPenalty);
        }
    }

    /**
     * Section {@code cache}: the policy by name, the settings handed to it (only those the file sets; the
     * policy applies its own defaults), the tree and maintenance settings the proxy applies itself, and
     * how the router learns: when routes are recorded ({@code learn}), whether the replicas' reported
     * cache hits correct the tree ({@code feedback}), and whether a finished chat answer is recorded as
     * the start of the next turn ({@code learn_answer}).
     */
    record Cache(String policy, Map<String, Object> policySettings, long maxTreeSize, int blockChars,
                 long evictionIntervalSecs, int dailyCleanupHourUtc, long routeTtlSecs, LearnMode learn,
                 boolean feedback, boolean learnAnswer, Tokens tokens) {
        static final String DEFAULT_POLICY = "cache_aware";
        static final long DEFAULT_MAX_TREE_SIZE = 1_000_000;
        static final int DEFAULT_BLOCK_CHARS = 64;
        static final long DEFAULT_EVICTION_INTERVAL_SECS = 60;
        static final int DEFAULT_DAILY_CLEANUP_HOUR_UTC = -1;
        static final long DEFAULT_ROUTE_TTL_SECS = 0;
        static final LearnMode DEFAULT_LEARN = LearnMode.ON_ROUTE;
        static final boolean DEFAULT_FEEDBACK = true;
        static final boolean DEFAULT_LEARN_ANSWER = true;

        static final IntRange MAX_TREE_SIZE = new IntRange("cache.max_tree_size", 1, Long.MAX_VALUE);
        static final IntRange BLOCK_CHARS = new IntRange("cache.block_chars", 1, 65536);
        static final IntRange EVICTION_INTERVAL_SECS = new IntRange("cache.eviction_interval_secs", 0,
                Integer.MAX_VALUE);
        static final IntRange DAILY_CLEANUP_HOUR_UTC = new IntRange("cache.daily_cleanup_hour_utc", -1, 23);
        static final IntRange ROUTE_TTL_SECS = new IntRange("cache.route_ttl_secs", 0, Integer.MAX_VALUE);

        Cache {
            Objects.requireNonNull(policy, "cache.policy");
            Objects.requireNonNull(learn, "cache.learn");
            Objects.requireNonNull(tokens, "cache tokens");
            policySettings = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(policySettings));
            MAX_TREE_SIZE.check(maxTreeSize);
            BLOCK_CHARS.check(blockChars);
            EVICTION_INTERVAL_SECS.check(evictionIntervalSecs);
            DAILY_CLEANUP_HOUR_UTC.check(dailyCleanupHourUtc);
            ROUTE_TTL_SECS.check(routeTtlSecs);
        }

        static Cache defaults() {
            return new Cache(DEFAULT_POLICY, Map.of(), DEFAULT_MAX_TREE_SIZE, DEFAULT_BLOCK_CHARS,
                    DEFAULT_EVICTION_INTERVAL_SECS, DEFAULT_DAILY_CLEANUP_HOUR_UTC, DEFAULT_ROUTE_TTL_SECS,
                    DEFAULT_LEARN, DEFAULT_FEEDBACK, DEFAULT_LEARN_ANSWER, Tokens.defaults());
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
    record Tokens(String tokenizer, int blockTokens, int cacheEntries, int cacheMaxChars, int maxConcurrent) {
        static final java.util.Set<String> TOKENIZERS = java.util.Set.of("cl100k_base", "o200k_base");
        static final IntRange BLOCK_TOKENS = new IntRange("cache.block_tokens", 1, 65536);
        static final IntRange CACHE_ENTRIES = new IntRange("cache.token_cache_entries", 0, 10_000_000);
        static final IntRange CACHE_MAX_CHARS = new IntRange("cache.token_cache_max_chars", 1, 64 * 1024 * 1024);
        static final IntRange MAX_CONCURRENT = new IntRange("cache.max_concurrent_tokenizations", 0, 100_000);

        Tokens {
            if (tokenizer != null && !TOKENIZERS.contains(tokenizer)) {
                throw new IllegalArgumentException("cache.tokenizer must be one of cl100k_base, o200k_base, was '"
                        + tokenizer + "'");
            }
            BLOCK_TOKENS.check(blockTokens);
            CACHE_ENTRIES.check(cacheEntries);
            CACHE_MAX_CHARS.check(cacheMaxChars);
            MAX_CONCURRENT.check(maxConcurrent);
        }

        static Tokens defaults() {
            return new Tokens(null, 16, 1000, 65_536, 0);
        }

        boolean on() {
            return tokenizer != null;
        }
    }

    /** Section {@code health}. */
    record Health(String endpoint, int intervalSecs, int timeoutSecs, int failureThreshold, int successThreshold) {
        static final String DEFAULT_ENDPOINT = "/health";

        static final IntRange INTERVAL_SECS = new IntRange("health.interval_secs", 1, 86_400);
        static final IntRange TIMEOUT_SECS = new IntRange("health.timeout_secs", 1, 3_600);
        static final IntRange FAILURE_THRESHOLD = new IntRange("health.failure_threshold", 1, 1_000);
        static final IntRange SUCCESS_THRESHOLD = new IntRange("health.success_threshold", 1, 1_000);

        Health {
            Objects.requireNonNull(endpoint, "health.endpoint");
            if (!endpoint.startsWith("/")) {
                throw new IllegalArgumentException("health.endpoint must start with '/', was " + endpoint);
            }
            INTERVAL_SECS.check(intervalSecs);
            TIMEOUT_SECS.check(timeoutSecs);
            FAILURE_THRESHOLD.check(failureThreshold);
            SUCCESS_THRESHOLD.check(successThreshold);
        }

        static Health defaults() {
            return new Health(DEFAULT_ENDPOINT, 10, 5, HealthConfig.defaults().failureThreshold(),
                    HealthConfig.defaults().successThreshold());
        }

        HealthConfig thresholds() {
            return new HealthConfig(failureThreshold, successThreshold);
        }
    }

    /** Section {@code circuit_breaker}. */
    record Circuit(int failureThreshold, int successThreshold, int timeoutSecs, int halfOpenMaxRequests) {
        static final IntRange FAILURE_THRESHOLD = new IntRange("circuit_breaker.failure_threshold", 1, 1_000_000);
        static final IntRange SUCCESS_THRESHOLD = new IntRange("circuit_breaker.success_threshold", 1, 1_000_000);
        static final IntRange TIMEOUT_SECS = new IntRange("circuit_breaker.timeout_secs", 1, 86_400);
        static final IntRange HALF_OPEN_MAX_REQUESTS = new IntRange("circuit_breaker.half_open_max_requests", 1,
                1_000_000);

        Circuit {
            FAILURE_THRESHOLD.check(failureThreshold);
            SUCCESS_THRESHOLD.check(successThreshold);
            TIMEOUT_SECS.check(timeoutSecs);
            HALF_OPEN_MAX_REQUESTS.check(halfOpenMaxRequests);
        }

        static Circuit defaults() {
            CircuitBreakerConfig d = CircuitBreakerConfig.defaults();
            return new Circuit(d.failureThreshold(), d.successThreshold(), (int) d.openTimeout().toSeconds(),
                    d.halfOpenMaxRequests());
        }

        CircuitBreakerConfig toCore() {
            return new CircuitBreakerConfig(failureThreshold, successThreshold, Duration.ofSeconds(timeoutSecs),
                    halfOpenMaxRequests);
        }
    }

    /** Section {@code proxy}: forwarding, retries, timeouts, limits and logging. */
    record Proxy(int maxRetries, long initialBackoffMs, double backoffMultiplier, double jitterFactor,
                 List<Integer> retryableStatuses, int connectTimeoutSecs, int requestTimeoutSecs,
                 boolean addRoutedPeerHeader, Integer remoteMediaUrlPolicy, int maxBodyBytes, boolean decisionLog) {
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

        Proxy {
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

        static Proxy defaults() {
            return new Proxy(2, 100, 2.0, 0.2, List.of(502, 503, 504), 2, 600, false, null, 32 * 1024 * 1024,
                    true);
        }
    }

    /** The allowed range of an integer key; the one place its bounds are written. */
    record IntRange(String key, long min, long max) {
        /** Throws, naming the key and the range, when {@code value} is outside. */
        void check(long value) {
            if (!contains(value)) {
                throw new IllegalArgumentException(key + " must be in " + this + ", was " + value);
            }
        }

        boolean contains(long value) {
            return value >= min && value <= max;
        }

        @Override
        public String toString() {
            return "[" + min + ", " + max + "]";
        }
    }

    /** The allowed range of a real-valued key; the one place its bounds are written. */
    record RealRange(String key, double min, double max) {
        void check(double value) {
            if (!contains(value)) {
                throw new IllegalArgumentException(key + " must be in " + this + ", was " + value);
            }
        }

        boolean contains(double value) {
            return value >= min && value <= max;
        }

        @Override
        public String toString() {
            return "[" + min + ", " + max + "]";
        }
    }
}
