package dev.cart.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.cart.core.internal.Checks;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The default {@link ReplicaSet}: a fixed list of replicas, each with an in-flight count capped at its
 * {@code max_load}, a health state fed by probe results, a circuit breaker fed by request outcomes, and
 * the models it serves (given at build time, replaced at run time by whatever discovers them).
 *
 * <p>Membership is fixed at build time; to change it, build a new set (the proxy does so on reload).
 * Replicas start healthy: a replica is assumed to serve until probes or failures say otherwise.
 *
 * <p>Concurrency: all methods are thread-safe. The in-flight count is an atomic compare-and-set loop
 * against the admission limit, so racing {@code tryAcquire} calls never exceed it. A member's models are
 * an immutable set published through a volatile field: routing reads them without a lock, and a
 * replacement is seen whole by the next decision.
 */
public final class ManagedReplicaSet implements ReplicaSet {

    /** Receives health and circuit transitions (for logs and metrics). Must not block. */
    public interface Listener {
        /**
         * A replica's circuit moved from {@code from} to {@code to}.
         *
         * @param replica the member whose circuit moved
         * @param from    the state it left
         * @param to      the state it entered
         */
        default void onCircuitTransition(Member replica, CircuitBreaker.State from, CircuitBreaker.State to) {}

        /**
         * Probes flipped a replica's health state.
         *
         * @param replica the member whose health flipped
         * @param healthy its new health
         */
        default void onHealthChange(Member replica, boolean healthy) {}

        /**
         * A replica's models were replaced by a different set ({@link Member#models(Collection)}).
         *
         * @param replica the member
         * @param models  its new models (immutable; empty means any model)
         */
        default void onModelsChange(Member replica, Set<String> models) {}
    }

    private final List<Member> members;

    private ManagedReplicaSet(List<Member> members) {
        this.members = List.copyOf(members);
    }

    /**
     * A builder with no replicas, default health and circuit settings, the system clock, no listener.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public List<Member> replicas() {
        return members;
    }

    /**
     * The member with this id, if any.
     *
     * @param id a member's {@link Member#id()}
     * @return the member, or empty if none has that id
     */
    public Optional<Member> member(String id) {
        for (Member m : members) {
            if (m.id.equals(id)) {
                return Optional.of(m);
            }
        }
        return Optional.empty();
    }

