package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingListener;
import dev.cart.testing.ReplicaSets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Which replica serves which model: candidates per model, and the two reasons for no replica. */
class RouterModelsTest {

    private static final PromptKey KEY = PromptKey.ofText("system prompt ".repeat(20) + "question", 64);
    private static final Replica ELSEWHERE =
            ManagedReplicaSet.builder().add("x").build().replicas().get(0);

    /** a: base; b: base and the adapter; c: any model (not declared). */
    private static ReplicaSet pool(ReplicaSets kind) {
        return kind.build(
                List.of(
                        new ReplicaSpec("a", 8, 0, List.of("base")),
                        new ReplicaSpec("b", 8, 0, List.of("base", "sql-lora")),
                        new ReplicaSpec("c", 8, 0)),
                CircuitBreaker.Config.defaults(),
                Clock.systemUTC());
    }

    private static ReplicaSet declared(ReplicaSets kind) {
        return kind.build(
                List.of(
                        new ReplicaSpec("a", 8, 0, List.of("base")),
                        new ReplicaSpec("b", 8, 0, List.of("base", "sql-lora"))),
                CircuitBreaker.Config.defaults(),
                Clock.systemUTC());
    }

    private static Router router(ReplicaSet set, List<RouteDecision> heard) {
        SplittableRandom rnd = new SplittableRandom(7);
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .listener(new RoutingListener() {
                    @Override
                    public void onDecision(RouteDecision d) {
                        heard.add(d);
                    }
                })
                .build();
    }

