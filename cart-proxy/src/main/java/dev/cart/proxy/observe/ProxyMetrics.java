package dev.cart.proxy.observe;

import dev.cart.core.CacheFeedback;
import dev.cart.core.CircuitBreaker;
import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Outcome;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.proxy.routing.Routing;
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
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The proxy's metrics, in one Micrometer {@link PrometheusMeterRegistry} scraped by {@code GET /metrics}: the one
 * type the rest of the proxy calls. Every name and label is listed in {@code docs/metrics.md}; a metric added
 * here must be added there.
 *
 * <p>How: this class makes the registry, binds the JVM's and the process's meters, and hands each event to the
 * part that keeps its meters, one class per job: {@link RequestMeters} the events of every request (meters
 * resolved once and kept by index and by the identity of the replica's id, so that an event builds no tags; the
 * events are run on the decision lines' writer thread, {@link DecisionWriter}: the caller's thread, an event
 * loop, only keeps each event as a field of the request's record, which goes to that thread as one entry at
 * the request's end ({@link RequestEvents}), and a scrape first waits for what was queued before it),
 * {@link RareEvents} the rarer events (looked up by name and tags when they happen; those dashboards take rates
 * of registered at 0 from the start), {@link LiveGauges} the gauges over live state (read at scrape time through
 * a supplier of the current {@link Routing}, so they follow a reload), {@link KvMetrics} precise mode's. A meter
 * is otherwise registered on first use, so a series appears once it has counted something; per-replica gauges
 * are removed when a reload drops the replica (its counters stay, as Prometheus counters do, until the process
 * restarts).
 *
 * <p>Cardinality: label values come only from fixed sets ({@link Labels}: endpoints, reasons, outcomes, status
 * classes, circuit states, causes), from the configured replica URLs and from the models the replicas list (at
 * most {@link ModelLabels#MAX_LABELS}; see there). Nothing from a request body, path or header ever becomes a
 * label value: an unknown path is {@code endpoint="other"}.
 *
 * <p>Concurrency: every method is thread-safe and never throws to its caller on the request path.
 */
public final class ProxyMetrics implements AutoCloseable {

    /** The label value of no replica, no model, no status. */
    public static final String NONE = Labels.NONE;

    /** The label value of every path, model or status outside the known ones. */
    public static final String OTHER = Labels.OTHER;

    /** Endpoints that are their own label value; every other path is {@link #OTHER}. */
    public static final Set<String> ENDPOINTS = Set.of(
            "/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/models", "/health", "/workers", "/metrics");

    /** The registry every meter of the proxy is in (the admission queue and the cluster bind theirs to it). */
    public final PrometheusMeterRegistry registry;

    private final Supplier<Routing> routing;
    private final JvmGcMetrics gc;
    private final ModelLabels modelLabels = new ModelLabels();
    private final RequestMeters requests;
    private final RareEvents rare;
    private final LiveGauges gauges;
    private final KvMetrics kv;
    /** The thread the request path's events are deferred to (the decision lines' writer). */
    private final DecisionWriter writer = DecisionLog.writer();

    /** How long a scrape waits for the events queued before it to be counted. */
    private static final Duration SCRAPE_WAIT = Duration.ofSeconds(2);

    /**
     * @param routing    the current routing state (read at scrape time)
     * @param blockChars characters per tree block, for {@code cart_tree_characters}
     * @param window     recent decisions, fed here, read by {@code /workers}
     */
    public ProxyMetrics(Supplier<Routing> routing, int blockChars, DecisionWindow window) {
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        this.routing = routing;
        this.kv = new KvMetrics(registry, routing);
        new JvmMemoryMetrics().bindTo(registry);
        this.gc = new JvmGcMetrics();
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        Meters meters = new Meters(registry);
        this.requests = new RequestMeters(meters, routing, window, modelLabels);
        this.rare = new RareEvents(meters);
        this.gauges = new LiveGauges(registry, routing, blockChars);
        rare.registerAtZero();
    }

    /** Precise mode's metrics ({@code cart_kv_*}): the KV-event index's listener; nothing registered without it. */
    public KvMetrics kv() {
        return kv;
    }

    /** The outcome label of a lease's end: its name in lower case. */
    public static String outcomeLabel(Outcome o) {
        return Labels.OUTCOMES[o.ordinal()];
    }

    /** The endpoint label for a path: the path itself for the proxy's known endpoints, else "other". */
    public static String endpointLabel(String path) {
        return Labels.ENDPOINTS[Labels.endpointIndex(path)];
    }

    /** "2xx" ... "5xx" for a status, "none" for 0 or -1 (nothing answered). */
    public static String statusClass(int status) {
        return Labels.STATUSES[Labels.statusIndex(status)];
    }

    // ---- the request path ({@link RequestMeters}), counted on the writer thread ----

    /**
     * Hands a request-path event that has no request record to go into to the writer thread (one allocation and
     * one queue offer on the caller's thread), or runs it here when the queue is full: never lost, never waited
     * for. A scrape waits for the events queued before it ({@link #scrape}).
     */
    private void defer(Runnable event) {
        if (!writer.defer(event)) {
            event.run();
        }
    }

    /**
     * A proxied request is over: its end (the status the client got, -1 when the connection was dropped, and
     * its time) joins the events its record carries, and the record goes to the writer thread as one entry,
     * which counts them all and writes the decision line (when it is on). Called once per record.
     */
    public void finished(DecisionLog record, String path, int status, long nanos) {
        if (record.handedOver()) { // a second end: counted on its own, the record is the writer's
            request(path, status, record.replica(), nanos);
            return;
        }
        record.finished(requests, path, status, record.replica(), nanos);
        record.end();
    }

    /** One client request without a record finished (one the proxy answered itself, or refused). */
    public void request(String path, int status, String replica, long nanos) {
        defer(() -> requests.request(path, status, replica, nanos));
    }

    /**
     * A routing decision (from the router's listener); {@code passThrough} for a request that is not routed
     * by prompt (counted as {@code pass_through} when a replica was chosen). The decision window
     * ({@code /workers}) has it at once; its meters count it with the request's {@code record} (null: on its own).
     */
    public void decision(RequestEvents record, RouteDecision d, boolean passThrough) {
        requests.window(d);
        if (record == null || !record.decided(d, passThrough)) {
            defer(() -> requests.decision(d, passThrough));
        }
    }

    /**
     * A lease closed: one upstream attempt ended (from the router's listener). Counted with the record whose
     * lease the thread is closing ({@link RequestEvents#close}), else on its own.
     */
    public void leaseCompleted(LeaseCompletion c) {
        RequestEvents record = RequestEvents.current();
        if (record == null || !record.completed(c)) {
            defer(() -> requests.leaseCompleted(c));
        }
    }

    /**
     * Time from sending the upstream request to the first byte of the answer's body (or its head), counted with
     * the request's {@code record} (null: on its own).
     */
    public void firstByte(RequestEvents record, String replica, long nanos) {
        if (record == null || !record.firstByte(replica, nanos)) {
            defer(() -> requests.firstByte(replica, nanos));
        }
    }

    /**
     * The replica reported its cache usage for a routed request (from the router's listener): the tokens
     * the router predicted it held, the tokens it delivered from its cache, its prompt tokens, and whether
     * the prediction was stale (the router then dropped the route) or inconclusive (requests still in
     * prefill on the replica explained the shortfall: nothing dropped). Counted with the record whose usage the
     * thread is reporting ({@link RequestEvents#succeeded}), else on its own.
     */
    public void cacheFeedback(RouteDecision d, CacheFeedback f) {
        RequestEvents record = RequestEvents.current();
        if (record == null || !record.feedback(d, f)) {
            defer(() -> requests.cacheFeedback(d, f));
        }
    }

    /**
     * A finished chat answer was (or was not) learned as the start of the next turn ({@code result}: a
     * constant), counted with the request's {@code record} (null: on its own).
     */
    public void answerLearned(RequestEvents record, String result) {
        if (record == null || !record.learned(result)) {
            defer(() -> requests.answerLearned(result));
        }
    }

    /** Per-model decision and cache-hit counts since the start, for {@code /workers} (after the queued events). */
    public Map<String, long[]> modelCounts() {
        writer.flush(SCRAPE_WAIT);
        return modelLabels.snapshot();
    }

    // ---- rarer events ({@link RareEvents}) ----

    /**
     * {@code n} events (or a JSON body) of a routed answer from {@code replica} could not be parsed: the client
     * got them unchanged, but the usage or reply they carried was not read.
     */
    public void responseParseFailures(String replica, int n) {
        rare.parseFailures(replica).increment(n);
    }

    /** An upstream request was sent again on a fresh connection after its kept-alive one turned out closed. */
    public void staleConnectionResent() {
        rare.staleConnections().increment();
    }

    /** An attempt on {@code replica} failed and the request is retried elsewhere. */
    public void retry(String replica, String cause) {
        rare.retries(replica, cause).increment();
    }

    /** The circuit breaker of {@code replica} went from {@code from} to {@code to}. */
    public void circuitTransition(String replica, CircuitBreaker.State from, CircuitBreaker.State to) {
        rare.circuitTransitions(replica, from, to).increment();
    }

    /** The health checks of {@code replica} changed their verdict. */
    public void healthTransition(String replica, boolean healthy) {
        rare.healthTransitions(replica, healthy).increment();
    }

    /** A prefix was not recorded because an eviction pass held the tree. */
    public void insertSkipped() {
        rare.insertSkipped();
    }

    /** An eviction pass ended. */
    public void eviction(EvictionReport r) {
        rare.eviction(r);
    }

    /** The whole tree was reset (daily cleanup). */
    public void treeReset() {
        rare.treeReset();
    }

    /** A {@code GET /v1/models} was answered from the cache ({@code hit}) or asked of the replicas. */
    public void modelsCache(boolean hit) {
        rare.modelsCache(hit).increment();
    }

    /** A reload ended with {@code result} ({@code applied}, {@code unchanged}, {@code rejected}, {@code superseded}). */
    public void reload(String result) {
        rare.reloads(result).increment();
    }

    /** A request refused before any work because a limit was reached (503 or 4xx from the proxy). */
    public void rejected(String cause) {
        rare.rejections(cause).increment();
    }

    // ---- live state ({@link LiveGauges}) ----

    /** Registers the gauge of requests being handled (those counted against the concurrency limit). */
    public void inProgress(AtomicInteger counter) {
        gauges.inProgress(counter);
    }

    /**
     * Registers the per-replica gauges and zero counters for the current replica set and removes the gauges of
     * replicas it no longer has. Called at start and after every accepted reload.
     */
    public synchronized void syncReplicas(ManagedReplicaSet set) {
        requests.replicasChanged();
        Routing current = routing.get();
        kv.follow(current == null ? null : current.precise); // precise mode's replicas, if any
        for (ManagedReplicaSet.Member m : set.replicas()) {
            rare.replicaCounters(m.id());
        }
        gauges.syncReplicas(set);
    }

    /**
     * The Prometheus text exposition of every meter, once the request-path events queued before the call are
     * counted (it waits up to two seconds for them: a writer thread that far behind has its lines dropped).
     */
    public String scrape() {
        writer.flush(SCRAPE_WAIT);
        return registry.scrape();
    }

    @Override
    public void close() {
        gc.close();
        registry.close();
    }
}