    /**
     * Number of members that are healthy (regardless of circuit state).
     *
     * @return the count, in [0, the number of members]
     */
    public int healthyCount() {
        int n = 0;
        for (Member m : members) {
            if (m.isHealthy()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Sum of in-flight counts over all members.
     *
     * @return the sum, read member by member (not an atomic snapshot)
     */
    public int totalInFlight() {
        int n = 0;
        for (Member m : members) {
            n += m.inFlight();
        }
        return n;
    }

    /** Builds a {@link ManagedReplicaSet}; only the replicas are required. */
    public static final class Builder {
        /** Each a {@link ReplicaSpec} to build or a kept {@link Member}, in the order added. */
        private final List<Object> entries = new ArrayList<>();

        private Clock clock = Clock.systemUTC();
        private HealthConfig health = HealthConfig.defaults();
        private CircuitBreaker.Config circuit = CircuitBreaker.Config.defaults();
        private Listener listener = new Listener() {};

        private Builder() {}

        /**
         * Adds one replica.
         *
         * @param spec the replica's id, cap, penalty and models
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder add(ReplicaSpec spec) {
            entries.add(Objects.requireNonNull(spec));
            return this;
        }

        /**
         * Adds a member of another set itself, not a copy: its in-flight count, health and circuit carry
         * over (and the router's figures for it, with {@link Router.Builder#routesOf}), and a lease taken from the other set is released on it as usual. For a
         * set that replaces another with some of the same replicas (a reload); the member keeps the
         * clock, health and circuit settings and the listener it was built with.
         *
         * @param member a member of the set being replaced
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder keep(Member member) {
            entries.add(Objects.requireNonNull(member));
            return this;
        }

        /**
         * Adds one replica with the default cap and no penalty ({@link ReplicaSpec#of}).
         *
         * @param id the replica's id, normally its base URL
         * @return this builder
         */
        public Builder add(String id) {
            return add(ReplicaSpec.of(id));
        }

        /**
         * The clock of the circuit breakers' open timeouts (the system clock by default).
         *
         * @param clock the wall clock
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock);
            return this;
        }

        /**
         * How probe results flip health ({@link HealthConfig#defaults()} by default).
         *
         * @param health the probe thresholds
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder health(HealthConfig health) {
            this.health = Objects.requireNonNull(health);
            return this;
        }

        /**
         * The circuit breakers' settings ({@link CircuitBreaker.Config#defaults()} by default).
         *
         * @param circuit the circuit breakers' settings
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder circuitBreaker(CircuitBreaker.Config circuit) {
            this.circuit = Objects.requireNonNull(circuit);
            return this;
        }

        /**
         * Hears circuit and health transitions (none by default).
         *
         * @param listener the listener; called on routing threads, must be quick
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder listener(Listener listener) {
            this.listener = Objects.requireNonNull(listener);
            return this;
        }

        /**
         * @throws IllegalArgumentException if there is no replica or two share an id
         *
         * @return a new replica set with the members added, in that order
         */
        public ManagedReplicaSet build() {
            if (entries.isEmpty()) {
                throw new IllegalArgumentException("a ManagedReplicaSet needs at least one replica");
            }
            Set<String> ids = new LinkedHashSet<>();
            List<Member> members = new ArrayList<>();
            for (Object entry : entries) {
                Member m = entry instanceof Member kept
                        ? kept
                        : new Member((ReplicaSpec) entry, clock, health, circuit, listener);
                if (!ids.add(m.id)) {
                    throw new IllegalArgumentException("duplicate replica " + m.id);
                }
                members.add(m);
            }
            return new ManagedReplicaSet(members);
        }
    }

    /** One managed replica. */
    public static final class Member implements Replica {
        private final String id;
        private final int maxLoad;
        private final int loadPenalty;
        private final HealthConfig health;
        private final Listener listener;
        private final CircuitBreaker breaker;
        private final AtomicInteger inFlight = new AtomicInteger();
        /** Written under this member's monitor with the probe counts; volatile: admission reads it lock-free. */
        private volatile boolean healthy = true;
        /** The admission of the breaker's current permit, reused; a racing replacement only costs an allocation. */
        private volatile @Nullable Ticket ticket;
        /**
         * Immutable; an empty set means any model. Volatile, not guarded: routing reads it without a lock; a
         * replacement is written under this member's monitor only so that each writer knows what it replaced.
         */
        private volatile Models models;

        @GuardedBy("this")
        private int probeFailures;

        @GuardedBy("this")
        private int probeSuccesses;

        private Member(
                ReplicaSpec spec, Clock clock, HealthConfig health, CircuitBreaker.Config circuit, Listener listener) {
            this.id = spec.id();
            this.maxLoad = spec.maxLoad();
            this.loadPenalty = spec.loadPenalty();
            this.models = new Models(spec.models());
            this.health = health;
            this.listener = listener;
            this.breaker = CircuitBreaker.builder()
                    .config(circuit)
                    .clock(clock)
                    .listener((from, to) -> listener.onCircuitTransition(this, from, to))
                    .build();
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public int inFlight() {
            return inFlight.get();
        }

        @Override
        public int maxLoad() {
            return maxLoad;
        }

        @Override
        public int loadPenalty() {
            return loadPenalty;
        }

        /** True if the replica serves {@code model}: it is one of its {@link #models()}, or those are empty. */
        @Override
        public boolean serves(String model) {
            Models m = models;
            String only = m.only;
            return only != null ? only.equals(model) : m.set.isEmpty() || m.set.contains(model);
        }

        /**
         * The models the replica serves now, in the order given; empty means any model.
         *
         * @return an immutable set, empty for any model
         */
        public Set<String> models() {
            return models.set;
        }

        /**
         * Replaces the models the replica serves (for example with those its {@code GET /v1/models} lists on
         * each health check, as adapters are loaded and unloaded); empty means any model. The next routing
         * decision sees the new set whole. Thread-safe; the listener hears a change, not a repeat.
         *
         * @throws IllegalArgumentException if a name is null or blank (the models are then unchanged)
         * @param models the model names, none blank; empty for any model
         */
        public void models(Collection<String> models) {
            Models next = new Models(ReplicaSpec.modelNames(id, models));
            Set<String> before;
            synchronized (this) {
                before = this.models.set;
                this.models = next;
            }
            if (!before.equals(next.set)) {
                listener.onModelsChange(this, next.set);
            }
        }

        /**
         * Whether probes say the replica is up (regardless of its circuit).
         *
         * @return true if the last probes say it is up (true before any probe)
         */
        public boolean isHealthy() {
            return healthy;
        }

        /**
         * The state of this replica's circuit breaker now.
         *
         * @return the current state
         */
        public CircuitBreaker.State circuitState() {
            return breaker.state();
        }

        @Override
        public boolean isAvailable() {
            return healthy && inFlight.get() < maxLoad && breaker.wouldAdmit();
        }

        /**
         * Admits one request under the circuit's current generation: a request admitted before a
         * transition cannot sway the state after it, and in half-open only trials decide.
         */
        @Override
        public @Nullable Admission tryAcquire() {
            if (!healthy) {
                return null;
            }
            CircuitBreaker.Permit permit = breaker.tryAcquire();
            if (permit == null) {
                return null;
            }
            for (; ; ) {
                int n = inFlight.get();
                if (n >= maxLoad) {
                    permit.cancel();
                    return null;
                }
                if (inFlight.compareAndSet(n, n + 1)) {
                    return ticket(permit);
                }
            }
        }

        /** The admission of {@code permit}: one object shared by every request admitted under one permit. */
        private Ticket ticket(CircuitBreaker.Permit permit) {
            Ticket t = ticket;
            if (t == null || t.permit != permit) {
                t = new Ticket(permit);
                ticket = t;
            }
            return t;
        }

        /** Ends a request admitted under {@code permit}. */
        private void release(Outcome outcome, CircuitBreaker.Permit permit) {
            int left = inFlight.decrementAndGet();
            if (left < 0) {
                inFlight.incrementAndGet();
                throw new IllegalStateException("release without acquire on replica " + id);
            }
            permit.record(outcome);
        }

        /**
         * A member's models: the immutable set in the order given (empty means any model), and its one name
         * when it has exactly one (the usual pool), which {@link #serves} compares with one {@code equals}
         * instead of hashing the requested name. Immutable, replaced whole.
         */
        private static final class Models {
            final Set<String> set;
            final @Nullable String only;

            Models(List<String> names) {
                this.set = names.isEmpty() ? Set.of() : Collections.unmodifiableSet(new LinkedHashSet<>(names));
                this.only = names.size() == 1 ? names.get(0) : null;
            }
        }

        /** Admissions under one circuit breaker permit (one generation of the circuit). */
        private final class Ticket implements Admission {
            private final CircuitBreaker.Permit permit;

            Ticket(CircuitBreaker.Permit permit) {
                this.permit = permit;
            }

            @Override
            public void release(Outcome outcome) {
                Member.this.release(Objects.requireNonNull(outcome, "outcome"), permit);
            }
        }

        /**
         * Records one health probe result; thresholds decide when the health state flips.
         *
         * @param ok true if the probe succeeded
         */
        public void recordProbe(boolean ok) {
            boolean changed;
            boolean now;
            synchronized (this) {
                if (ok) {
                    probeFailures = 0;
                    probeSuccesses++;
                    changed = !healthy && probeSuccesses >= health.successThreshold();
                } else {
                    probeSuccesses = 0;
                    probeFailures++;
                    changed = healthy && probeFailures >= health.failureThreshold();
                }
                if (changed) {
                    healthy = !healthy;
                    probeFailures = 0;
                    probeSuccesses = 0;
                }
                now = healthy;
            }
            if (changed) {
                listener.onHealthChange(this, now);
            }
        }

        @Override
        public String toString() {
            return "Replica[" + id + " inFlight=" + inFlight.get() + "/" + maxLoad + " healthy=" + healthy + " circuit="
                    + breaker.state().label() + "]";
        }
    }

    /**
     * How probe results turn into a health state. The probing itself
     * (endpoint, interval, timeout) is the host's business; it reports each result to
     * {@link ManagedReplicaSet.Member#recordProbe(boolean)}.
     *
     * @param failureThreshold consecutive failed probes that mark a healthy replica unhealthy
     * @param successThreshold consecutive good probes that mark an unhealthy replica healthy
     */
    public record HealthConfig(int failureThreshold, int successThreshold) {

        private static final HealthConfig DEFAULTS = new HealthConfig(3, 2);

        /**
         * Checks that both thresholds are at least 1.
         *
         * @param failureThreshold consecutive failed probes that mark a healthy replica unhealthy, at least 1
         * @param successThreshold consecutive good probes that mark an unhealthy replica healthy, at least 1
         * @throws IllegalArgumentException if a threshold is below 1
         */
        public HealthConfig {
            Checks.atLeast("ManagedReplicaSet.HealthConfig.failureThreshold", failureThreshold, 1);
            Checks.atLeast("ManagedReplicaSet.HealthConfig.successThreshold", successThreshold, 1);
        }

        /**
         * The defaults: 3 failed probes mark a replica unhealthy, 2 good ones healthy again.
         *
         * @return the default thresholds
         */
        public static HealthConfig defaults() {
            return DEFAULTS;
        }
    }
}
