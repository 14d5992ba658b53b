package dev.cart.proxy.observe;

import dev.cart.core.CacheFeedback;
import dev.cart.core.CircuitBreaker;
import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.Tokenization;
import dev.cart.core.TreeStats;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.policy.PredictedTtftPolicy;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.upstream.HealthChecker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The proxy's metrics, in one Micrometer {@link PrometheusMeterRegistry} scraped by {@code GET /metrics}.
 * Every name and label is listed in {@code docs/metrics.md}; a metric added here must be added there.
 *
 * <p>How: a meter is registered on first use, so a series appears once it has counted something, except the
 * counters of events that dashboards and alerts take rates of: those with fixed label values are registered at
 * 0 in the constructor, and those per replica (retries by cause, circuit and health transitions, answers not
 * parsed) at 0 for each replica of the set when it is synced ({@link #syncReplicas}), so each reads 0 from the
 * start. The request path's meters are resolved once and
 * kept by what they are per: a {@link ReplicaMeters} per replica id (found by the id string's identity in a
 * short array, else by a map lookup) holds its counters in arrays indexed by endpoint, status class, reason
 * and outcome, so an event there costs a scan of a few references, an array read and Micrometer's own
 * update, and builds no key. Rarer events (retries, transitions, evictions) look their meter up by name
 * and tags in a {@link ConcurrentHashMap}. Gauges read live state at scrape time through a supplier of the
 * current {@link Routing}, so they follow a reload; per-replica gauges are registered for the replicas of
 * the current set and removed when a reload drops a replica (its counters stay, as Prometheus counters do,
 * until the process restarts).
 *
 * <p>Cardinality: label values come only from fixed sets (endpoints, reasons, outcomes, status classes,
 * circuit states, causes), from the configured replica URLs and from the models the replicas list (at most
 * {@link ModelLabels#MAX_LABELS}; see there). Nothing from a request body, path or
 * header ever becomes a label value: an unknown path is {@code endpoint="other"}.
 *
 * <p>Concurrency: every method is thread-safe and never throws to its caller on the request path
 * (Micrometer meters are thread-safe; the caches are concurrent maps).
 */
public final class ProxyMetrics implements AutoCloseable {

    public static final String NONE = "none";
    public static final String OTHER = "other";

    /** Endpoints that are their own label value; every other path is {@link #OTHER}. */
    public static final Set<String> ENDPOINTS = Set.of(
            "/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/models", "/health", "/workers", "/metrics");

    private static final Duration[] LATENCY_BUCKETS = {
        Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
        Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
        Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
        Duration.ofSeconds(60), Duration.ofSeconds(120), Duration.ofSeconds(300), Duration.ofSeconds(600)
    };
    private static final Duration[] DECISION_BUCKETS = {
        Duration.ofNanos(1_000), Duration.ofNanos(2_500), Duration.ofNanos(5_000), Duration.ofNanos(10_000),
        Duration.ofNanos(25_000), Duration.ofNanos(50_000), Duration.ofNanos(100_000), Duration.ofNanos(250_000),
        Duration.ofNanos(500_000), Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(25)
    };

    /** The endpoint labels by index ({@link #endpointIndex}): the known endpoints, then {@link #OTHER}. */
    private static final String[] ENDPOINT_LABELS = {
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/messages",
        "/v1/models",
        "/health",
        "/workers",
        "/metrics",
        OTHER
    };
    /** The status labels by index ({@link #statusIndex}): the classes 1xx to 5xx, then none and other. */
    private static final String[] STATUS_LABELS = {"1xx", "2xx", "3xx", "4xx", "5xx", NONE, OTHER};
    /** Decision reasons by index: {@link Reason}'s codes by ordinal, then {@link #PASS_THROUGH}. */
    private static final int PASS_THROUGH_INDEX = Reason.values().length;

    private static final String FEEDBACK_STALE = "stale";
    private static final String FEEDBACK_INCONCLUSIVE = "inconclusive";
    private static final String FEEDBACK_OK = "ok";
    private static final String FEEDBACK_CACHE_UNREPORTED = CacheFeedback.Verdict.CACHE_UNREPORTED.label();
    private static final double[] RATIO_BUCKETS = {0.001, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};

    public final PrometheusMeterRegistry registry;
    private final Supplier<Routing> routing;
    private final JvmGcMetrics gc;
    private final Map<MeterKey, Counter> counters = new ConcurrentHashMap<>();
    private final Map<MeterKey, Timer> timers = new ConcurrentHashMap<>();
    private final Map<String, Meter> replicaGauges = new ConcurrentHashMap<>();
    /** The request path's meters of each replica id, and of no replica ({@link #NONE}). */
    private final Map<String, ReplicaMeters> byReplica = new ConcurrentHashMap<>();
    /**
     * Some of {@link #byReplica}'s meters, found by the identity of the id string the request path passes
     * ({@link #meters}); an immutable array, replaced whole, emptied when the replica set changes.
     */
    private volatile Seen[] recent = new Seen[0];

    private static final int MAX_RECENT = 16;

    /** A replica id, as one string instance, and its meters. */
    private record Seen(String id, ReplicaMeters meters) {}

    private final ReplicaMeters noReplica = new ReplicaMeters(NONE);
    private final AtomicReferenceArray<Timer> requestDurations = new AtomicReferenceArray<>(ENDPOINT_LABELS.length);
    /** cart.model.decisions of the labels {@link #NONE} and {@link #OTHER}, by reason index. */
    private final AtomicReferenceArray<Counter> noModelDecisions = new AtomicReferenceArray<>(PASS_THROUGH_INDEX + 1);

    private final AtomicReferenceArray<Counter> otherModelDecisions =
            new AtomicReferenceArray<>(PASS_THROUGH_INDEX + 1);
    /** cart.tokenization by {@link Tokenization.Status} ordinal, the token cache's hits and misses, the tokenizer. */
    private final AtomicReferenceArray<Counter> tokenizationOutcomes =
            new AtomicReferenceArray<>(Tokenization.Status.values().length);

    private volatile Counter tokenCacheHits;
    private volatile Counter tokenCacheMisses;
    private volatile Timer tokenizerDuration;
    /** cart.learned.answers by result (a handful of constant words). */
    private final Map<String, Counter> learned = new ConcurrentHashMap<>();

    private final Timer decisionDuration;
    private final DistributionSummary matchedRatio;
    private final Timer evictionDuration;
    private final DecisionWindow window;
    private final ModelLabels modelLabels = new ModelLabels();
    private final KvMetrics kv;

    /**
     * @param routing    the current routing state (read at scrape time)
     * @param blockChars characters per tree block, for {@code cart_tree_characters}
     * @param window     recent decisions, fed here, read by {@code /workers}
     */
    public ProxyMetrics(Supplier<Routing> routing, int blockChars, DecisionWindow window) {
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        this.routing = routing;
        this.window = window;
        this.kv = new KvMetrics(registry, routing);
        new JvmMemoryMetrics().bindTo(registry);
        this.gc = new JvmGcMetrics();
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);

        decisionDuration = Timer.builder("cart.decision.duration")
                .description("Time spent choosing a replica (Router.choose)")
                .serviceLevelObjectives(DECISION_BUCKETS)
                .register(registry);
        matchedRatio = DistributionSummary.builder("cart.decision.matched.ratio")
                .description("Matched prefix length over key length, per routed decision with prompt text")
                .serviceLevelObjectives(RATIO_BUCKETS)
                .register(registry);
        evictionDuration = Timer.builder("cart.tree.eviction.duration")
                .description("Eviction passes and the time each held the tree")
                .register(registry);

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
        // the counters that must read 0 before the first event, so that rate() works from the start
        for (String cause : List.of("ttl", "lru")) {
            counter("cart.tree.evicted.entries", "Tree entries evicted, by cause", "cause", cause);
        }
        counter("cart.tree.nodes.removed", "Tree nodes detached or merged by eviction");
        counter("cart.tree.inserts.skipped", "Prefixes not recorded because an eviction pass held the tree");
        counter("cart.tree.resets", "Whole-tree resets (daily cleanup)");
        for (String r : List.of("hit", "miss")) {
            counter(
                    "cart.models.cache",
                    "GET /v1/models answers, from the cache (hit) or a replica (miss)",
                    "result",
                    r);
        }
        for (String result : RELOAD_RESULTS) {
            reloads(result);
        }
        for (String cause : REJECT_CAUSES) {
            rejections(cause);
        }
        staleConnections();
    }

    /** Precise mode's metrics ({@code cart_kv_*}): the KV-event index's listener; nothing registered without it. */
    public KvMetrics kv() {
        return kv;
    }

    /** Every {@code result} of {@code cart_reloads_total}: each reads 0 from the start. */
    static final List<String> RELOAD_RESULTS = List.of("applied", "unchanged", "rejected", "superseded");

    /** Every {@code cause} of {@code cart_requests_rejected_total}: each reads 0 from the start. */
    static final List<String> REJECT_CAUSES =
            List.of("concurrency", "buffered_bodies", "request_line", "headers", "draining");

    /** Every {@code cause} of {@code cart_retries_total}: each reads 0 for every replica from its start. */
    static final List<String> RETRY_CAUSES = List.of("connect_error", "io_error", "invalid_answer", "status");

    /** The circuit breaker's transitions ({@code from}, {@code to}): each reads 0 for every replica. */
    private static final CircuitBreaker.State[][] CIRCUIT_TRANSITIONS = {
        {CircuitBreaker.State.CLOSED, CircuitBreaker.State.OPEN},
        {CircuitBreaker.State.OPEN, CircuitBreaker.State.HALF_OPEN},
        {CircuitBreaker.State.HALF_OPEN, CircuitBreaker.State.CLOSED},
        {CircuitBreaker.State.HALF_OPEN, CircuitBreaker.State.OPEN}
    };

    /**
     * Registers at 0 the counters of {@code replica} that count its events (retries by cause, circuit and
     * health transitions, answers not parsed), so that each series exists before its first event and a
     * {@code rate()} or {@code increase()} of it reads 0 rather than nothing.
     */
    private void replicaCounters(String replica) {
        for (String cause : RETRY_CAUSES) {
            retries(replica, cause);
        }
        for (CircuitBreaker.State[] t : CIRCUIT_TRANSITIONS) {
            circuitTransitions(replica, t[0], t[1]);
        }
        healthTransitions(replica, true);
        healthTransitions(replica, false);
        parseFailures(replica);
    }

    private void treeGauge(String name, String help, ToDoubleFunction<TreeStats> f) {
        Gauge.builder(name, routing, r -> f.applyAsDouble(r.get().router.treeStats()))
                .description(help)
                .register(registry);
    }

    /** {@link Outcome}'s labels by ordinal (its name in lower case), made once rather than per request. */
    private static final String[] OUTCOME_LABELS = java.util.Arrays.stream(dev.cart.core.Outcome.values())
            .map(o -> o.name().toLowerCase(java.util.Locale.ROOT))
            .toArray(String[]::new);

    /** The outcome label of a lease's end: its name in lower case. */
    public static String outcomeLabel(dev.cart.core.Outcome o) {
        return OUTCOME_LABELS[o.ordinal()];
    }

    /** The endpoint label for a path: the path itself for the proxy's known endpoints, else "other". */
    public static String endpointLabel(String path) {
        return ENDPOINT_LABELS[endpointIndex(path)];
    }

    /** The index of {@link #endpointLabel}'s value in {@link #ENDPOINT_LABELS}. */
    private static int endpointIndex(String path) {
        // by length, then one or two comparisons: a path is a new string per request, and a switch on it would
        // hash all of it first
        int i = path == null
                ? -1
                : switch (path.length()) {
                    case 20 -> 0;
                    case 15 -> 1;
                    case 12 -> 2;
                    case 10 -> 3;
                    case 7 -> 4;
                    case 8 -> path.equals(ENDPOINT_LABELS[5]) ? 5 : 6;
                    default -> -1;
                };
        return i >= 0 && path.equals(ENDPOINT_LABELS[i]) ? i : ENDPOINT_LABELS.length - 1;
    }

    /** "2xx" ... "5xx" for a status, "none" for 0 or -1 (nothing answered). */
    public static String statusClass(int status) {
        return STATUS_LABELS[statusIndex(status)];
    }

    /** The index of {@link #statusClass}'s value in {@link #STATUS_LABELS}. */
    private static int statusIndex(int status) {
        if (status >= 100 && status <= 599) {
            return status / 100 - 1;
        }
        return status <= 0 ? STATUS_LABELS.length - 2 : STATUS_LABELS.length - 1;
    }

    /** The reason label of a decision: {@link #PASS_THROUGH} for a routed request not routed by prompt. */
    private static int reasonIndex(RouteDecision d, boolean passThrough) {
        return passThrough && d.routed() ? PASS_THROUGH_INDEX : d.reason().ordinal();
    }

    private static String reasonLabel(int index) {
        return index == PASS_THROUGH_INDEX ? PASS_THROUGH : Reason.values()[index].code();
    }

    /** The meters of {@code replica} (an id; null for none), made on first use. */
    @SuppressWarnings("ReferenceEquality") // a cache by identity; an equal id of another instance goes to the map
    private ReplicaMeters meters(String replica) {
        if (replica == null) {
            return noReplica;
        }
        // the ids of the request path are the replica set's own strings: found by reference in a short array,
        // without hashing or a map's table
        Seen[] seen = recent;
        for (Seen x : seen) {
            if (x.id == replica) {
                return x.meters;
            }
        }
        ReplicaMeters m = byReplica.get(replica);
        if (m == null) {
            m = byReplica.computeIfAbsent(replica, ReplicaMeters::new);
        }
        if (seen.length < MAX_RECENT) {
            // copy on write; two threads adding at once may lose one addition, which the next miss makes again
            Seen[] next = Arrays.copyOf(seen, seen.length + 1);
            next[seen.length] = new Seen(replica, m);
            recent = next;
        }
        return m;
    }

    /**
     * The request path's meters of one replica label, each registered on its first event (through
     * {@link #counter} and {@link #timer}, so a meter is the registry's one for its name and tags) and kept in
     * a slot. Two threads may resolve a slot at once: both get the same meter from the registry's cache, and
     * the slot's atomic write publishes it whole.
     */
    private final class ReplicaMeters {
        final String id;
        /** cart.requests by endpoint index x status index. */
        final AtomicReferenceArray<Counter> requests =
                new AtomicReferenceArray<>(ENDPOINT_LABELS.length * STATUS_LABELS.length);
        /** cart.decisions by reason index. */
        final AtomicReferenceArray<Counter> decisions = new AtomicReferenceArray<>(PASS_THROUGH_INDEX + 1);
        /** cart.upstream.requests by outcome ordinal x status index. */
        final AtomicReferenceArray<Counter> upstream =
                new AtomicReferenceArray<>(OUTCOME_LABELS.length * STATUS_LABELS.length);
        /** predicted, delivered and prompt tokens, then the verdicts stale, inconclusive, ok, cache_unreported. */
        final AtomicReferenceArray<Counter> feedback = new AtomicReferenceArray<>(7);

        /** This replica's entries of the decision window (a miss, a hit): made once, recorded per decision. */
        final DecisionWindow.Entry windowMiss;

        final DecisionWindow.Entry windowHit;

        volatile Timer upstreamDuration;
        volatile Timer firstByte;

        ReplicaMeters(String id) {
            this.id = id;
            this.windowMiss = new DecisionWindow.Entry(id, false);
            this.windowHit = new DecisionWindow.Entry(id, true);
        }

        Counter request(int endpoint, int status) {
            int i = endpoint * STATUS_LABELS.length + status;
            Counter c = requests.get(i);
            if (c == null) {
                c = counter(
                        "cart.requests",
                        "Client requests by endpoint, status class and the replica of the last attempt",
                        "endpoint",
                        ENDPOINT_LABELS[endpoint],
                        "status",
                        STATUS_LABELS[status],
                        "replica",
                        id);
                requests.set(i, c);
            }
            return c;
        }

        Counter decision(int reason) {
            Counter c = decisions.get(reason);
            if (c == null) {
                c = counter(
                        "cart.decisions",
                        "Routing decisions by reason and chosen replica",
                        "reason",
                        reasonLabel(reason),
                        "replica",
                        id);
                decisions.set(reason, c);
            }
            return c;
        }

        Counter upstream(int outcome, int status) {
            int i = outcome * STATUS_LABELS.length + status;
            Counter c = upstream.get(i);
            if (c == null) {
                c = counter(
                        "cart.upstream.requests",
                        "Upstream attempts by replica, outcome and the replica's status class",
                        "replica",
                        id,
                        "outcome",
                        OUTCOME_LABELS[outcome],
                        "status",
                        STATUS_LABELS[status]);
                upstream.set(i, c);
            }
            return c;
        }

        Timer upstreamDuration() {
            Timer t = upstreamDuration;
            if (t == null) {
                t = timer(
                        "cart.upstream.duration",
                        "Upstream attempt time, from the decision to the end of the replica's "
                                + "answer (the lease's lifetime)",
                        LATENCY_BUCKETS,
                        "replica",
                        id);
                upstreamDuration = t;
            }
            return t;
        }

        Timer firstByte() {
            Timer t = firstByte;
            if (t == null) {
                t = timer(
                        "cart.upstream.first.byte",
                        "Time from sending an upstream request to the first byte of its "
                                + "answer's body (the head when there is no body)",
                        LATENCY_BUCKETS,
                        "replica",
                        id);
                firstByte = t;
            }
            return t;
        }

        /**
         * 0, 1, 2: predicted, delivered, prompt tokens; 3, 4, 5, 6: the verdicts stale, inconclusive, ok,
         * cache_unreported.
         */
        Counter feedback(int which) {
            Counter c = feedback.get(which);
            if (c == null) {
                c = switch (which) {
                    case 0 ->
                        counter(
                                "cart.cache.predicted.tokens",
                                "Prompt tokens the router predicted the replica had cached, "
                                        + "for requests whose usage the replica reported",
                                "replica",
                                id);
                    case 1 ->
                        counter(
                                "cart.cache.delivered.tokens",
                                "Prompt tokens the replica reported as served from its cache",
                                "replica",
                                id);
                    case 2 ->
                        counter(
                                "cart.cache.prompt.tokens",
                                "Prompt tokens of the requests whose cache usage the replica reported",
                                "replica",
                                id);
                    default ->
                        counter(
                                "cart.cache.feedback",
                                "Replica usage reports compared with the router's prediction, by verdict",
                                "replica",
                                id,
                                "verdict",
                                which == 3
                                        ? FEEDBACK_STALE
                                        : which == 4
                                                ? FEEDBACK_INCONCLUSIVE
                                                : which == 6 ? FEEDBACK_CACHE_UNREPORTED : FEEDBACK_OK);
                };
                feedback.set(which, c);
            }
            return c;
        }
    }

    private Counter counter(String name, String help, String... tags) {
        MeterKey key = new MeterKey(name, tags);
        Counter c = counters.get(key);
        if (c == null) {
            c = counters.computeIfAbsent(
                    key, k -> Counter.builder(name).description(help).tags(tags).register(registry));
        }
        return c;
    }

    private Timer timer(String name, String help, Duration[] buckets, String... tags) {
        MeterKey key = new MeterKey(name, tags);
        Timer t = timers.get(key);
        if (t == null) {
            t = timers.computeIfAbsent(
                    key,
                    k -> Timer.builder(name)
                            .description(help)
                            .tags(tags)
                            .serviceLevelObjectives(buckets)
                            .register(registry));
        }
        return t;
    }

    /**
     * A counter's or timer's name and tags, as the key of the meters already registered: built per event,
     * so it copies nothing (the tags are the caller's array, never changed after the call).
     */
    private static final class MeterKey {
        private final String name;
        private final String[] tags;
        private final int hash;

        MeterKey(String name, String[] tags) {
            this.name = name;
            this.tags = tags;
            this.hash = 31 * name.hashCode() + Arrays.hashCode(tags);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof MeterKey k && k.hash == hash && k.name.equals(name) && Arrays.equals(k.tags, tags);
        }

        @Override
        public int hashCode() {
            return hash;
        }
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

    // ---- events ----

    /** One client request finished (counted by the handler; the JDK server's own rejections are not). */
    public void request(String path, int status, String replica, long nanos) {
        int endpoint = endpointIndex(path);
        meters(replica).request(endpoint, statusIndex(status)).increment();
        Timer t = requestDurations.get(endpoint);
        if (t == null) {
            t = timer(
                    "cart.request.duration",
                    "Time from the request's arrival to its end, by endpoint",
                    LATENCY_BUCKETS,
                    "endpoint",
                    ENDPOINT_LABELS[endpoint]);
            requestDurations.set(endpoint, t);
        }
        t.record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * {@code n} events (or a JSON body) of a routed answer from {@code replica} could not be parsed: the client
     * got them unchanged, but the usage or reply they carried was not read.
     */
    public void responseParseFailures(String replica, int n) {
        parseFailures(replica).increment(n);
    }

    private Counter parseFailures(String replica) {
        return counter(
                "cart.response.parse.failures",
                "Events or JSON bodies of routed answers that could not be parsed "
                        + "for usage and reply (relayed unchanged; what they reported is lost)",
                "replica",
                replica);
    }

    /** An upstream request was sent again on a fresh connection after its kept-alive one turned out closed. */
    public void staleConnectionResent() {
        staleConnections().increment();
    }

    private Counter staleConnections() {
        return counter(
                "cart.upstream.stale.connections",
                "Upstream requests sent again on a fresh connection because "
                        + "the kept-alive connection they went out on had been closed by the replica");
    }

    /** The reason word of a pass-through request's decision (logs and metrics). */
    static final String PASS_THROUGH = "pass_through";

    /**
     * A routing decision (from the router's listener); {@code passThrough} for a request that is not routed
     * by prompt (counted as {@value #PASS_THROUGH} when a replica was chosen).
     */
    public void decision(RouteDecision d, boolean passThrough) {
        String replica = d.routed() ? d.replica().id() : NONE;
        int reason = reasonIndex(d, passThrough);
        ReplicaMeters meters = meters(d.routed() ? replica : null);
        meters.decision(reason).increment();
        decisionDuration.record(d.decisionNanos(), TimeUnit.NANOSECONDS);
        modelDecision(d, reason);
        Tokenization t = d.tokenization();
        if (t.status() != Tokenization.Status.CHARACTER_MODE && d.attempt() == 0) {
            tokenization(t);
        }
        if (d.routed()) {
            if (d.keyLength() > 0) {
                matchedRatio.record(d.matchedRatio());
            }
            window.record(d.reason() == Reason.CACHE_HIT ? meters.windowHit : meters.windowMiss);
            if (d.learnedElsewhere()) {
                counter(
                                "cart.cluster.hits.learned.elsewhere",
                                "Cache hits on a route only other instances had reported (share: over"
                                        + " cart.decisions with reason cache_hit)")
                        .increment();
            }
        }
    }

    /** A request in token mode: its tokenization's outcome, cache lookups and time in the tokenizer. */
    private void tokenization(Tokenization t) {
        int status = t.status().ordinal();
        Counter outcome = tokenizationOutcomes.get(status);
        if (outcome == null) {
            outcome = counter(
                    "cart.tokenization",
                    "Requests in token mode by outcome: tokenized, or given a character key "
                            + "because every tokenization permit was taken (saturated) or the tokenizer failed",
                    "outcome",
                    t.status().name().toLowerCase(java.util.Locale.ROOT));
            tokenizationOutcomes.set(status, outcome);
        }
        outcome.increment();
        Counter hits = tokenCacheHits;
        if (hits == null) {
            tokenCacheHits = hits = counter(
                    "cart.token.cache.lookups",
                    "Key segments looked up in the tokenization cache, by result",
                    "result",
                    "hit");
        }
        hits.increment(t.cacheHits());
        Counter misses = tokenCacheMisses;
        if (misses == null) {
            tokenCacheMisses = misses = counter(
                    "cart.token.cache.lookups",
                    "Key segments looked up in the tokenization cache, by result",
                    "result",
                    "miss");
        }
        misses.increment(t.segments() - t.cacheHits());
        Timer tokenizer = tokenizerDuration;
        if (tokenizer == null) {
            tokenizerDuration = tokenizer = timer(
                    "cart.tokenizer.duration",
                    "Time a request spent in the tokenizer (0 when every segment was " + "cached)",
                    DECISION_BUCKETS);
        }
        tokenizer.record(t.tokenizerNanos(), TimeUnit.NANOSECONDS);
    }

    /** Counts a decision under its model's bounded label ({@link ModelLabels}). */
    private void modelDecision(RouteDecision d, int reason) {
        String model = d.model();
        ModelLabels.Counts counts = null;
        AtomicReferenceArray<Counter> byReason;
        if (model == null) {
            byReason = noModelDecisions;
        } else {
            Routing r = routing.get();
            counts = modelLabels.counts(model, r == null ? null : r.replicas);
            byReason = counts == null ? otherModelDecisions : counts.decisionCounters;
        }
        Counter c = byReason.get(reason);
        if (c == null) {
            c = counter(
                    "cart.model.decisions",
                    "Routing decisions by model (models the pool lists; other; none) and reason",
                    "model",
                    model == null ? NONE : counts == null ? OTHER : counts.label,
                    "reason",
                    reasonLabel(reason));
            byReason.set(reason, c);
        }
        c.increment();
        if (counts != null && d.routed()) {
            counts.record(d.reason() == Reason.CACHE_HIT);
        }
    }

    /** Per-model decision and cache-hit counts since the start, for {@code /workers}. */
    public Map<String, long[]> modelCounts() {
        return modelLabels.snapshot();
    }

    /** A lease closed: one upstream attempt ended (from the router's listener). */
    public void leaseCompleted(LeaseCompletion c) {
        ReplicaMeters m = meters(c.decision().replica().id());
        m.upstream(c.outcome().ordinal(), statusIndex(c.status())).increment();
        m.upstreamDuration().record(c.durationNanos(), TimeUnit.NANOSECONDS);
    }

    /** Time from sending the upstream request to the first byte of the answer's body (or its head). */
    public void firstByte(String replica, long nanos) {
        meters(replica).firstByte().record(nanos, TimeUnit.NANOSECONDS);
    }

    /** An attempt on {@code replica} failed and the request is retried elsewhere. */
    public void retry(String replica, String cause) {
        retries(replica, cause).increment();
    }

    private Counter retries(String replica, String cause) {
        return counter(
                "cart.retries",
                "Retries, by the replica whose attempt failed and the cause",
                "replica",
                replica,
                "cause",
                cause);
    }

    public void circuitTransition(String replica, CircuitBreaker.State from, CircuitBreaker.State to) {
        circuitTransitions(replica, from, to).increment();
    }

    private Counter circuitTransitions(String replica, CircuitBreaker.State from, CircuitBreaker.State to) {
        return counter(
                "cart.circuit.transitions",
                "Circuit breaker transitions by replica",
                "replica",
                replica,
                "from",
                from.label(),
                "to",
                to.label());
    }

    public void healthTransition(String replica, boolean healthy) {
        healthTransitions(replica, healthy).increment();
    }

    private Counter healthTransitions(String replica, boolean healthy) {
        return counter(
                "cart.health.transitions",
                "Health state changes by replica",
                "replica",
                replica,
                "to",
                healthy ? "healthy" : "unhealthy");
    }

    public void insertSkipped() {
        counter("cart.tree.inserts.skipped", "Prefixes not recorded because an eviction pass held the tree")
                .increment();
    }

    public void eviction(EvictionReport r) {
        evictionDuration.record(r.durationNanos(), TimeUnit.NANOSECONDS);
        if (r.expired() > 0) {
            counter("cart.tree.evicted.entries", "Tree entries evicted, by cause", "cause", "ttl")
                    .increment(r.expired());
        }
        if (r.evicted() > 0) {
            counter("cart.tree.evicted.entries", "Tree entries evicted, by cause", "cause", "lru")
                    .increment(r.evicted());
        }
        if (r.nodesRemoved() > 0) {
            counter("cart.tree.nodes.removed", "Tree nodes detached or merged by eviction")
                    .increment(r.nodesRemoved());
        }
    }

    public void treeReset() {
        counter("cart.tree.resets", "Whole-tree resets (daily cleanup)").increment();
    }

    public void modelsCache(boolean hit) {
        counter(
                        "cart.models.cache",
                        "GET /v1/models answers, from the cache (hit) or a replica (miss)",
                        "result",
                        hit ? "hit" : "miss")
                .increment();
    }

    public void reload(String result) {
        reloads(result).increment();
    }

    private Counter reloads(String result) {
        return counter("cart.reloads", "Configuration reloads by result", "result", result);
    }

    /** Registers the gauge of requests being handled (those counted against the concurrency limit). */
    public void inProgress(java.util.concurrent.atomic.AtomicInteger counter) {
        Gauge.builder("cart.requests.in.progress", counter, java.util.concurrent.atomic.AtomicInteger::get)
                .description("Requests being handled now (counted against server.max_concurrent_requests)")
                .register(registry);
    }

    /**
     * The replica reported its cache usage for a routed request (from the router's listener): the tokens
     * the router predicted it held, the tokens it delivered from its cache, its prompt tokens, and whether
     * the prediction was stale (the router then dropped the route) or inconclusive (requests still in
     * prefill on the replica explained the shortfall: nothing dropped).
     */
    public void cacheFeedback(RouteDecision d, CacheFeedback f) {
        ReplicaMeters m = meters(d.replica() == null ? null : d.replica().id());
        m.feedback(0).increment(Math.max(0, f.predictedTokens()));
        m.feedback(1).increment(Math.max(0, f.deliveredTokens()));
        m.feedback(2).increment(Math.max(0, f.promptTokens()));
        m.feedback(f.stale() ? 3 : f.inconclusive() ? 4 : f.verdict() == CacheFeedback.Verdict.CACHE_UNREPORTED ? 6 : 5)
                .increment();
    }

    /** A finished chat answer was (or was not) learned as the start of the next turn. */
    public void answerLearned(String result) {
        Counter c = learned.get(result);
        if (c == null) {
            c = counter(
                    "cart.learned.answers",
                    "Chat answers recorded as the next turn's prefix (learned), or why not",
                    "result",
                    result);
            learned.put(result, c);
        }
        c.increment();
    }

    /** A request refused before any work because a limit was reached (503 or 4xx from the proxy). */
    public void rejected(String cause) {
        rejections(cause).increment();
    }

    private Counter rejections(String cause) {
        return counter("cart.requests.rejected", "Requests refused by a proxy limit, by cause", "cause", cause);
    }

    /**
     * Registers the per-replica gauges for the current replica set and removes those of replicas it no
     * longer has. Called at start and after every accepted reload.
     */
    public synchronized void syncReplicas(ManagedReplicaSet set) {
        recent = new Seen[0]; // a reload's replicas come with ids of their own
        Routing current = routing.get();
        kv.follow(current == null ? null : current.precise); // precise mode's replicas, if any
        Set<String> ids = new HashSet<>();
        for (ManagedReplicaSet.Member m : set.replicas()) {
            ids.add(m.id());
            replicaCounters(m.id());
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

    /** The Prometheus text exposition of every meter. */
    public String scrape() {
        return registry.scrape();
    }

    @Override
    public void close() {
        gc.close();
        registry.close();
    }
}
