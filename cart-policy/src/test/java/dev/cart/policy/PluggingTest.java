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
import dev.cart.core.spi.RoutingPolicyProvider;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PluggingTest {

    @Test
    void aThirdPartyPolicyOnTheClassPathIsSelectableByName() {
        assertTrue(RoutingPolicyProvider.available().containsKey("first_candidate"));
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = Router.builder()
                .replicas(set)
                .policy("first_candidate")
                .evictionInterval(Duration.ZERO)
                .build()) {
            for (int i = 0; i < 5; i++) {
                RouteDecision d = router.choose(RouteRequest.empty());
                assertSame(set.replicas().get(0), d.replica());
                d.lease().close();
            }
        }
    }

    @Test
    void anUnknownNameSuggestsTheCloseOneAndListsTheOthers() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> Router.builder().policy("cache_awre"));
        assertTrue(
                e.getMessage()
                        .startsWith("unknown routing policy 'cache_awre' (did you mean 'cache_aware'?); available: "),
                e.getMessage());
        for (String name : RoutingPolicyProvider.available().keySet()) {
            assertTrue(e.getMessage().contains(name), e.getMessage());
        }
        assertEquals("round_robin", RoutingPolicyProvider.named("round_robin").name());
    }

    @Test
    void settingsAreReadWithTheirNamesAndRanges() {
        CacheAwarePolicy p = CacheAwarePolicy.fromSettings(Map.of(
                "threshold",
                0.5,
                "match_abs_threshold",
                "4096",
                "balance_abs_threshold",
                16,
                "balance_rel_threshold",
                2,
                "guard",
                "bounded-load",
                "miss_placement",
                "consistent_hash",
                "max_tree_size",
                10));
        assertEquals(
                CacheAwarePolicy.builder()
                        .threshold(0.5)
                        .matchAbsThreshold(4096)
                        .balanceAbsThreshold(16)
                        .balanceRelThreshold(2)
                        .guard(CacheAwarePolicy.Guard.BOUNDED_LOAD)
                        .missPlacement(CacheAwarePolicy.MissPlacement.CONSISTENT_HASH)
                        .build()
                        .config(),
                p.config());
        assertFalse(CacheAwarePolicy.fromSettings(Map.of("prefill_aware", false))
                .config()
                .prefillAware());
        assertFalse(CacheAwarePolicy.fromSettings(Map.of("prefill_aware", "false"))
                .config()
                .prefillAware());

        assertMessage("threshold must be in [0, 1], was 1.5", Map.of("threshold", 1.5));
        assertMessage("prefill_aware must be true or false, was 'sometimes'", Map.of("prefill_aware", "sometimes"));
        assertMessage("balance_rel_threshold must be in [1, ", Map.of("balance_rel_threshold", 0.5));
        assertMessage("guard must be one of abs_rel, median, bounded_load, was 'loose'", Map.of("guard", "loose"));
        assertMessage("match_abs_threshold must be an integer, was 'lots'", Map.of("match_abs_threshold", "lots"));
        assertMessage("hash_load_factor must be 0 (unbounded) or in [1, 1000]", Map.of("hash_load_factor", 0.5));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> RoutingPolicyProvider.named("consistent_hash").create(Map.of("hash_load_factor", 0.5)));
        assertTrue(e.getMessage().startsWith("hash_load_factor must be 0 (unbounded) or in [1, 1000]"), e.getMessage());
    }

    @Test
    void builderErrorsNameTheBuilderMethod() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> CacheAwarePolicy.builder().balanceRelThreshold(0.5));
        assertTrue(e.getMessage().startsWith("balanceRelThreshold must be in [1, "), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class, () -> CacheAwarePolicy.builder().matchAbsThreshold(0));
        assertTrue(e.getMessage().startsWith("matchAbsThreshold must be in [1, "), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Policies.consistentHash(0.5));
        assertTrue(e.getMessage().startsWith("loadFactor must be 0 (unbounded) or in [1, 1000]"), e.getMessage());
    }

    private static void assertMessage(String expected, Map<String, ?> settings) {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> RoutingPolicyProvider.named("cache_aware").create(settings));
        assertTrue(e.getMessage().startsWith(expected), e.getMessage());
    }

    @Test
    void defaultsAreTheDocumentedOnes() {
        assertEquals(
                new CacheAwarePolicy.Config(
                        0.3,
                        8192,
                        8,
                        1.5,
                        CacheAwarePolicy.Guard.ABS_REL,
                        2.0,
                        1.25,
                        CacheAwarePolicy.MissPlacement.LEAST_LOADED,
                        1.25,
                        true),
                Policies.cacheAware().config());
        assertEquals(
                Policies.cacheAware().config(),
                CacheAwarePolicy.fromSettings(Map.of()).config());
    }
}
