package dev.cart.gateway;

import dev.cart.core.CacheFeedback;
import dev.cart.core.EvictionReport;
import dev.cart.core.Outcome;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * CART's metrics in the gateway's Micrometer registry (so in {@code /actuator/prometheus}), fed by the router's
 * {@link RoutingListener} for one service. The names are the standalone proxy's where the meaning is the same,
 * each with a {@code service} tag; the list and what to watch is in the module README.
 *
 * <p>Per-request events (a decision, a lease's end, a usage report) find their meters without building a key or
 * looking a meter up by tags: the meters of each replica sit in one {@link ReplicaMeters} found by the replica's
 * id, each reason's and outcome's counter in an array slot by the enum's ordinal, registered on first use (so
 * only what happened is exported, as before). The decision timer keeps Micrometer's defaults: no percentile
 * histogram unless the application configures one ({@code management.metrics.distribution.*}).
 *
 * <p>Thread-safe; called on routing threads, so it does nothing slow. Two threads registering the same meter at
 * once get the same meter from the registry.
 */
final class CartMetrics implements RoutingListener {

    /**
     * At DEBUG, one line per decision and per usage verdict: reason, replica, lengths in key units, and the key's
     * 21st and 41st block hashes (which tell requests about the same document apart), never prompt text.
     */
    private static final Logger DEBUG_LOG = LoggerFactory.getLogger("dev.cart.gateway.decisions");

    private static final String NONE = "none";
    private static final Reason[] REASONS = Reason.values();
    private static final Outcome[] OUTCOMES = Outcome.values();
    /** The {@code verdict} tag of {@code cart_cache_feedback_total}, by index. */
    private static final String[] VERDICTS = {"ok", "stale", "inconclusive", "cache_unreported"};

    private static final int OK = 0;
    private static final int STALE = 1;
    private static final int INCONCLUSIVE = 2;
    private static final int CACHE_UNREPORTED = 3;

