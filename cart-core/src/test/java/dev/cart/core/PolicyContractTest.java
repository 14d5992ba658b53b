package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.sync.RemoteLoad;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A policy must choose a candidate, and the tree's holders are not all candidates: on a retry the replica
 * that failed still holds the prefix. A policy that follows the top holder as the tree gives it works on
 * a first attempt and fails only on the retry path; one that reads {@link RoutingContext#candidateHolders()}
 * is right on both.
 */
class PolicyContractTest {

    private static final PromptKey KEY = PromptKey.ofText("The shared instructions of a long prompt. ".repeat(10), 64);

    /** Follows the longest holder among {@code holders(ctx)}, or the least loaded candidate on a miss. */
    private static RoutingPolicy following(Function<RoutingContext, List<Match.Holding>> holders) {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                List<Match.Holding> h = holders.apply(ctx);
                return h.isEmpty()
                        ? Choice.of(ctx.leastLoaded(), Reason.MISS)
                        : new Choice(
                                h.get(0).replica(), Reason.CACHE_HIT, h.get(0).matchedLength());
            }

            @Override
            public String name() {
                return "top_holder";
            }
        };
    }

    private static Router router(RoutingPolicy policy) {
        return router(policy, RemoteLoad.NONE);
    }

    /** With a remote load, candidates are per-decision views of the replicas, and so are the holders. */
    private static Router router(RoutingPolicy policy, RemoteLoad remote) {
        return Router.builder()
                .replicas(ReplicaSets.MANAGED.of("a", "b"))
                .policy(policy)
                .remoteLoad(remote)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    /** Another instance with one request in flight on each replica. */
    private static final RemoteLoad ONE_ELSEWHERE = new RemoteLoad() {
        @Override
        public long inFlight(String replicaId) {
            return 1;
        }

        @Override
        public long pendingPrefill(String replicaId) {
            return 0;
        }
    };

    @Test
    void aPolicyThatReturnsTheTopHolderFailsOnARetryWithAnErrorNamingTheContract() {
        try (Router router = router(following(ctx -> ctx.match().holders()))) {
            RouteDecision first = router.choose(RouteRequest.of(KEY));
            first.lease().close();
            RouteDecision again = router.choose(RouteRequest.of(KEY));
            assertSame(first.replica(), again.replica(), "a first attempt works");
            again.lease().close();

            RouteRequest retry = RouteRequest.of(KEY).excluding(first.replica()).attempt(1);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> router.choose(retry));
            assertTrue(
                    e.getMessage().contains("chose " + first.replica().id() + ", which is not a candidate"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("RoutingContext.candidateHolders()"), e.getMessage());
            assertEquals(0, ReplicaSets.totalInFlight(router.replicas()), "no slot was taken");
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void candidateHoldersMakeTheSamePolicyRightOnTheRetry(boolean remoteLoad) {
        try (Router router =
                router(following(RoutingContext::candidateHolders), remoteLoad ? ONE_ELSEWHERE : RemoteLoad.NONE)) {
            RouteDecision first = router.choose(RouteRequest.of(KEY));
            first.lease().close();
            RouteDecision hit = router.choose(RouteRequest.of(KEY));
            assertSame(first.replica(), hit.replica());
            assertEquals(Reason.CACHE_HIT, hit.reason());
            hit.lease().close();

            RouteDecision retry = router.choose(
                    RouteRequest.of(KEY).excluding(first.replica()).attempt(1));
            assertNotSame(first.replica(), retry.replica(), "the excluded holder is not chosen");
            assertEquals(Reason.MISS, retry.reason(), "for this request no candidate holds the prefix");
            retry.lease().close();
        }
    }
}
