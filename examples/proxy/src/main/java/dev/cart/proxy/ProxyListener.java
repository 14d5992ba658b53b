package dev.cart.proxy;

import dev.cart.core.CircuitState;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.RoutingListener;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives what the router and the replica set do: logs health and circuit transitions, counts what
 * is worth counting. This is the hook for metrics: a metrics registry plugs in here (counters per
 * reason, per replica, per outcome) without touching the request path.
 */
final class ProxyListener implements RoutingListener, ManagedReplicaSet.Listener {

    private static final Logger LOG = LoggerFactory.getLogger("cart.replicas");

    final LongAdder insertsSkipped = new LongAdder();
    final LongAdder circuitTransitions = new LongAdder();
    final LongAdder healthChanges = new LongAdder();

    @Override
    public void onInsertSkipped() {
        insertsSkipped.increment();
    }

    @Override
    public void onCircuitTransition(ManagedReplicaSet.Member replica, CircuitState from, CircuitState to) {
        circuitTransitions.increment();
        if (to == CircuitState.OPEN) {
            LOG.warn("circuit {} -> {} for {}", from.label(), to.label(), replica.id());
        } else {
            LOG.info("circuit {} -> {} for {}", from.label(), to.label(), replica.id());
        }
    }

    @Override
    public void onHealthChange(ManagedReplicaSet.Member replica, boolean healthy) {
        healthChanges.increment();
        if (healthy) {
            LOG.info("replica {} is healthy again", replica.id());
        } else {
            LOG.warn("replica {} is unhealthy (health checks failing)", replica.id());
        }
    }
}