    private final MeterRegistry registry;
    private final String service;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, ReplicaMeters> replicas = new ConcurrentHashMap<>();
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
        replica(id(d.replica())).decision(d.reason()).increment();
        if (DEBUG_LOG.isDebugEnabled()) {
            PromptKey k = d.key();
            int n = k.blockCount();
            DEBUG_LOG.debug(
                    "decision t={} took={} thread={} reason={} replica={} matched={} length={} b20={} b40={}",
                    System.nanoTime(),
                    d.decisionNanos(),
                    Thread.currentThread().getName(),
                    d.reason(),
                    id(d.replica()),
                    d.matchedLength(),
                    k.length(),
                    n > 20 ? Long.toHexString(k.blockHash(20)) : "-",
                    n > 40 ? Long.toHexString(k.blockHash(40)) : "-");
        }
        decisionDuration.record(d.decisionNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void onLeaseCompleted(LeaseCompletion c) {
        replica(id(c.decision().replica())).outcome(c.outcome()).increment();
    }

    @Override
    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
        ReplicaMeters m = replica(id(d.replica()));
        m.predicted().increment(Math.max(0, f.predictedTokens()));
        m.delivered().increment(Math.max(0, f.deliveredTokens()));
        m.prompt().increment(Math.max(0, f.promptTokens()));
        m.verdict(
                        f.stale()
                                ? STALE
                                : f.inconclusive()
                                        ? INCONCLUSIVE
                                        : f.verdict() == CacheFeedback.Verdict.CACHE_UNREPORTED ? CACHE_UNREPORTED : OK)
                .increment();
        if (DEBUG_LOG.isDebugEnabled()) {
            PromptKey k = d.key();
            int n = k.blockCount();
            DEBUG_LOG.debug(
                    "feedback t={} reason={} replica={} matched={} length={} predicted={} delivered={} prompt={} stale={} inconclusive={} b20={} b40={}",
                    System.nanoTime(),
                    d.reason(),
                    id(d.replica()),
                    d.matchedLength(),
                    k.length(),
                    f.predictedTokens(),
                    f.deliveredTokens(),
                    f.promptTokens(),
                    f.stale(),
                    f.inconclusive(),
                    n > 20 ? Long.toHexString(k.blockHash(20)) : "-",
                    n > 40 ? Long.toHexString(k.blockHash(40)) : "-");
        }
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

    /** A replica's id as a tag value; {@code none} for a decision that routed nowhere. */
    private static String id(@Nullable Replica replica) {
        return replica == null ? NONE : replica.id();
    }

    private ReplicaMeters replica(String id) {
        ReplicaMeters m = replicas.get(id);
        return m != null ? m : replicas.computeIfAbsent(id, ReplicaMeters::new);
    }

    /** For the events that are not per request: a counter found by its name and tags. */
    private Counter counter(String name, String help, String... tags) {
        String key = name + '|' + String.join("|", tags);
        Counter c = counters.get(key);
        if (c == null) {
            c = counters.computeIfAbsent(key, k -> register(name, help, tags));
        }
        return c;
    }

    private Counter register(String name, String help, String... tags) {
        return Counter.builder(name)
                .description(help)
                .tag("service", service)
                .tags(tags)
                .register(registry);
    }

    /** One replica's per-request meters; those for a reason, an outcome or a verdict registered on first use. */
    private final class ReplicaMeters {
        private final String replica;
        private final AtomicReferenceArray<Counter> decisions = new AtomicReferenceArray<>(REASONS.length);
        private final AtomicReferenceArray<Counter> outcomes = new AtomicReferenceArray<>(OUTCOMES.length);
        private volatile @Nullable Counter predicted;
        private volatile @Nullable Counter delivered;
        private volatile @Nullable Counter prompt;
        private final AtomicReferenceArray<Counter> verdicts = new AtomicReferenceArray<>(VERDICTS.length);

        ReplicaMeters(String replica) {
            this.replica = replica;
        }

        Counter predicted() {
            Counter c = predicted;
            if (c == null) {
                predicted = c = register(
                        "cart.cache.predicted.tokens",
                        "Prompt tokens the router predicted the replica had cached",
                        "replica",
                        replica);
            }
            return c;
        }

        Counter delivered() {
            Counter c = delivered;
            if (c == null) {
                delivered = c = register(
                        "cart.cache.delivered.tokens",
                        "Prompt tokens the replica reported as served from its cache",
                        "replica",
                        replica);
            }
            return c;
        }

        Counter prompt() {
            Counter c = prompt;
            if (c == null) {
                prompt = c = register(
                        "cart.cache.prompt.tokens",
                        "Prompt tokens of the requests whose cache usage was reported",
                        "replica",
                        replica);
            }
            return c;
        }

        Counter verdict(int verdict) {
            Counter c = verdicts.get(verdict);
            if (c == null) {
                c = register(
                        "cart.cache.feedback",
                        "Usage reports compared with the prediction, by verdict",
                        "replica",
                        replica,
                        "verdict",
                        VERDICTS[verdict]);
                verdicts.set(verdict, c);
            }
            return c;
        }

        Counter decision(Reason r) {
            Counter c = decisions.get(r.ordinal());
            if (c == null) {
                c = register(
                        "cart.decisions",
                        "Routing decisions by reason and chosen replica",
                        "reason",
                        r.code(),
                        "replica",
                        replica);
                decisions.set(r.ordinal(), c);
            }
            return c;
        }

        Counter outcome(Outcome o) {
            Counter c = outcomes.get(o.ordinal());
            if (c == null) {
                c = register(
                        "cart.upstream.requests",
                        "Requests ended on a replica, by outcome (success, failure, cancelled)",
                        "replica",
                        replica,
                        "outcome",
                        o.name().toLowerCase(Locale.ROOT));
                outcomes.set(o.ordinal(), c);
            }
            return c;
        }
    }
}
