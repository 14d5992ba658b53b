package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A router that replaces another over a set keeping some of its members keeps their routes. */
class RouterReplacementTest {

    private static PromptKey key(String tenant) {
        return PromptKey.ofText(tenant + " system prompt ".repeat(20) + "question", 64);
    }

    private static Router.Builder router(ManagedReplicaSet set) {
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO);
    }

    @Test
    void keptMembersKeepTheirRoutesSlotsAndCircuitAndAForgottenReplicaLosesItsRoutes() {
        ManagedReplicaSet first =
                ManagedReplicaSet.builder().add("a").add("b").add("c").build();
        ManagedReplicaSet.Member a = first.member("a").orElseThrow();
        ManagedReplicaSet.Member b = first.member("b").orElseThrow();
        ManagedReplicaSet.Member c = first.member("c").orElseThrow();
        Router old = router(first).build();
        old.record(key("A"), a);
        old.record(key("B"), b);
        old.record(key("C"), c);
        RouteDecision held = old.choose(RouteRequest.of(key("A")));
        assertSame(a, held.replica());
        assertEquals(1, a.inFlight());

        ManagedReplicaSet second =
                ManagedReplicaSet.builder().keep(a).add("d").keep(b).build();
        assertEquals(
                List.of("a", "d", "b"),
                second.replicas().stream().map(ManagedReplicaSet.Member::id).toList());
        assertSame(a, second.member("a").orElseThrow());
        try (Router next = router(second).routesOf(old).build()) {
            old.close();
            next.forgetReplica(c);
            assertEquals(1, second.totalInFlight(), "the kept member's slot is carried, not copied");
            held.lease().close();
            assertEquals(0, a.inFlight());
            assertEquals(0, second.totalInFlight());

            RouteDecision d = next.choose(RouteRequest.of(key("A")));
            assertSame(a, d.replica());
            assertEquals(Reason.CACHE_HIT, d.reason());
            d.lease().close();
            RouteDecision e = next.choose(RouteRequest.of(key("B")));
            assertSame(b, e.replica());
            assertEquals(Reason.CACHE_HIT, e.reason());
            e.lease().close();
            RouteDecision f = next.choose(RouteRequest.of(key("C")));
            assertNotEquals(Reason.CACHE_HIT, f.reason(), "c's routes are gone");
            f.lease().close();
            assertTrue(TreeProbe.countsMatchRecount(next));
            assertEquals(0, second.totalInFlight());
        }
    }

    /**
     * The prefill a replaced router counted on a kept member still counts for the router that replaces it
     * (as when the count lived on the member), until the old request's first token takes it back.
     */
    @Test
    void aKeptMembersPendingPrefillCarriesOverToTheRouterThatReplacesTheOld() {
        ManagedReplicaSet first = ManagedReplicaSet.builder().add("a").build();
        ManagedReplicaSet.Member a = first.member("a").orElseThrow();
        Router old = router(first).firstTokenReports(true).build();
        RouteDecision computing = old.choose(RouteRequest.of(key("A")));
        assertEquals(key("A").length(), old.pendingPrefill(a));
        try (Router next = router(ManagedReplicaSet.builder().keep(a).build())
                .routesOf(old)
                .firstTokenReports(true)
                .build()) {
            old.close();
            assertEquals(key("A").length(), next.pendingPrefill(a), "the old router's request still counts");
            RouteDecision d = next.choose(RouteRequest.of(key("B")));
            assertEquals(key("A").length() + d.prefillEstimate(), next.pendingPrefill(a));
            computing.lease().firstToken();
            assertEquals(d.prefillEstimate(), next.pendingPrefill(a));
            d.lease().close();
            computing.lease().close();
            assertEquals(0, next.pendingPrefill(a));
        }
    }

    @Test
    void aMemberKeptTwiceOrBesideASpecOfTheSameIdIsRefused() {
        ManagedReplicaSet first = ManagedReplicaSet.builder().add("a").build();
        ManagedReplicaSet.Member a = first.member("a").orElseThrow();
        assertThrows(
                IllegalArgumentException.class,
                () -> ManagedReplicaSet.builder().keep(a).keep(a).build());
        assertThrows(
                IllegalArgumentException.class,
                () -> ManagedReplicaSet.builder().keep(a).add("a").build());
    }
}
