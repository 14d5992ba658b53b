package dev.cart.flow;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.Router;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/** A pool of managed replicas, a real router over it and flow control in front, on virtual time. */
final class Pool implements AutoCloseable {

    final VirtualTime time = new VirtualTime();
    final ManagedReplicaSet set;
    final Router router;
    final FlowControl flow;
    final List<FlowResult> admitted = new ArrayList<>();
    final RecordingListener events = new RecordingListener();
    /** Runs inside the policy's choice, before it answers (to race a cancellation with a hand-out). */
    volatile Consumer<RoutingContext> duringChoice = c -> {};

    Pool(int replicas, int maxLoad, FlowConfig config) {
        this(replicas, maxLoad, config, null);
    }

    /** @param policy null for the cache-aware policy's defaults */
    Pool(int replicas, int maxLoad, FlowConfig config, RoutingPolicy policy) {
        this(replicas, maxLoad, config, policy, List.of());
    }

    /** @param models the models every replica serves (empty: any) */
    Pool(int replicas, int maxLoad, FlowConfig config, RoutingPolicy policy, List<String> models) {
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
        for (int i = 0; i < replicas; i++) {
            b.add(new ReplicaSpec("r" + i, maxLoad, 0, models));
        }
        set = b.build();
        RoutingPolicy inner = policy != null ? policy : dev.cart.policy.Policies.cacheAware();
        RoutingPolicy wrapped = new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext context) {
                duringChoice.accept(context);
                return inner.choose(context);
            }

            @Override
            public boolean usesPrefixTree() {
                return inner.usesPrefixTree();
            }

            @Override
            public String name() {
                return inner.name();
            }
        };
        SplittableRandom rnd = new SplittableRandom(7);
        router = Router.builder()
                .replicas(set)
                .policy(wrapped)
                .random(() -> rnd)
                .ticker(time)
                .evictionInterval(Duration.ZERO)
                .build();
        flow = FlowControl.builder(router)
                .config(config)
                .ticker(time)
                .scheduler(time)
                .listener(events)
                .build();
    }

    ManagedReplicaSet.Member replica(int i) {
        return set.replicas().get(i);
    }

    int inFlight() {
        return set.totalInFlight();
    }

    /** A policy that takes the first candidate (deterministic). */
    static RoutingPolicy first() {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext context) {
                return Choice.of(context.candidates().get(0), Reason.POLICY);
            }

            @Override
            public boolean usesPrefixTree() {
                return false;
            }

            @Override
            public String name() {
                return "first";
            }
        };
    }

    /** Closes the lease of {@code r}'s decision (the request is done). */
    static void finish(FlowResult r) {
        RouteDecision d = r.decision();
        d.lease().succeeded();
        d.lease().close();
    }

    /** Closes one admitted lease on {@code replica}. */
    static Replica replicaOf(FlowResult r) {
        return r.decision().replica();
    }

    @Override
    public void close() {
        flow.close();
        router.close();
    }
}
