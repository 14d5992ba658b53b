package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.cart.core.spi.ConfirmedPrefix;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The precise-mode hook: what a request's confirmed view covers replaces the tree's guess, nothing else. */
class ConfirmedPrefixTest {

    private static final PromptKey KEY = PromptKey.ofText("system prompt ".repeat(20) + "question", 64);
    private static final int FULL = KEY.blockCount() * 64;

    /** A view over replicas by id: covered ones with their length. */
    private static ConfirmedPrefix view(Map<String, Integer> covered) {
        return new ConfirmedPrefix() {
            @Override
            public boolean covers(Replica replica) {
                return covered.containsKey(replica.id());
            }

            @Override
            public int matchedLength(Replica replica) {
                return covered.get(replica.id());
            }
        };
    }

    private static Router router(ManagedReplicaSet set) {
        SplittableRandom rnd = new SplittableRandom(1);
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    @Test
    void aCoveredReplicaThatLostThePrefixIsNoLongerAHolder() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = router(set)) {
            RouteDecision first = router.choose(RouteRequest.of(KEY));
            first.lease().close();
            Replica holder = first.replica();
            Replica other = set.replicas().get(0) == holder
                    ? set.replicas().get(1)
                    : set.replicas().get(0);
            // the tree guesses the holder has it; its engine says it restarted and holds nothing, and the
            // other replica's engine says it holds two blocks
            RouteRequest r = RouteRequest.of(KEY).withConfirmed(view(Map.of(holder.id(), 0, other.id(), 128)));
            RouteDecision d = router.choose(r);
            assertSame(other, d.replica());
            assertEquals(Reason.CACHE_HIT, d.reason());
            assertEquals(128, d.matchedLength());
            d.lease().close();
            // a retry made from the request keeps the view
            RouteDecision retry = router.choose(r.excluding(other));
            assertSame(holder, retry.replica());
            assertEquals(Reason.MISS, retry.reason()); // the view says the holder has nothing
            retry.lease().close();
        }
    }

    @Test
    void anUncoveredReplicaKeepsTheTreesGuess() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = router(set)) {
            RouteDecision first = router.choose(RouteRequest.of(KEY));
            first.lease().close();
            Replica holder = first.replica();
            Replica other = set.replicas().get(0) == holder
                    ? set.replicas().get(1)
                    : set.replicas().get(0);
            RouteDecision d = router.choose(RouteRequest.of(KEY).withConfirmed(view(Map.of(other.id(), 64))));
            assertSame(holder, d.replica());
            assertEquals(FULL, d.matchedLength());
            d.lease().close();
        }
    }

    @Test
    void mergeOrdersHoldersLongestFirstAndCapsAtTheKey() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add("a").add("b").add("c").build();
        List<Replica> c = List.copyOf(set.replicas());
        Match tree = new Match(192, 640, List.of(new Match.Holding(c.get(0), 192), new Match.Holding(c.get(1), 64)));
        Match m = ConfirmedMatch.merge(tree, view(Map.of("b", 10_000, "c", 0)), c);
        assertEquals(640, m.matchedLength());
        assertEquals(List.of(new Match.Holding(c.get(1), 640), new Match.Holding(c.get(0), 192)), m.holders());
        assertSame(tree, ConfirmedMatch.merge(tree, null, c));
    }
}
