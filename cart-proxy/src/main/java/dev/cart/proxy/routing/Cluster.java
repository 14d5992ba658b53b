package dev.cart.proxy.routing;

import dev.cart.core.Router;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.sync.RemoteLoad;
import dev.cart.core.sync.RouteSync;
import dev.cart.proxy.config.ClusterConfig;
import dev.cart.redis.RedisLoadView;
import dev.cart.redis.RedisRouteSync;
import dev.cart.redis.SyncLag;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * This proxy's part in a cluster of proxies in front of one pool ({@code cluster} section): the route
 * sync (a Redis Stream) and the shared load view (Redis pub/sub, on change) of {@code cart-redis}, wired to
 * whichever router is current (a reload replaces the router and keeps its tree; remote events go to the
 * current one, and the load published is the current replica set's). Off, it shares nothing and costs
 * nothing. Nothing here runs on the request path but in-memory reads; Redis work happens on the sync's
 * and the view's own threads, which start whether or not Redis answers.
 */
public final class Cluster implements AutoCloseable {

    static final Cluster OFF = new Cluster(null, null);

    private final RedisRouteSync sync;
    private final RedisLoadView load;

    private Cluster(RedisRouteSync sync, RedisLoadView load) {
        this.sync = sync;
        this.load = load;
    }

    /**
     * The cluster membership {@code config} asks for, over the replica set {@code replicas} reads (the
     * current one); {@link #OFF} without a Redis URL. Nothing connects until {@link #start}.
     */
    public static Cluster of(ClusterConfig config, ReplicaSet replicas) {
        if (!config.on()) {
            return OFF;
        }
        Duration timeout = Duration.ofMillis(config.timeoutMs());
        RedisRouteSync.Builder sb = RedisRouteSync.builder().uri(config.redisUrl()).stream(config.stream())
                .maxLen(config.maxLen())
                .batchEvents(config.batchEvents())
                .batchDelay(Duration.ofMillis(config.batchDelayMs()))
                .bufferEvents(config.bufferEvents())
                .commandTimeout(timeout);
        RedisLoadView.Builder lb = RedisLoadView.builder()
                .uri(config.redisUrl())
                .pool(config.stream())
                .replicas(replicas)
                .interval(Duration.ofMillis(config.loadIntervalMs()))
                .ttl(Duration.ofMillis(config.loadTtlMs()));
        if (config.instanceId() != null) {
            sb.instanceId(config.instanceId());
            lb.instanceId(config.instanceId());
        }
        return new Cluster(sb.build(), lb.build());
    }

    public boolean on() {
        return sync != null;
    }

    /** The route sync (null when off): its counters, and a way in for tests to mark the stream. */
    public RedisRouteSync sync() {
        return sync;
    }

    /** What a router of this proxy shares: its routes, and the load the other instances report. */
    Router.Builder configure(Router.Builder rb) {
        return on() ? rb.sync(sync).remoteLoad(load) : rb.sync(RouteSync.NONE).remoteLoad(RemoteLoad.NONE);
    }

    /** Starts tailing (other instances' events go to the router {@code current} returns) and the load view. */
    public void start(Supplier<Router> current) {
        if (on()) {
            sync.start(e -> current.get().applyRemote(e));
            load.start();
        }
    }

    /** The stream this instance writes and reads, its origin id and where Redis is: for the startup log. */
    public String describe() {
        return on() ? "stream " + sync.stream() + " as " + sync.originId() : "off";
    }

    /** Requests the other instances have in flight on the replica with this id (0 when off). */
    public long remoteInFlight(String replicaId) {
        return on() ? load.remoteInFlight(replicaId) : 0;
    }

    /** Registers the sync's metrics ({@code cart.cluster.*}); nothing when off. */
    public void bindTo(MeterRegistry registry) {
        if (!on()) {
            return;
        }
        counter(
                registry,
                "cart.cluster.events.published",
                "Route events this instance wrote to the stream",
                s -> s.stats().published());
        counter(
                registry,
                "cart.cluster.events.applied",
                "Other instances' route events handed to the router",
                s -> s.stats().applied());
        counter(
                registry,
                "cart.cluster.events.dropped",
                "Route events dropped because the buffer was full while Redis was slow or away (oldest first)",
                s -> s.stats().dropped());
        counter(
                registry,
                "cart.cluster.entries.malformed",
                "Stream entries skipped because they did not decode (garbage, another version)",
                s -> s.stats().malformed());
        counter(
                registry,
                "cart.cluster.entries.lost",
                "Other instances' stream entries missing when read (trimmed past this instance, or lost by Redis)",
                s -> s.stats().lostEntries());
        counter(
                registry,
                "cart.cluster.events.unresolved",
                "Other instances' route events not applied because they extend a key in an entry this instance"
                        + " never read (it started after that entry was trimmed, or the entry was lost)",
                s -> s.stats().unresolved());
        counter(
                registry,
                "cart.cluster.sync.lag.events",
                "Events whose sync lag was measured (applied while tailing)",
                s -> s.lagTotal().count());
        counter(
                registry,
                "cart.cluster.sync.lag.measured.seconds",
                "Sum of the sync lags measured, in seconds",
                s -> s.lagTotal().sumMillis() / 1000.0);
        gauge(
                registry,
                "cart.cluster.events.buffered",
                "Route events waiting to be written",
                s -> s.stats().buffered());
        gauge(
                registry,
                "cart.cluster.connected",
                "1 when the last Redis call of the sync's publisher and tailer succeeded",
                s -> s.stats().connected() ? 1 : 0);
        gauge(
                registry,
                "cart.cluster.peers",
                "Other instances whose stream entries were read in the last minute",
                s -> s.peers());
        for (int p : new int[] {50, 99}) {
            Gauge.builder("cart.cluster.sync.lag.p" + p + ".seconds", sync, s -> quantileSeconds(s.lag(), p / 100.0))
                    .description("Sync lag (a peer's router publishing an event to its apply here) at the " + p
                            + "th percentile over the last minute, as the upper bound of its histogram bucket; -1"
                            + " when none was measured in that minute")
                    .register(registry);
        }
        Gauge.builder("cart.cluster.load.peers", load, RedisLoadView::peers)
                .description("Other live instances whose load this instance counts")
                .register(registry);
    }

    private static double quantileSeconds(SyncLag.Snapshot lag, double q) {
        long ms = lag.quantileMillis(q);
        return ms < 0 ? -1 : ms == Long.MAX_VALUE ? Double.POSITIVE_INFINITY : ms / 1000.0;
    }

    private void counter(MeterRegistry r, String name, String help, ToDoubleFunction<RedisRouteSync> f) {
        FunctionCounter.builder(name, sync, f).description(help).register(r);
    }

    private void gauge(MeterRegistry r, String name, String help, ToDoubleFunction<RedisRouteSync> f) {
        Gauge.builder(name, sync, f).description(help).register(r);
    }

    /** Stops the threads: the sync writes what it buffered if Redis takes it within a second. */
    @Override
    public void close() {
        if (on()) {
            load.close();
            sync.close();
        }
    }
}
