package dev.cart.proxy.observe;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.EvictionReport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The counters of events that do not come with every request (retries, circuit and health transitions, answers
 * not parsed, evictions, reloads, rejections, the models cache), each looked up by name and tags in
 * {@link Meters} when it happens: simple, and cheap enough at their rate.
 *
 * <p>Those that dashboards and alerts take rates of read 0 from the start: the ones with fixed label values are
 * registered in the constructor, the ones per replica for each replica of the set when it is synced
 * ({@link #replicaCounters}), so that a {@code rate()} or {@code increase()} reads 0 rather than nothing.
 *
 * <p>Concurrency: thread-safe ({@link Meters} is, and Micrometer's meters are).
 */
final class RareEvents {

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

    private static final String EVICTED = "cart.tree.evicted.entries";
    private static final String EVICTED_HELP = "Tree entries evicted, by cause";
    private static final String NODES_REMOVED = "cart.tree.nodes.removed";
    private static final String NODES_REMOVED_HELP = "Tree nodes detached or merged by eviction";
    private static final String SKIPPED = "cart.tree.inserts.skipped";
    private static final String SKIPPED_HELP = "Prefixes not recorded because an eviction pass held the tree";
    private static final String RESETS = "cart.tree.resets";
    private static final String RESETS_HELP = "Whole-tree resets (daily cleanup)";
    private static final String MODELS_CACHE = "cart.models.cache";
    private static final String MODELS_CACHE_HELP = "GET /v1/models answers, from the cache (hit) or a replica (miss)";

    private final Meters meters;
    private final Timer evictionDuration;

    RareEvents(Meters meters) {
        this.meters = meters;
        evictionDuration = Timer.builder("cart.tree.eviction.duration")
                .description("Eviction passes and the time each held the tree")
                .register(meters.registry);
    }

    /** Registers at 0 the counters with fixed label values that must read 0 before their first event. */
    void registerAtZero() {
        for (String cause : List.of("ttl", "lru")) {
            meters.counter(EVICTED, EVICTED_HELP, "cause", cause);
        }
        meters.counter(NODES_REMOVED, NODES_REMOVED_HELP);
        meters.counter(SKIPPED, SKIPPED_HELP);
        meters.counter(RESETS, RESETS_HELP);
        for (String r : List.of("hit", "miss")) {
            meters.counter(MODELS_CACHE, MODELS_CACHE_HELP, "result", r);
        }
        for (String result : RELOAD_RESULTS) {
            reloads(result);
        }
        for (String cause : REJECT_CAUSES) {
            rejections(cause);
        }
        staleConnections();
    }

    /**
     * Registers at 0 the counters of {@code replica} that count its events (retries by cause, circuit and
     * health transitions, answers not parsed).
     */
    void replicaCounters(String replica) {
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

    Counter retries(String replica, String cause) {
        return meters.counter(
                "cart.retries",
                "Retries, by the replica whose attempt failed and the cause",
                "replica",
                replica,
                "cause",
                cause);
    }

    Counter circuitTransitions(String replica, CircuitBreaker.State from, CircuitBreaker.State to) {
        return meters.counter(
                "cart.circuit.transitions",
                "Circuit breaker transitions by replica",
                "replica",
                replica,
                "from",
                from.label(),
                "to",
                to.label());
    }

    Counter healthTransitions(String replica, boolean healthy) {
        return meters.counter(
                "cart.health.transitions",
                "Health state changes by replica",
                "replica",
                replica,
                "to",
                healthy ? "healthy" : "unhealthy");
    }

    Counter parseFailures(String replica) {
        return meters.counter(
                "cart.response.parse.failures",
                "Events or JSON bodies of routed answers that could not be parsed "
                        + "for usage and reply (relayed unchanged; what they reported is lost)",
                "replica",
                replica);
    }

    Counter staleConnections() {
        return meters.counter(
                "cart.upstream.stale.connections",
                "Upstream requests sent again on a fresh connection because "
                        + "the kept-alive connection they went out on had been closed by the replica");
    }

    Counter reloads(String result) {
        return meters.counter("cart.reloads", "Configuration reloads by result", "result", result);
    }

    Counter rejections(String cause) {
        return meters.counter("cart.requests.rejected", "Requests refused by a proxy limit, by cause", "cause", cause);
    }

    Counter modelsCache(boolean hit) {
        return meters.counter(MODELS_CACHE, MODELS_CACHE_HELP, "result", hit ? "hit" : "miss");
    }

    void insertSkipped() {
        meters.counter(SKIPPED, SKIPPED_HELP).increment();
    }

    void treeReset() {
        meters.counter(RESETS, RESETS_HELP).increment();
    }

    void eviction(EvictionReport r) {
        evictionDuration.record(r.durationNanos(), TimeUnit.NANOSECONDS);
        if (r.expired() > 0) {
            meters.counter(EVICTED, EVICTED_HELP, "cause", "ttl").increment(r.expired());
        }
        if (r.evicted() > 0) {
            meters.counter(EVICTED, EVICTED_HELP, "cause", "lru").increment(r.evicted());
        }
        if (r.nodesRemoved() > 0) {
            meters.counter(NODES_REMOVED, NODES_REMOVED_HELP).increment(r.nodesRemoved());
        }
    }
}
