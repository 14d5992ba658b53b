package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.RoutingPolicies;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PluggingTest {

    @Test
    void aThirdPartyPolicyOnTheClassPathIsSelectableByName() {
        assertTrue(RoutingPolicies.available().containsKey("first_candidate"));
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = Router.builder().replicas(set).policy("first_candidate")
                .evictionInterval(Duration.ZERO).build()) {
            for (int i = 0; i < 5; i++) {
                RouteDecision d = router.choose(RouteRequest.empty());
                assertSame(set.replicas().get(0), d.replica());
                d.lease().close();
            }
        }
    }

    @Test
    void settingsAreReadWithTheirNamesAndRanges() {
        CacheAwarePolicy p = CacheAwarePolicy.fromSettings(Map.of("threshold", 0.5, "match_abs_threshold", "4096",
                "balance_abs_threshold", 16, "balance_rel_threshold", 2, "guard", "bounded-load",
                "miss_placement", "consistent_hash", "max_tree_size", 10));
        assertEquals(0.5, p.threshold());
        assertEquals(4096, p.matchAbsThreshold());
        assertEquals(16, p.balanceAbsThreshold());
        assertEquals(2.0, p.balanceRelThreshold());
        assertEquals(CacheAwarePolicy.Guard.BOUNDED_LOAD, p.guard());
        assertEquals(CacheAwarePolicy.MissPlacement.CONSISTENT_HASH, p.missPlacement());
        assertTrue(p.prefillAware());
        assertFalse(CacheAwarePolicy.fromSettings(Map.of("prefill_aware", false)).prefillAware());
        assertFalse(CacheAwarePolicy.fromSettings(Map.of("prefill_aware", "false")).prefillAware());

        assertMessage("cache.threshold must be in [0, 1], was 1.5", Map.of("threshold", 1.5));
        assertMessage("cache.prefill_aware must be true or false, was 'sometimes'",
                Map.of("prefill_aware", "sometimes"));
        assertMessage("cache.balance_rel_threshold must be in [1, ", Map.of("balance_rel_threshold", 0.5));
        assertMessage("cache.guard must be one of abs_rel, median, bounded_load, was 'loose'", Map.of("guard", "loose"));
        assertMessage("cache.match_abs_threshold must be an integer, was 'lots'", Map.of("match_abs_threshold", "lots"));
        assertMessage("cache.hash_load_factor must be 0 (unbounded) or at least 1", Map.of("hash_load_factor", 0.5));
    }

    private static void assertMessage(String expected, Map<String, ?> settings) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RoutingPolicies.create("cache_aware", settings));
        assertTrue(e.getMessage().startsWith(expected), e.getMessage());
    }

    @Test
    void defaultsAreTheDocumentedOnes() {
        CacheAwarePolicy p = Policies.cacheAware();
        assertEquals(0.3, p.threshold());
        assertEquals(8192, p.matchAbsThreshold());
        assertEquals(8, p.balanceAbsThreshold());
        assertEquals(1.5, p.balanceRelThreshold());
        assertEquals(CacheAwarePolicy.Guard.ABS_REL, p.guard());
        assertEquals(CacheAwarePolicy.MissPlacement.LEAST_LOADED, p.missPlacement());
        assertTrue(p.prefillAware());
    }
}
