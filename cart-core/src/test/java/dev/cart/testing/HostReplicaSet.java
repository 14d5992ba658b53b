package dev.cart.testing;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.cart.core.CircuitBreaker;
import dev.cart.core.Outcome;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A replica set as a host with its own discovery and circuit breakers would write it, against the public
 * SPI alone (it lives outside {@code dev.cart.core}): in-flight counts, pending prefill, a health flag the
 * host sets, and a circuit breaker of its own whose admissions carry the breaker's generation, so that a
 * request admitted before a transition cannot decide the state after it.
 *
 * <p>Concurrency: each node's admission and release run under the node's monitor; the counts are atomics
 * so that reads take no lock.
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
        private enum State {
            CLOSED,
            OPEN,
            HALF_OPEN
        }

        private final ReplicaSpec spec;
        private final CircuitBreaker.Config config;
        private final Clock clock;
        private final AtomicInteger inFlight = new AtomicInteger();
        private final AtomicLong pending = new AtomicLong();
        private volatile boolean healthy = true;
        private volatile Set<String> models; // immutable, empty = any model; replaced whole, read lock-free

        @GuardedBy("this")
        private State state = State.CLOSED;

        @GuardedBy("this")
        private long generation;

        @GuardedBy("this")
        private long openedAt;

        @GuardedBy("this")
        private int failures;

        @GuardedBy("this")
        private int successes;

        @GuardedBy("this")
        private int trials;

        Node(ReplicaSpec spec, CircuitBreaker.Config config, Clock clock) {
            this.spec = spec;
            this.config = config;
            this.clock = clock;
            this.models = Set.copyOf(spec.models());
        }

        public void healthy(boolean up) {
            healthy = up;
        }

        /** Replaces the models this replica serves, as the host's discovery would (empty: any model). */
        public void models(Collection<String> names) {
            models = Set.copyOf(names);
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
        public long pendingPrefill() {
            return pending.get();
        }

        @Override
        public void addPendingPrefill(long units) {
            pending.addAndGet(units);
        }

        @Override
        public synchronized boolean isAvailable() {
            return healthy && inFlight.get() < spec.maxLoad() && admits();
        }

        @Override
        public synchronized Admission tryAcquire() {
            if (!healthy || inFlight.get() >= spec.maxLoad() || !admits()) {
                return null;
            }
            if (state == State.HALF_OPEN) {
                trials++;
            }
            inFlight.incrementAndGet();
            long g = generation;
            return outcome -> release(g, outcome);
        }

        @GuardedBy("this")
        private boolean admits() {
            if (state == State.OPEN
                    && clock.millis() - openedAt >= config.openTimeout().toMillis()) {
                to(State.HALF_OPEN);
            }
            return state == State.CLOSED || (state == State.HALF_OPEN && trials < config.halfOpenMaxRequests());
        }

        private synchronized void release(long g, Outcome outcome) {
            inFlight.decrementAndGet();
            if (g != generation || outcome == Outcome.CANCELLED) {
                if (g == generation && state == State.HALF_OPEN) {
                    trials--;
                }
                return; // an outcome from before the last transition says nothing about now
            }
            if (state == State.HALF_OPEN) {
                trials--;
                if (outcome == Outcome.FAILURE) {
                    to(State.OPEN);
                } else if (++successes >= config.successThreshold()) {
                    to(State.CLOSED);
                }
            } else if (outcome == Outcome.FAILURE) {
                if (++failures >= config.failureThreshold()) {
                    to(State.OPEN);
                }
            } else {
                failures = 0;
            }
        }

        @GuardedBy("this")
        private void to(State s) {
            state = s;
            generation++;
            failures = 0;
            successes = 0;
            trials = 0;
            openedAt = clock.millis();
        }

        @Override
        public String toString() {
            return "Node[" + spec.id() + " inFlight=" + inFlight.get() + "]";
        }
    }
}
