package dev.cart.proxy.observe;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.TreeStats;
import dev.cart.policy.PredictedTtftPolicy;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.upstream.HealthChecker;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The gauges (and counters read at scrape time) over live state: the tree, the replica set, requests in
 * progress, dropped decision lines, and per replica its load, health, circuit state and {@code predicted_ttft}'s
 * view of it. Each reads through a supplier of the current {@link Routing} when scraped, so it follows a reload;
 * the per-replica gauges are registered for the replicas of the current set and removed when a reload drops a
 * replica ({@link #syncReplicas}).
 *
 * <p>Concurrency: the gauges are read by the scraping thread; {@link #syncReplicas} is called under
 * {@link ProxyMetrics}'s lock, one reload at a time.
 */
final class LiveGauges {

    private final PrometheusMeterRegistry registry;
    private final Supplier<Routing> routing;
    /** The per-replica gauges by name and tags. */
    private final Map<String, Meter> replicaGauges = new ConcurrentHashMap<>();

    LiveGauges(PrometheusMeterRegistry registry, Supplier<Routing> routing, int blockChars) {
        this.registry = registry;
        this.routing = routing;
        treeGauge(
                "cart.tree.blocks",
                "Blocks stored in the prefix tree (the unit cache.max_tree_size bounds)",
                s -> s.size());
        treeGauge(
                "cart.tree.characters",
                "Prompt characters the tree's blocks cover (blocks x block_chars)",
                s -> (double) s.size() * blockChars);
        treeGauge("cart.tree.nodes", "Nodes of the prefix tree", TreeStats::nodes);
        treeGauge("cart.tree.entries", "(node, replica) routes the tree remembers", TreeStats::entries);
        Gauge.builder("cart.tree.max.blocks", routing, r -> r.get().router.maxTreeSize())
                .description("Size cap of the tree (cache.max_tree_size)")
                .register(registry);
        Gauge.builder("cart.replicas", routing, r -> r.get().replicas.replicas().size())
                .description("Configured replicas")
                .register(registry);
        Gauge.builder("cart.replicas.healthy", routing, r -> r.get().health.count(HealthChecker.State.HEALTHY))
                .description("Replicas whose health checks pass (a replica not yet probed is not counted)")
                .register(registry);
        FunctionCounter.builder("cart.decision.lines.dropped", routing, r -> DecisionLog.droppedLines())
                .description("Decision lines dropped because the queue to their writer thread was full")
                .register(registry);
    }

    private void treeGauge(String name, String help, ToDoubleFunction<TreeStats> f) {
        Gauge.builder(name, routing, r -> f.applyAsDouble(r.get().router.treeStats()))
                .description(help)
                .register(registry);
    }

    /** Registers the gauge of requests being handled (those counted against the concurrency limit). */
    void inProgress(AtomicInteger counter) {
        Gauge.builder("cart.requests.in.progress", counter, AtomicInteger::get)
                .description("Requests being handled now (counted against server.max_concurrent_requests)")
                .register(registry);
    }

    /** Registers the per-replica gauges of {@code set}'s replicas and removes those of replicas it no longer has. */
    void syncReplicas(ManagedReplicaSet set) {
        Set<String> ids = new java.util.HashSet<>();
        for (ManagedReplicaSet.Member m : set.replicas()) {
            ids.add(m.id());
            replicaGauge("cart.replica.in.flight", "Requests in flight on the replica", m.id(), x -> x.inFlight());
            replicaGauge("cart.replica.max.load", "Admission cap of the replica (max_load)", m.id(), x -> x.maxLoad());
            replicaGauges.computeIfAbsent(
                    cacheKey("cart.replica.healthy", m.id()),
                    k -> Gauge.builder("cart.replica.healthy", routing, r -> replicaHealthy(r.get(), m.id()))
                            .description("1 when the replica's health checks pass, else 0 (0 until its first probe)")
                            .tags("replica", m.id())
                            .register(registry));
            if (routing.get().router.policy() instanceof PredictedTtftPolicy) {
                ttftGauges(m.id());
            }
            for (CircuitBreaker.State s : CircuitBreaker.State.values()) {
                String key = cacheKey("cart.replica.circuit.state", m.id(), s.label());
                replicaGauges.computeIfAbsent(
                        key,
                        k -> Gauge.builder(
                                        "cart.replica.circuit.state",
                                        routing,
                                        r -> member(r, m.id(), x -> x.circuitState() == s ? 1 : 0))
                                .description("1 for the replica's current circuit state, 0 for the others")
                                .tags("replica", m.id(), "state", s.label())
                                .register(registry));
            }
        }
        List<String> gone = new ArrayList<>();
        for (Map.Entry<String, Meter> e : replicaGauges.entrySet()) {
            String replica = e.getValue().getId().getTag("replica");
            if (!ids.contains(replica)) {
                registry.remove(e.getValue());
                gone.add(e.getKey());
            }
        }
        gone.forEach(replicaGauges::remove);
    }

    /**
     * {@code predicted_ttft}'s view of a replica: its recent estimate error (p50 and p90 of |predicted -
     * measured| / measured TTFT, NaN until it is warmed up) and its learned prefill speed.
     */
    private void ttftGauges(String id) {
        ttftGauge("cart.replica.ttft.estimate.error.p50", "median", id, PredictedTtftPolicy.ReplicaStats::errorP50);
        ttftGauge(
                "cart.replica.ttft.estimate.error.p90",
                "90th percentile",
                id,
                PredictedTtftPolicy.ReplicaStats::errorP90);
        replicaGauges.computeIfAbsent(
                cacheKey("cart.replica.ttft.prefill.seconds.per.1k.units", id),
                k -> Gauge.builder(
                                "cart.replica.ttft.prefill.seconds.per.1k.units",
                                routing,
                                r -> ttftStat(r, id, st -> st.speeds().prefillMillisPerKiloUnit() / 1000.0))
                        .description("predicted_ttft: the replica's learned prefill time per 1,000 key units")
                        .tags("replica", id)
                        .register(registry));
    }

    private void ttftGauge(String name, String which, String id, ToDoubleFunction<PredictedTtftPolicy.ReplicaStats> f) {
        replicaGauges.computeIfAbsent(
                cacheKey(name, id),
                k -> Gauge.builder(name, routing, r -> ttftStat(r, id, f))
                        .description("predicted_ttft: " + which + " relative error of its TTFT estimate for the "
                                + "replica, |predicted - measured| / measured, over its recent first tokens")
                        .tags("replica", id)
                        .register(registry));
    }

    private static double ttftStat(
            Supplier<Routing> r, String id, ToDoubleFunction<PredictedTtftPolicy.ReplicaStats> f) {
        if (!(r.get().router.policy() instanceof PredictedTtftPolicy p)) {
            return Double.NaN;
        }
        PredictedTtftPolicy.ReplicaStats s = p.replicaStats(id);
        return s == null ? Double.NaN : f.applyAsDouble(s);
    }

    private void replicaGauge(String name, String help, String id, ToDoubleFunction<ManagedReplicaSet.Member> f) {
        replicaGauges.computeIfAbsent(
                cacheKey(name, id),
                k -> Gauge.builder(name, routing, r -> member(r, id, f::applyAsDouble))
                        .description(help)
                        .tags("replica", id)
                        .register(registry));
    }

    private static double replicaHealthy(Routing r, String id) {
        return r.replicas
                .member(id)
                .map(m -> r.health.state(m) == HealthChecker.State.HEALTHY ? 1.0 : 0.0)
                .orElse(Double.NaN);
    }

    private static double member(Supplier<Routing> r, String id, Function<ManagedReplicaSet.Member, Number> f) {
        return r.get().replicas.member(id).map(m -> f.apply(m).doubleValue()).orElse(Double.NaN);
    }

    private static String cacheKey(String name, String... tags) {
        if (tags.length == 0) {
            return name;
        }
        StringBuilder b = new StringBuilder(name);
        for (String t : tags) {
            b.append('\u0000').append(t);
        }
        return b.toString();
    }
}
