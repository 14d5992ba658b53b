package dev.cart.testing;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A replica set as a host with its own discovery would write it, against the public API alone (it lives
 * outside {@code dev.cart.core}): in-flight counts, a health flag the host sets, the models it serves, and
 * CART's {@link CircuitBreaker} per replica, used as its documentation shows: a permit per admission,
 * cancelled when the replica is full, recorded with the outcome when the lease releases it. Each node
 * keeps the transitions its breaker reported, as a host would log them.
 *
 * <p>Concurrency: lock-free; the counts are atomics and the breaker is thread-safe.
 */
public final class HostReplicaSet implements ReplicaSet {

    private final List<Node> nodes = new ArrayList<>();

    public HostReplicaSet(List<ReplicaSpec> specs, CircuitBreaker.Config breaker, Clock clock) {
        for (ReplicaSpec s : specs) {
            nodes.add(new Node(s, breaker, clock));
        }
    }

    @Override
    public List<Node> replicas() {
        return List.copyOf(nodes);
    }

    /** One replica of the host's pool. */
    public static final class Node implements Replica {
        private final ReplicaSpec spec;
        private final CircuitBreaker breaker;
        private final AtomicInteger inFlight = new AtomicInteger();
        private final List<String> transitions = new CopyOnWriteArrayList<>();
        private volatile boolean healthy = true;
        private volatile Set<String> models; // immutable, empty = any model; replaced whole, read lock-free

        Node(ReplicaSpec spec, CircuitBreaker.Config config, Clock clock) {
            this.spec = spec;
            this.breaker = CircuitBreaker.builder()
                    .config(config)
                    .clock(clock)
                    .listener((from, to) -> transitions.add(from.label() + "->" + to.label()))
                    .build();
            this.models = Set.copyOf(spec.models());
        }

        public void healthy(boolean up) {
            healthy = up;
        }

        /** Replaces the models this replica serves, as the host's discovery would (empty: any model). */
        public void models(Collection<String> names) {
            models = Set.copyOf(names);
        }

        /** The state of this replica's circuit now. */
        public CircuitBreaker.State circuitState() {
            return breaker.state();
        }

        /** The transitions its breaker reported, in order ({@code closed->open}, ...). */
        public List<String> transitions() {
            return List.copyOf(transitions);
        }

        @Override
        public boolean serves(String model) {
            Set<String> m = models;
            return m.isEmpty() || m.contains(model);
        }

        @Override
        public String id() {
            return spec.id();
        }

        @Override
        public int inFlight() {
            return inFlight.get();
        }

        @Override
        public int maxLoad() {
            return spec.maxLoad();
        }

        @Override
        public int loadPenalty() {
            return spec.loadPenalty();
        }

        @Override
        public boolean isAvailable() {
            return healthy && inFlight.get() < spec.maxLoad() && breaker.wouldAdmit();
        }

        @Override
        public Admission tryAcquire() {
            if (!healthy) {
                return null;
            }
            CircuitBreaker.Permit permit = breaker.tryAcquire();
            if (permit == null) {
                return null;
            }
            int n;
            do {
                n = inFlight.get();
                if (n >= spec.maxLoad()) {
                    permit.cancel();
                    return null;
                }
            } while (!inFlight.compareAndSet(n, n + 1));
            return outcome -> {
                inFlight.decrementAndGet();
                permit.record(outcome);
            };
        }

        @Override
        public String toString() {
            return "Node[" + spec.id() + " inFlight=" + inFlight.get() + "]";
        }
    }
}
