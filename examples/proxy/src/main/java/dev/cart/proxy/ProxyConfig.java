package dev.cart.proxy;

import dev.cart.core.CircuitBreakerConfig;
import dev.cart.core.HealthConfig;
import dev.cart.core.ReplicaSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The proxy's whole configuration, immutable. Built by {@link ConfigLoader} from layered YAML files,
 * which checks every key and reports all problems at once; the records' constructors check their
 * invariants again so that a configuration built in code is just as safe. Key names and defaults are
 * those of {@code config.example.yaml} and {@code docs/configuration.md}.
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

        Server {
            Objects.requireNonNull(host, "server.host");
            Ranges.check("server.port", port, 0, 65535);
            Ranges.check("server.max_threads", maxThreads, 1, 100_000);
            Ranges.check("server.max_connections", maxConnections, 1, 1_000_000);
            Ranges.check("server.max_concurrent_requests", maxConcurrentRequests, 1, 1_000_000);
            Ranges.check("server.max_header_bytes", maxHeaderBytes, 1024, 16 * 1024 * 1024);
            Ranges.check("server.max_headers", maxHeaders, 1, 10_000);
            Ranges.check("server.max_request_line_bytes", maxRequestLineBytes, 256, 16 * 1024 * 1024);
            Ranges.check("server.request_read_timeout_secs", requestReadTimeoutSecs, 1, 3_600);
            Ranges.check("server.idle_timeout_secs", idleTimeoutSecs, 1, 3_600);
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

        Worker {
            Objects.requireNonNull(url, "url");
            Ranges.check("max_load", maxLoad, 1, Integer.MAX_VALUE);
            Ranges.check("load_penalty", loadPenalty, 0, Integer.MAX_VALUE);
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
     * policy applies its own defaults), and the tree and maintenance settings the proxy applies itself.
     */
    record Cache(String policy, Map<String, Object> policySettings, long maxTreeSize, int blockChars,
                 long evictionIntervalSecs, int dailyCleanupHourUtc, long routeTtlSecs) {
        static final String DEFAULT_POLICY = "cache_aware";
        static final long DEFAULT_MAX_TREE_SIZE = 1_000_000;
        static final int DEFAULT_BLOCK_CHARS = 64;
        static final long DEFAULT_EVICTION_INTERVAL_SECS = 60;
        static final int DEFAULT_DAILY_CLEANUP_HOUR_UTC = -1;
        static final long DEFAULT_ROUTE_TTL_SECS = 0;

        Cache {
            Objects.requireNonNull(policy, "cache.policy");
            policySettings = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(policySettings));
            Ranges.check("cache.max_tree_size", maxTreeSize, 1, Long.MAX_VALUE);
            Ranges.check("cache.block_chars", blockChars, 1, 65536);
            Ranges.check("cache.eviction_interval_secs", evictionIntervalSecs, 0, Integer.MAX_VALUE);
            Ranges.check("cache.daily_cleanup_hour_utc", dailyCleanupHourUtc, -1, 23);
            Ranges.check("cache.route_ttl_secs", routeTtlSecs, 0, Integer.MAX_VALUE);
        }

        static Cache defaults() {
            return new Cache(DEFAULT_POLICY, Map.of(), DEFAULT_MAX_TREE_SIZE, DEFAULT_BLOCK_CHARS,
                    DEFAULT_EVICTION_INTERVAL_SECS, DEFAULT_DAILY_CLEANUP_HOUR_UTC, DEFAULT_ROUTE_TTL_SECS);
        }
    }

    /** Section {@code health}. */
    record Health(String endpoint, int intervalSecs, int timeoutSecs, int failureThreshold, int successThreshold) {
        static final String DEFAULT_ENDPOINT = "/health";

        Health {
            Objects.requireNonNull(endpoint, "health.endpoint");
            if (!endpoint.startsWith("/")) {
                throw new IllegalArgumentException("health.endpoint must start with '/', was " + endpoint);
            }
            Ranges.check("health.interval_secs", intervalSecs, 1, 86_400);
            Ranges.check("health.timeout_secs", timeoutSecs, 1, 3_600);
            Ranges.check("health.failure_threshold", failureThreshold, 1, 1_000);
            Ranges.check("health.success_threshold", successThreshold, 1, 1_000);
        }

        static Health defaults() {
            return new Health(DEFAULT_ENDPOINT, 10, 5, HealthConfig.DEFAULTS.failureThreshold(),
                    HealthConfig.DEFAULTS.successThreshold());
        }

        HealthConfig thresholds() {
            return new HealthConfig(failureThreshold, successThreshold);
        }
    }

    /** Section {@code circuit_breaker}. */
    record Circuit(int failureThreshold, int successThreshold, int timeoutSecs, int halfOpenMaxRequests) {
        Circuit {
            Ranges.check("circuit_breaker.failure_threshold", failureThreshold, 1, 1_000_000);
            Ranges.check("circuit_breaker.success_threshold", successThreshold, 1, 1_000_000);
            Ranges.check("circuit_breaker.timeout_secs", timeoutSecs, 1, 86_400);
            Ranges.check("circuit_breaker.half_open_max_requests", halfOpenMaxRequests, 1, 1_000_000);
        }

        static Circuit defaults() {
            CircuitBreakerConfig d = CircuitBreakerConfig.DEFAULTS;
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

        Proxy {
            Ranges.check("proxy.max_retries", maxRetries, 0, 10);
            Ranges.check("proxy.initial_backoff_ms", initialBackoffMs, 0, 60_000);
            Ranges.check("proxy.backoff_multiplier", backoffMultiplier, 1.0, 10.0);
            Ranges.check("proxy.jitter_factor", jitterFactor, 0.0, 1.0);
            retryableStatuses = List.copyOf(retryableStatuses);
            for (int s : retryableStatuses) {
                Ranges.check("proxy.retryable_statuses[]", s, 400, 599);
            }
            Ranges.check("proxy.connect_timeout_secs", connectTimeoutSecs, 1, 3_600);
            Ranges.check("proxy.request_timeout_secs", requestTimeoutSecs, 1, 86_400);
            if (remoteMediaUrlPolicy != null) {
                Ranges.check("proxy.remote_media_url_policy", remoteMediaUrlPolicy, 400, 599);
            }
            Ranges.check("proxy.max_body_bytes", maxBodyBytes, 1, MAX_BODY_LIMIT);
        }

        static Proxy defaults() {
            return new Proxy(2, 100, 2.0, 0.2, List.of(502, 503, 504), 2, 600, false, null, 32 * 1024 * 1024,
                    true);
        }
    }

    /** Range checks whose messages name the key and the allowed range. */
    static final class Ranges {
        private Ranges() {
        }

        static void check(String key, long value, long min, long max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(key + " must be in [" + min + ", " + max + "], was " + value);
            }
        }

        static void check(String key, double value, double min, double max) {
            if (!(value >= min && value <= max)) {
                throw new IllegalArgumentException(key + " must be in [" + min + ", " + max + "], was " + value);
            }
        }
    }
}
