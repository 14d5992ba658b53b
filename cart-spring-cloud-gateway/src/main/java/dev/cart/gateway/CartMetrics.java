package dev.cart.gateway;

import dev.cart.core.CacheFeedback;
import dev.cart.core.EvictionReport;
import dev.cart.core.LeaseCompletion;
import dev.cart.core.RouteDecision;
import dev.cart.core.RoutingListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * CART's metrics in the gateway's Micrometer registry (so in {@code /actuator/prometheus}), fed by the router's
 * {@link RoutingListener} for one service. The names are the standalone proxy's where the meaning is the same,
 * each with a {@code service} tag; the list and what to watch is in the module README.
 *
 * <p>Meters are created on first use and cached by their tags, so an event costs a map lookup and an increment.
 * Thread-safe; called on routing threads, so it does nothing slow.
 */
final class CartMetrics implements RoutingListener {

    private final MeterRegistry registry;
    private final String service;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Timer decisionDuration;

    CartMetrics(MeterRegistry registry, String service) {
        this.registry = registry;
        this.service = service;
        this.decisionDuration = Timer.builder("cart.decision.duration")
                .description("Time the router took to choose a replica")
                .tag("service", service)
                .register(registry);
    }

    /** Gauges read from the service's routing state: in flight, replicas, tree size. */
    void bind(ServiceRouting routing) {
        registry.gauge(
                "cart.requests.in.flight",
                io.micrometer.core.instrument.Tags.of("service", service),
                routing,
                r -> r.replicas().inFlight());
        registry.gauge(
                "cart.replicas",
                io.micrometer.core.instrument.Tags.of("service", service),
                routing,
                r -> r.replicas().size());
        registry.gauge(
                "cart.tree.blocks",
                io.micrometer.core.instrument.Tags.of("service", service),
                routing,
                r -> r.router().treeStats().size());
    }

    /** A request answered by the gateway filter without reaching a replica, by cause. */
    static void rejected(MeterRegistry registry, String service, String cause) {
        registry.counter("cart.requests.rejected", "service", service, "cause", cause)
                .increment();
    }

    @Override
    public void onDecision(RouteDecision d) {
        String replica = d.routed() ? d.replica().id() : "none";
        counter(
                        "cart.decisions",
                        "Routing decisions by reason and chosen replica",
                        "reason",
                        d.reason().code(),
                        "replica",
                        replica)
                .increment();
        decisionDuration.record(d.decisionNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void onLeaseCompleted(LeaseCompletion c) {
        counter(
                        "cart.upstream.requests",
                                "Requests ended on a replica, by outcome (success, failure, cancelled)",
                        "replica", c.decision().replica().id(),
                        "outcome", c.outcome().name().toLowerCase(Locale.ROOT))
                .increment();
    }

    @Override
    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
        String replica = d.replica() == null ? "none" : d.replica().id();
        counter(
                        "cart.cache.predicted.tokens",
                        "Prompt tokens the router predicted the replica had cached",
                        "replica",
                        replica)
                .increment(Math.max(0, f.predictedTokens()));
        counter(
                        "cart.cache.delivered.tokens",
                        "Prompt tokens the replica reported as served from its cache",
                        "replica",
                        replica)
                .increment(Math.max(0, f.deliveredTokens()));
        counter(
                        "cart.cache.prompt.tokens",
                        "Prompt tokens of the requests whose cache usage was reported",
                        "replica",
                        replica)
                .increment(Math.max(0, f.promptTokens()));
        counter(
                        "cart.cache.feedback",
                        "Usage reports compared with the prediction, by verdict",
                        "replica",
                        replica,
                        "verdict",
                        f.stale() ? "stale" : "ok")
                .increment();
    }

    @Override
    public void onInsertSkipped() {
        counter("cart.tree.inserts.skipped", "Prefixes not recorded because an eviction pass held the tree")
                .increment();
    }

    @Override
    public void onEviction(EvictionReport r) {
        if (r.evicted() > 0) {
            counter("cart.tree.evicted.entries", "Tree entries evicted, by cause", "cause", "lru")
                    .increment(r.evicted());
        }
        if (r.expired() > 0) {
            counter("cart.tree.evicted.entries", "Tree entries evicted, by cause", "cause", "ttl")
                    .increment(r.expired());
        }
    }

    @Override
    public void onReset() {
        counter("cart.tree.resets", "Whole-tree resets (daily cleanup)").increment();
    }

    private Counter counter(String name, String help, String... tags) {
        String key = name + '|' + String.join("|", tags);
        Counter c = counters.get(key);
        if (c == null) {
            c = counters.computeIfAbsent(
                    key,
                    k -> Counter.builder(name)
                            .description(help)
                            .tag("service", service)
                            .tags(tags)
                            .register(registry));
        }
        return c;
    }
}
