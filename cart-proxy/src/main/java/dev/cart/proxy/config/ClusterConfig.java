package dev.cart.proxy.config;

import dev.cart.proxy.config.Constraints.Bounds;
import dev.cart.proxy.config.Constraints.NotBlank;
import dev.cart.proxy.config.Constraints.Nullable;

/**
 * Section {@code cluster}: several proxies in front of one pool share routes (a Redis Stream) and load (a
 * Redis pub/sub channel, published on change) through the {@code cart-redis} module. Off (the default) while
 * {@code redis_url} is absent. The URL may carry a password: {@link #toString()} leaves it out, and
 * nothing logs it. The Redis URL's form and {@code load_ttl_ms >= 2 * load_interval_ms} are checked by
 * {@link ConfigValidator}, with the other constraints.
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
        @Nullable String redisUrl,
        @NotBlank String stream,
        @Nullable @NotBlank String instanceId,
        @Bounds(min = 1, max = Integer.MAX_VALUE) long maxLen,
        @Bounds(min = 1, max = 256) int batchEvents,
        @Bounds(min = 0, max = 5) int batchDelayMs,
        @Bounds(min = 1, max = 16 * 1024 * 1024) int bufferEvents,
        @Bounds(min = 10, max = 60_000) int loadIntervalMs,
        @Bounds(min = 20, max = 600_000) int loadTtlMs,
        @Bounds(min = 300, max = 60_000) int timeoutMs) {

    /** The section's defaults: off. */
    static ClusterConfig off() {
        return Defaults.config().cluster();
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
}
