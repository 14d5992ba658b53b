package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Match;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The two hooks flow control (cart-flow) needs: freed slots, and who holds a key's prefix. */
class FlowHooksTest {

    private static Router router(ManagedReplicaSet set, dev.cart.core.spi.RoutingPolicy policy) {
        return Router.builder()
                .replicas(set)
                .policy(policy)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    @Test
    void everySlotListenerHearsEachCloseOnceAfterTheSlotIsFree() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add(new ReplicaSpec("a", 1, 0)).build();
        try (Router router = router(set, TestPolicies.followTheTree())) {
            List<String> heard = new ArrayList<>();
            Consumer<LeaseCompletion> first = c -> heard.add("1:"
                    + c.decision().replica().id() + ":" + c.decision().replica().inFlight() + ":" + c.outcome());
            Consumer<LeaseCompletion> second = c -> heard.add("2");
            router.addSlotListener(first);
            router.addSlotListener(second);
            RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText("x".repeat(200), 64)));
            d.lease().failed();
            d.lease().close();
            d.lease().close();
            assertEquals(List.of("1:a:0:FAILURE", "2"), heard, "once per lease, with the slot already free");
            router.removeSlotListener(first);
            router.choose(RouteRequest.empty()).lease().close();
            assertEquals(List.of("1:a:0:FAILURE", "2", "2"), heard);
            // a decision without a replica has no slot to free
            RouteDecision held = router.choose(RouteRequest.empty());
            router.choose(RouteRequest.empty()).lease().close();
            held.lease().close();
            assertEquals(4, heard.size());
        }
    }

    @Test
    void aThrowingSlotListenerDoesNotBreakTheClose() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add(new ReplicaSpec("a", 1, 0)).build();
        try (Router router = router(set, TestPolicies.followTheTree())) {
            router.addSlotListener(c -> {
                throw new IllegalStateException("boom");
            });
            RouteDecision d = router.choose(RouteRequest.empty());
            d.lease().close();
            assertEquals(0, set.totalInFlight());
        }
    }

    @Test
    void prefixHoldersNamesTheReplicasTheTreeHasForAKey() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = router(set, TestPolicies.followTheTree())) {
            PromptKey key = PromptKey.ofText("y".repeat(256), 64);
            assertTrue(router.prefixHolders(key).holders().isEmpty());
            RouteDecision d = router.choose(RouteRequest.of(key));
            d.lease().close();
            Match m = router.prefixHolders(key);
            assertEquals(1, m.holders().size());
            assertSame(d.replica(), m.holders().get(0).replica());
            assertEquals(256, m.matchedLength());
            // a key of another format than the tree's matches nothing
            PromptKey tokens = PromptKey.ofTokens(new int[64], new int[0], 16, PromptKey.DEFAULT_ANCHOR_LIMIT);
            assertTrue(router.prefixHolders(tokens).holders().isEmpty());
        }
        try (Router blind = router(set, TestPolicies.leastLoadedIgnoringTree())) {
            PromptKey key = PromptKey.ofText("z".repeat(256), 64);
            blind.choose(RouteRequest.of(key)).lease().close();
            assertTrue(blind.prefixHolders(key).holders().isEmpty(), "a policy without the tree: no holders");
        }
    }
}
