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
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.time.Duration;
import java.util.List;
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
        CacheAwarePolicy p = cacheAware(Map.of(
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
                "consistent_hash"));
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
        assertFalse(cacheAware(Map.of("prefill_aware", false)).config().prefillAware());
        assertFalse(cacheAware(Map.of("prefill_aware", "FALSE")).config().prefillAware());

        assertMessage("cache_aware: threshold must be in [0, 1], was 1.5", Map.of("threshold", 1.5));
        assertMessage(
                "cache_aware: prefill_aware must be true or false, was 'sometimes'",
                Map.of("prefill_aware", "sometimes"));
        assertMessage("cache_aware: balance_rel_threshold must be >= 1, was 0.5", Map.of("balance_rel_threshold", 0.5));
        assertMessage(
                "cache_aware: guard must be one of abs_rel, median, bounded_load, was 'loose'",
                Map.of("guard", "loose"));
        assertMessage(
                "cache_aware: match_abs_threshold must be an integer, was 'lots'",
                Map.of("match_abs_threshold", "lots"));
        assertMessage(
                "cache_aware: hash_load_factor must be 0 (unbounded) or in [1, 1000]", Map.of("hash_load_factor", 0.5));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> RoutingPolicyProvider.named("consistent_hash").create(Map.of("hash_load_factor", 0.5)));
        assertTrue(
                e.getMessage().startsWith("consistent_hash: hash_load_factor must be 0 (unbounded) or in [1, 1000]"),
                e.getMessage());
    }

    @Test
    void aMisspelledSettingIsRejectedNotIgnored() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> RoutingPolicyProvider.named("cache_aware").create(Map.of("treshold", 0.5)));
        assertEquals("cache_aware: unknown setting 'treshold' (did you mean 'threshold'?)", e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class, () -> Router.builder().policy("round_robin", Map.of("threshold", 0.5)));
        assertEquals("round_robin: unknown setting 'threshold' (round_robin takes no settings)", e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> Router.builder()
                        .policy(
                                "predicted_ttft",
                                new java.util.TreeMap<>(Map.of("guard", "median", "learning_rate", 2))));
        assertEquals(
                List.of(
                        "predicted_ttft: unknown setting 'guard'; settings of predicted_ttft: prior_prefill_ms_per_1k_units,"
                                + " prior_decode_ms_per_request, prior_base_ms, learning_rate, bounded_load_factor,"
                                + " bounded_load_slack",
                        "predicted_ttft: learning_rate must be in [0.000001, 1], was 2"),
                List.of(e.getMessage().split("\n")),
                "every problem at once");
    }

    /**
     * What each shipped provider describes is what its policy accepts: every number setting's bounds (and 0
     * where allowed) make a policy, and the defaults make the policy {@link Policies} builds.
     */
    @Test
    void eachShippedPolicyAcceptsWhatItsDescriptionAllows() {
        for (String name : List.of(
                "cache_aware",
                "predicted_ttft",
                "round_robin",
                "random",
                "least_loaded",
                "power_of_two",
                "consistent_hash")) {
            RoutingPolicyProvider provider = RoutingPolicyProvider.named(name);
            PolicySettings settings = provider.settings();
            assertEquals(name, settings.policy());
            assertEquals(name, provider.create(Map.of()).name());
            for (PolicySettings.Setting<?> s : settings.list()) {
                assertFalse(s.doc().isBlank(), s.name());
                assertEquals(List.of(), settings.problems(Map.of(s.name(), s.defaultValue())), s.toString());
                if (s.type() == PolicySettings.Type.NUMBER || s.type() == PolicySettings.Type.INTEGER) {
                    String allowed = s.allowed().replace("0 (unbounded) or ", "");
                    List<String> bounds = allowed.startsWith(">= ")
                            ? List.of(allowed.substring(3))
                            : List.of(allowed.substring(4, allowed.length() - 1).split(", "));
                    for (String bound : bounds) {
                        Object v = s.type() == PolicySettings.Type.INTEGER ? (Object) Integer.valueOf(bound) : bound;
                        assertEquals(name, provider.create(Map.of(s.name(), v)).name(), s + " at " + bound);
                    }
                    if (s.allowed().startsWith("0 (")) {
                        assertEquals(name, provider.create(Map.of(s.name(), 0)).name(), s + " at 0");
                    }
                }
            }
        }
        assertEquals(
                Policies.predictedTtft().config(),
                ((PredictedTtftPolicy)
                                RoutingPolicyProvider.named("predicted_ttft").create(Map.of()))
                        .config());
    }

    @Test
    void builderErrorsNameTheBuilderMethod() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> CacheAwarePolicy.builder().balanceRelThreshold(0.5));
        assertTrue(e.getMessage().startsWith("balanceRelThreshold must be >= 1, was 0.5"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class, () -> CacheAwarePolicy.builder().matchAbsThreshold(0));
        assertTrue(e.getMessage().startsWith("matchAbsThreshold must be >= 1, was 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Policies.consistentHash(0.5));
        assertTrue(e.getMessage().startsWith("loadFactor must be 0 (unbounded) or in [1, 1000]"), e.getMessage());
    }

    private static CacheAwarePolicy cacheAware(Map<String, ?> settings) {
        return (CacheAwarePolicy) RoutingPolicyProvider.named("cache_aware").create(settings);
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
        assertEquals(Policies.cacheAware().config(), cacheAware(Map.of()).config());
    }
}
