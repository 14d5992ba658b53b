package dev.cart.proxy.config;

import java.util.Objects;

/**
 * Section {@code cluster}: several proxies in front of one pool share routes (a Redis Stream) and load (a
 * Redis pub/sub channel, published on change) through the {@code cart-redis} module. Off (the default) while
 * {@code redis_url} is absent. The URL may carry a password: {@link #toString()} leaves it out, and
 * nothing logs it.
 *
 * @param redisUrl        {@code redis://[:password@]host[:port][/db]} or {@code rediss://} (TLS); null: off
 * @param stream          the pool's stream, and the prefix of its load keys; the same on every instance
 * @param instanceId      this instance's id; null: {@code host:pid}
 * @param maxLen          the stream's approximate cap in entries (each up to {@code batchEvents} events)
 * @param batchEvents     most events per stream entry
 * @param batchDelayMs    how long a batch waits for more events after its first
 * @param bufferEvents    events kept while Redis is slow or away (the oldest dropped beyond)
 * @param loadIntervalMs  how often this instance publishes its load when it has not changed (a heartbeat)
 * @param loadTtlMs       how long an instance's load counts after it was last heard
 * @param timeoutMs       timeout of one Redis command and of a connection attempt
 */
public record ClusterConfig(
        String redisUrl,
        String stream,
        String instanceId,
        long maxLen,
        int batchEvents,
        int batchDelayMs,
        int bufferEvents,
        int loadIntervalMs,
        int loadTtlMs,
        int timeoutMs) {

    static final ProxyConfig.IntRange MAX_LEN = new ProxyConfig.IntRange("cluster.max_len", 1, Integer.MAX_VALUE);
    static final ProxyConfig.IntRange BATCH_EVENTS = new ProxyConfig.IntRange("cluster.batch_events", 1, 256);
    static final ProxyConfig.IntRange BATCH_DELAY_MS = new ProxyConfig.IntRange("cluster.batch_delay_ms", 0, 5);
    static final ProxyConfig.IntRange BUFFER_EVENTS =
            new ProxyConfig.IntRange("cluster.buffer_events", 1, 16 * 1024 * 1024);
    static final ProxyConfig.IntRange LOAD_INTERVAL_MS =
            new ProxyConfig.IntRange("cluster.load_interval_ms", 10, 60_000);
    static final ProxyConfig.IntRange LOAD_TTL_MS = new ProxyConfig.IntRange("cluster.load_ttl_ms", 20, 600_000);
    static final ProxyConfig.IntRange TIMEOUT_MS = new ProxyConfig.IntRange("cluster.timeout_ms", 300, 60_000);

    static final ClusterConfig OFF = builder().build();

    public ClusterConfig {
        Objects.requireNonNull(stream, "cluster.stream");
        if (stream.isBlank()) {
            throw new IllegalArgumentException("cluster.stream: must not be empty");
        }
        if (instanceId != null && instanceId.isBlank()) {
            throw new IllegalArgumentException("cluster.instance_id: must not be empty");
        }
        MAX_LEN.check(maxLen);
        BATCH_EVENTS.check(batchEvents);
        BATCH_DELAY_MS.check(batchDelayMs);
        BUFFER_EVENTS.check(bufferEvents);
        LOAD_INTERVAL_MS.check(loadIntervalMs);
        LOAD_TTL_MS.check(loadTtlMs);
        TIMEOUT_MS.check(timeoutMs);
        if (loadTtlMs < 2L * loadIntervalMs) {
            throw new IllegalArgumentException("cluster.load_ttl_ms: must be at least twice cluster.load_interval_ms");
        }
    }

    /** True when a Redis URL is configured. */
    public boolean on() {
        return redisUrl != null;
    }

    /**
     * What {@code --config-check} says of the cluster: the stream, where Redis is ({@code host:port}, TLS
     * or not; never the password) and the instance id; "off" without a URL.
     */
    public String describe() {
        if (!on()) {
            return "off";
        }
        return "stream " + stream + " at " + dev.cart.redis.RedisRouteSync.describeUri(redisUrl) + ", instance id "
                + (instanceId == null ? "host:pid (default)" : instanceId);
    }

    /** Never the URL (it may carry a password): whether one is set, and the other settings. */
    @Override
    public String toString() {
        return "ClusterConfig[" + (on() ? "redis_url=<set>" : "off") + " stream=" + stream + " instance_id="
                + (instanceId == null ? "<host:pid>" : instanceId) + " max_len=" + maxLen + " batch_events="
                + batchEvents + " batch_delay_ms=" + batchDelayMs + " buffer_events=" + bufferEvents
                + " load_interval_ms=" + loadIntervalMs + " load_ttl_ms=" + loadTtlMs + " timeout_ms=" + timeoutMs
                + "]";
    }

    static Builder builder() {
        return new Builder();
    }

    /** Named setters from the defaults (see docs/configuration.md). */
    static final class Builder {
        private String redisUrl;
        private String stream = "cart:routes";
        private String instanceId;
        private long maxLen = 100_000;
        private int batchEvents = 256;
        private int batchDelayMs = 5;
        private int bufferEvents = 65_536;
        private int loadIntervalMs = 100;
        private int loadTtlMs = 1_000;
        private int timeoutMs = 2_000;

        Builder redisUrl(String v) {
            this.redisUrl = v;
            return this;
        }

        Builder stream(String v) {
            this.stream = v;
            return this;
        }

        Builder instanceId(String v) {
            this.instanceId = v;
            return this;
        }

        Builder maxLen(long v) {
            this.maxLen = v;
            return this;
        }

        Builder batchEvents(int v) {
            this.batchEvents = v;
            return this;
        }

        Builder batchDelayMs(int v) {
            this.batchDelayMs = v;
            return this;
        }

        Builder bufferEvents(int v) {
            this.bufferEvents = v;
            return this;
        }

        Builder loadIntervalMs(int v) {
            this.loadIntervalMs = v;
            return this;
        }

        Builder loadTtlMs(int v) {
            this.loadTtlMs = v;
            return this;
        }

        Builder timeoutMs(int v) {
            this.timeoutMs = v;
            return this;
        }

        ClusterConfig build() {
            return new ClusterConfig(
                    redisUrl,
                    stream,
                    instanceId,
                    maxLen,
                    batchEvents,
                    batchDelayMs,
                    bufferEvents,
                    loadIntervalMs,
                    loadTtlMs,
                    timeoutMs);
        }
    }
}
