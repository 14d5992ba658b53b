package dev.cart.testing;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import java.time.Clock;
import java.util.Collection;
import java.util.List;

/**
 * The replica set implementations every router and policy test runs against: the library's
 * {@link ManagedReplicaSet}, and {@link HostReplicaSet}, written as a host would write one. A test
 * parameterised over this enum proves the router treats both alike.
 */
public enum ReplicaSets {
    MANAGED {
        @Override
        public ReplicaSet build(List<ReplicaSpec> specs, CircuitBreaker.Config breaker, Clock clock) {
            ManagedReplicaSet.Builder b =
                    ManagedReplicaSet.builder().circuitBreaker(breaker).clock(clock);
            specs.forEach(b::add);
            return b.build();
        }

        @Override
        public void serveModels(Replica r, Collection<String> models) {
            ((ManagedReplicaSet.Member) r).models(models);
        }

        @Override
        public void makeUnhealthy(Replica r) {
            ManagedReplicaSet.Member m = (ManagedReplicaSet.Member) r;
            while (m.isHealthy()) {
                m.recordProbe(false);
            }
        }
    },
    HOST {
        @Override
        public ReplicaSet build(List<ReplicaSpec> specs, CircuitBreaker.Config breaker, Clock clock) {
            return new HostReplicaSet(specs, breaker, clock);
        }

        @Override
        public void makeUnhealthy(Replica r) {
            ((HostReplicaSet.Node) r).healthy(false);
        }

        @Override
        public void serveModels(Replica r, Collection<String> models) {
            ((HostReplicaSet.Node) r).models(models);
        }
    };

    /** A set of these replicas, with this breaker and clock. */
    public abstract ReplicaSet build(List<ReplicaSpec> specs, CircuitBreaker.Config breaker, Clock clock);

    /** Marks {@code r} (one of this kind's) unhealthy, as the host's health checks would. */
    public abstract void makeUnhealthy(Replica r);

    /** Replaces the models {@code r} (one of this kind's) serves, as discovery would; empty: any model. */
    public abstract void serveModels(Replica r, Collection<String> models);

    /** A set of these replicas with the default breaker and the system clock. */
    public ReplicaSet build(List<ReplicaSpec> specs) {
        return build(specs, CircuitBreaker.Config.defaults(), Clock.systemUTC());
    }

    /** A set of replicas with these ids and the default cap. */
    public ReplicaSet of(String... ids) {
        return build(java.util.Arrays.stream(ids).map(ReplicaSpec::of).toList());
    }

    /** The sum of the members' in-flight counts. */
    public static int totalInFlight(ReplicaSet set) {
        return set.replicas().stream().mapToInt(Replica::inFlight).sum();
    }

    /** The sum of the pending prefill {@code router} counts on its pool's members. */
    public static long totalPending(Router router) {
        return router.replicas().replicas().stream()
                .mapToLong(router::pendingPrefill)
                .sum();
    }
}