    /** The replicas {@code n} requests for {@code model}, each with its own prompt, were routed to. */
    private static Set<String> routedIds(Router router, String model, int n) {
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < n; i++) {
            RouteDecision d = router.choose(
                    RouteRequest.of(PromptKey.ofText("prompt " + i, 64)).withModel(model));
            assertTrue(d.routed(), d.toString());
            ids.add(d.replica().id());
            d.lease().close();
        }
        return ids;
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aRequestGoesOnlyToReplicasServingItsModel(ReplicaSets kind) {
        try (Router router = router(pool(kind), new ArrayList<>())) {
            assertEquals(Set.of("b", "c"), routedIds(router, "sql-lora", 60));
            assertEquals(Set.of("a", "b", "c"), routedIds(router, "base", 60));
            assertEquals(Set.of("a", "b", "c"), routedIds(router, null, 60), "no model: any replica");
            assertEquals(Set.of("c"), routedIds(router, "other", 20), "only the replica that serves any model");
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void noReplicaServingTheModelIsItsOwnReasonApartFromAllBusy(ReplicaSets kind) {
        ReplicaSet set = declared(kind);
        List<RouteDecision> heard = new ArrayList<>();
        try (Router router = router(set, heard)) {
            RouteDecision unknown = router.choose(RouteRequest.of(KEY).withModel("unknown"));
            assertFalse(unknown.routed());
            assertNull(unknown.replica());
            assertEquals(Reason.MODEL_NOT_SERVED, unknown.reason());
            assertEquals("model_not_served", unknown.reason().code());
            assertEquals("unknown", unknown.model());
            assertSame(unknown, heard.get(heard.size() - 1), "the listener hears it like any decision");
            unknown.lease().close();

            Replica b = set.replicas().get(1);
            kind.makeUnhealthy(b);
            RouteDecision down = router.choose(RouteRequest.of(KEY).withModel("sql-lora"));
            assertEquals(Reason.NO_REPLICA, down.reason(), "served, but its only replica is down");
            RouteDecision excluded = router.choose(RouteRequest.of(KEY)
                    .withModel("base")
                    .excluding(set.replicas().get(0)));
            assertEquals(Reason.NO_REPLICA, excluded.reason(), "served, but excluded or down");
            assertEquals(
                    Reason.MODEL_NOT_SERVED,
                    router.choose(RouteRequest.of(KEY).withModel("unknown")).reason(),
                    "down or not, no replica serves it");
            assertEquals(0, ReplicaSets.totalInFlight(set));
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aFullReplicaServingTheModelIsNoReplicaNotModelNotServed(ReplicaSets kind) {
        ReplicaSet set = kind.build(
                List.of(new ReplicaSpec("a", 1, 0, List.of("m")), new ReplicaSpec("b", 1, 0, List.of("n"))),
                CircuitBreaker.Config.defaults(),
                Clock.systemUTC());
        try (Router router = router(set, new ArrayList<>())) {
            RouteDecision first = router.choose(RouteRequest.of(KEY).withModel("m"));
            assertEquals("a", first.replica().id());
            assertEquals(
                    Reason.NO_REPLICA,
                    router.choose(RouteRequest.of(KEY).withModel("m")).reason());
            first.lease().close();
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void modelsReplacedAtRunTimeApplyToTheNextDecision(ReplicaSets kind) {
        ReplicaSet set = declared(kind);
        try (Router router = router(set, new ArrayList<>())) {
            Replica a = set.replicas().get(0);
            Replica b = set.replicas().get(1);
            kind.serveModels(b, List.of("base")); // the adapter was unloaded from b
            assertEquals(
                    Reason.MODEL_NOT_SERVED,
                    router.choose(RouteRequest.of(KEY).withModel("sql-lora")).reason());
            kind.serveModels(a, List.of("base", "sql-lora")); // and loaded on a
            assertEquals(Set.of("a"), routedIds(router, "sql-lora", 20));
            kind.serveModels(b, List.of()); // b's models unknown again: any model
            assertEquals(Set.of("a", "b"), routedIds(router, "sql-lora", 40));
        }
    }

    @Test
    void aManagedMemberReportsItsModelsAndEachChangeOnce() {
        List<String> changes = new ArrayList<>();
        ManagedReplicaSet set = ManagedReplicaSet.builder()
                .add(ReplicaSpec.of("a").withModels(List.of("base", "sql-lora", "base")))
                .listener(new ManagedReplicaSet.Listener() {
                    @Override
                    public void onModelsChange(ManagedReplicaSet.Member replica, Set<String> models) {
                        changes.add(replica.id() + "=" + models);
                    }
                })
                .build();
        ManagedReplicaSet.Member a = set.replicas().get(0);
        assertEquals(List.of("base", "sql-lora"), List.copyOf(a.models()), "in order, repeats once");
        assertTrue(a.serves("sql-lora"));
        assertFalse(a.serves("other"));
        a.models(List.of("sql-lora", "base"));
        assertEquals(List.of(), changes, "the same set in another order is no change");
        a.models(List.of("base"));
        assertFalse(a.serves("sql-lora"));
        assertTrue(a.serves(String.valueOf(new char[] {'b', 'a', 's', 'e'})), "one model: equal, not the same");
        assertFalse(a.serves("bas"));
        assertThrows(IllegalArgumentException.class, () -> a.models(List.of("base", " ")));
        assertEquals(Set.of("base"), a.models(), "a refused replacement changes nothing");
        a.models(List.of());
        assertTrue(a.serves("anything"), "empty: any model");
        assertEquals(List.of("a=[base]", "a=[]"), changes);
    }

    @Test
    void anEmptyOrMissingModelIsNoModel() {
        assertNull(RouteRequest.of(KEY).withModel("").model());
        assertNull(RouteRequest.of(KEY).withModel(null).model());
        RouteRequest r = RouteRequest.of(KEY).withModel("m");
        assertEquals(
                "m",
                r.excluding(ELSEWHERE)
                        .attempt(1)
                        .withTokenization(Tokenization.CHARACTER_MODE)
                        .model(),
                "kept through every copy");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new ReplicaSpec("http://x", 1, 0, List.of("")));
        assertTrue(e.getMessage().contains("http://x"), e.getMessage());
    }

    /**
     * A request's match only counts routes learned for its own model. The router and the tree know no
     * model: the guarantee is in the key, whose first block hashes a marker of the model (cart-extract
     * writes {@code NUL "model:" digest NUL} first, and its ModelIsolationTest routes keys it extracts).
     * Here: keys made that way for two models, with the same prompt text after the marker, never match
     * each other's routes.
     */
    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void theSamePromptForAnotherModelMatchesNothingLearnedForTheFirst(ReplicaSets kind) {
        ReplicaSet set = kind.of("a", "b");
        try (Router router = router(set, new ArrayList<>())) {
            String prompt = "a long shared system prompt ".repeat(20);
            PromptKey forA = PromptKey.ofText("\0model:00000000000000a1\0" + prompt, 64);
            PromptKey forB = PromptKey.ofText("\0model:00000000000000b2\0" + prompt, 64);
            RouteDecision learned = router.choose(RouteRequest.of(forA).withModel("model-a"));
            learned.lease().close();
            RouteDecision again = router.choose(RouteRequest.of(forA).withModel("model-a"));
            assertEquals(Reason.CACHE_HIT, again.reason(), "the first model's own route is followed");
            again.lease().close();
            RouteDecision other = router.choose(RouteRequest.of(forB).withModel("model-b"));
            assertEquals(Reason.MISS, other.reason());
            assertEquals(0, other.matchedLength(), "nothing learned for another model counts");
            other.lease().close();
        }
    }
}
