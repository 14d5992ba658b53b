package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.sync.RemoteLoad;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.Test;

/**
 * Other instances' load ({@link RemoteLoad}) reaches the policy through the interface it already reads:
 * each candidate's in-flight count, load and pending prefill are this instance's own plus the others',
 * holders in the match are those same views, and the decision, the slot and the tree still name the
 * pool's own replica.
 */
class RemoteLoadTest {

    /** The others' figures, changed by the test between decisions. */
    static class Shared implements RemoteLoad {
        final Map<String, Long> inFlight = new ConcurrentHashMap<>();
        final Map<String, Long> pending = new ConcurrentHashMap<>();

        @Override
        public long inFlight(String replicaId) {
            return inFlight.getOrDefault(replicaId, 0L);
        }

        @Override
        public long pendingPrefill(String replicaId) {
            return pending.getOrDefault(replicaId, 0L);
        }
    }

    /** A policy that records what it saw and then chooses with {@code choice}. */
    static final class Seeing implements RoutingPolicy {
        final List<String> seen = new ArrayList<>();
        final Function<RoutingContext, Choice> choice;

        Seeing(Function<RoutingContext, Choice> choice) {
            this.choice = choice;
        }

        @Override
        public Choice choose(RoutingContext ctx) {
            seen.clear();
            for (Replica r : ctx.candidates()) {
                seen.add(r.id() + " inFlight=" + r.inFlight() + " load=" + r.load() + " pending="
                        + ctx.pendingPrefill(r));
            }
            return choice.apply(ctx);
        }

        @Override
        public String name() {
            return "seeing";
        }
    }

    private static Router router(ManagedReplicaSet pool, RoutingPolicy policy, RemoteLoad load) {
        return Router.builder()
                .replicas(pool)
                .policy(policy)
                .remoteLoad(load)
                .firstTokenReports(true)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    private static ManagedReplicaSet pool() {
        return ManagedReplicaSet.builder().add("r0").add("r1").add("r2").build();
    }

    @Test
    void theLeastLoadedCountsTheOtherInstancesAndTheSlotIsTakenOnThePoolsOwnReplica() {
        ManagedReplicaSet pool = pool();
        Shared shared = new Shared();
        shared.inFlight.put("r0", 5L);
        shared.inFlight.put("r1", 2L);
        Seeing policy = new Seeing(ctx -> Choice.of(ctx.leastLoaded(), Reason.POLICY));
        try (Router router = router(pool, policy, shared)) {
            RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText("hello there", 64)));
            assertSame(pool.replicas().get(2), d.replica(), "the only replica nobody loads; the pool's own object");
            assertEquals(1, pool.replicas().get(2).inFlight(), "the slot is taken on the replica itself");
            assertEquals(
                    List.of(
                            "r0 inFlight=5 load=5 pending=0",
                            "r1 inFlight=2 load=2 pending=0",
                            "r2 inFlight=0 load=0 pending=0"),
                    policy.seen);
            // this instance's own count is live and exact; the others' figures are added to it
            RouteDecision second = router.choose(RouteRequest.of(PromptKey.ofText("hello again", 64)));
            assertTrue(policy.seen.contains("r2 inFlight=1 load=1 pending=11"), policy.seen::toString);
            assertSame(pool.replicas().get(2), second.replica(), "r2 (1 here) is still below r1 (2 elsewhere)");
            shared.inFlight.put("r1", 0L); // the other instance's requests there ended
            RouteDecision third = router.choose(RouteRequest.of(PromptKey.ofText("and again", 64)));
            assertSame(pool.replicas().get(1), third.replica(), "r1 now idle everywhere; r2 has 2 here");
            third.lease().close();
            d.lease().close();
            second.lease().close();
            assertEquals(0, pool.totalInFlight());
        }
    }

    @Test
    void holdersInTheMatchAreTheCandidatesViewsAndTheDecisionNamesTheReplica() {
        ManagedReplicaSet pool = pool();
        Shared shared = new Shared();
        Seeing policy = new Seeing(ctx -> {
            Match m = ctx.match();
            Match.Holding h = m.holders().get(0);
            assertTrue(ctx.isCandidate(h.replica()), "a holder is compared with the candidates by identity");
            return new Choice(h.replica(), Reason.CACHE_HIT, h.matchedLength());
        });
        PromptKey key = PromptKey.ofText("You are a careful assistant. ".repeat(10), 64);
        try (Router router = router(pool, policy, shared)) {
            Replica r1 = pool.replicas().get(1);
            router.record(key, r1);
            shared.inFlight.put("r1", 7L);
            shared.pending.put("r1", 900L);
            RouteDecision d = router.choose(RouteRequest.of(key));
            assertSame(r1, d.replica());
            assertEquals(Reason.CACHE_HIT, d.reason());
            assertEquals(key.blockCount() * 64, d.matchedLength());
            assertTrue(policy.seen.contains("r1 inFlight=7 load=7 pending=900"), policy.seen::toString);
            // the request's own prefill estimate is counted on the replica, not on the view
            assertEquals(d.prefillEstimate(), router.pendingPrefill(r1));
            d.lease().close();
            assertEquals(0, router.pendingPrefill(r1));
            assertEquals(0, pool.totalInFlight());
        }
    }

    @Test
    void theViewIsToldOfEveryChangeOfThisInstancesLoadWhenItHappens() {
        ManagedReplicaSet pool = pool();
        List<String> told = new ArrayList<>();
        Shared shared = new Shared() {
            /** What the router hands the view: this instance's pending prefill per replica. */
            private ToLongFunction<Replica> local;

            @Override
            public void localPendingPrefill(ToLongFunction<Replica> source) {
                local = source;
            }

            @Override
            public void localLoadChanged() {
                Replica r = pool.replicas().get(0);
                told.add("inFlight=" + r.inFlight() + " pending=" + local.applyAsLong(r));
            }
        };
        Seeing policy = new Seeing(ctx -> Choice.of(ctx.candidates().get(0), Reason.POLICY));
        try (Router router = router(pool, policy, shared)) {
            RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText("hello there", 64)));
            assertEquals(List.of("inFlight=1 pending=11"), told, "the slot and the prefill estimate, taken");
            d.lease().firstToken();
            assertEquals("inFlight=1 pending=0", told.get(told.size() - 1), "the prefill done");
            d.lease().close();
            assertEquals("inFlight=0 pending=0", told.get(told.size() - 1), "the slot given back");
        }
    }

    @Test
    void withoutRemoteLoadThePolicySeesThePoolsOwnReplicas() {
        ManagedReplicaSet pool = pool();
        List<Replica> seen = new ArrayList<>();
        RoutingPolicy policy = new Seeing(ctx -> {
            seen.addAll(ctx.candidates());
            return Choice.of(ctx.candidates().get(0), Reason.POLICY);
        });
        try (Router router = router(pool, policy, RemoteLoad.NONE)) {
            router.choose(RouteRequest.of(PromptKey.ofText("x", 64))).lease().close();
            assertSame(pool.replicas().get(0), seen.get(0));
        }
    }
}
