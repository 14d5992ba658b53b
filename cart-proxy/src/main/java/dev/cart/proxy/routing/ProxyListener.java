package dev.cart.proxy.routing;

import dev.cart.core.CacheFeedback;
import dev.cart.core.CircuitBreaker;
import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import dev.cart.flow.FlowListener;
import dev.cart.kvevents.KvEventsListener;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.observe.RequestEvents;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives what the router and the replica set do: feeds {@link ProxyMetrics}, logs health and circuit
 * transitions, then passes each event to an optional extra listener (for embedding and tests).
 *
 * <p>Failure isolation: the router wraps this listener so that an exception never reaches routing (core's
 * guard); the metrics are fed first, so an extra listener that throws costs no metric. Replica-set events
 * come without such a guard from core, so they are guarded here: a failure is logged once and dropped.
 */
public final class ProxyListener implements RoutingListener, ManagedReplicaSet.Listener {

    private static final Logger LOG = LoggerFactory.getLogger("cart.replicas");

    private final ProxyMetrics metrics;
    private final RoutingListener extra;
    private final AtomicBoolean failureLogged = new AtomicBoolean();
    /** Hears the admission queue ({@code flow.*}): its metrics; none until the proxy sets one. */
    private volatile FlowListener flow = FlowListener.NONE;

    public ProxyListener(ProxyMetrics metrics, RoutingListener extra) {
        this.metrics = metrics;
        this.extra = extra;
    }

    @Override
    public void onDecision(RouteDecision decision) {
        extra.onDecision(decision); // the metrics count it in chose, where the forwarder says what it was for
    }

    /**
     * Chooses a replica for {@code request} and counts the decision. A pass-through request (any path but
     * the routed endpoints) has an empty key and is decided by load; its decision is counted under the
     * reason {@code pass_through} rather than {@code empty_text}, which stays the word for a routed request
     * with no prompt text. The caller says which it is: the router's listener cannot tell. The decision is
     * counted with the request's {@code record} (see {@link ProxyMetrics#decision}).
     */
    public RouteDecision choose(Router router, RouteRequest request, boolean passThrough, RequestEvents record) {
        RouteDecision d = router.choose(request);
        metrics.decision(record, d, passThrough);
        return d;
    }

    /**
     * Counts a decision the admission queue made for a routed request ({@link #choose} counts the ones the
     * proxy asks the router for itself).
     */
    public void decided(RouteDecision d, RequestEvents record) {
        metrics.decision(record, d, false);
    }

    /** Hears precise mode's index and subscribers ({@code kv_events}): its metrics; none until the proxy sets one. */
    private volatile KvEventsListener kv = KvEventsListener.NONE;

    /** What hears the KV-event indexes built from now on ({@link dev.cart.proxy.observe.KvMetrics}). */
    public void kvListener(KvEventsListener listener) {
        this.kv = java.util.Objects.requireNonNull(listener);
    }

    /** What hears precise mode's index and subscribers. */
    public KvEventsListener kvListener() {
        return kv;
    }

    /** What hears the admission queues built from now on ({@link dev.cart.proxy.flow.FlowMetrics}). */
    public void flowListener(FlowListener listener) {
        this.flow = java.util.Objects.requireNonNull(listener);
    }

    /** What hears the admission queue: its metrics. */
    public FlowListener flowListener() {
        return flow;
    }

    @Override
    public void onLeaseCompleted(LeaseCompletion completion) {
        metrics.leaseCompleted(completion);
        extra.onLeaseCompleted(completion);
    }

    @Override
    public void onCacheFeedback(RouteDecision decision, CacheFeedback feedback) {
        metrics.cacheFeedback(decision, feedback);
        extra.onCacheFeedback(decision, feedback);
    }

    @Override
    public void onInsertSkipped() {
        metrics.insertSkipped();
        extra.onInsertSkipped();
    }

    @Override
    public void onEviction(EvictionReport report) {
        metrics.eviction(report);
        extra.onEviction(report);
    }

    @Override
    public void onReset() {
        metrics.treeReset();
        extra.onReset();
    }

    @Override
    public void onCircuitTransition(
            ManagedReplicaSet.Member replica, CircuitBreaker.State from, CircuitBreaker.State to) {
        if (to == CircuitBreaker.State.OPEN) {
            LOG.warn("circuit {} -> {} for {}", from.label(), to.label(), replica.id());
        } else {
            LOG.info("circuit {} -> {} for {}", from.label(), to.label(), replica.id());
        }
        guarded(() -> metrics.circuitTransition(replica.id(), from, to));
    }

    @Override
    public void onHealthChange(ManagedReplicaSet.Member replica, boolean healthy) {
        if (healthy) {
            LOG.info("replica {} is healthy again", replica.id());
        } else {
            LOG.warn("replica {} is unhealthy (health checks failing)", replica.id());
        }
        guarded(() -> metrics.healthTransition(replica.id(), healthy));
    }

    @Override
    public void onModelsChange(ManagedReplicaSet.Member replica, java.util.Set<String> models) {
        LOG.info(
                "replica {} serves {}",
                replica.id(),
                models.isEmpty()
                        ? "any model"
                        : models.size() + " model(s): "
                                + models.stream()
                                        .limit(20)
                                        .map(m -> DecisionLog.safe(m, 100))
                                        .toList());
    }

    private void guarded(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            if (failureLogged.compareAndSet(false, true)) {
                LOG.warn("recording a replica event failed; ignoring this and later failures", e);
            }
        }
    }
}
