package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The cache section's policy keys are the policies' own ({@link RoutingPolicyProvider#settings()}): every
 * setting any available policy describes is accepted with its default, and a bad value is refused in the
 * policy's own words, so the proxy keeps no list of its own.
 */
class PolicyKeysTest {

    private static final String WORKERS = "workers:\n  - url: http://a:1\n";

    private static String yaml(Object v) {
        return v instanceof Enum<?> e ? e.name().toLowerCase(Locale.ROOT) : String.valueOf(v);
    }

    @Test
    void everyDescribedSettingIsAcceptedWithItsDefault() throws Exception {
        int seen = 0;
        for (RoutingPolicyProvider p : RoutingPolicyProvider.available().values()) {
            for (PolicySettings.Setting<?> s : p.settings().list()) {
                ProxyConfig c = ConfigLoader.parse(WORKERS + "cache:\n  policy: " + p.name() + "\n  " + s.name() + ": "
                        + yaml(s.defaultValue()) + "\n");
                assertEquals(
                        List.of(s.name()),
                        List.copyOf(c.cache().policySettings().keySet()),
                        p + " " + s);
                seen++;
            }
        }
        assertFalse(seen < 16, "the shipped policies describe their settings: " + seen);
    }

    @Test
    void aBadValueIsRefusedInThePolicysOwnWords() {
        for (RoutingPolicyProvider p : RoutingPolicyProvider.available().values()) {
            for (PolicySettings.Setting<?> s : p.settings().list()) {
                Object bad = s.type() == PolicySettings.Type.INTEGER ? (Object) 1.5 : "nonesuch";
                List<String> problems = assertThrows(
                                ConfigException.class,
                                () -> ConfigLoader.parse(WORKERS + "cache:\n  policy: " + p.name() + "\n  " + s.name()
                                        + ": " + bad + "\n"))
                        .problems();
                String own = p.settings().problems(Map.of(s.name(), bad)).get(0).problem();
                assertEquals(List.of("cache." + s.name() + ": " + own), problems, p + " " + s);
            }
        }
    }

    @Test
    void aBaselineRefusesAnotherPolicysSetting() throws Exception {
        List<String> p = assertThrows(
                        ConfigException.class,
                        () -> ConfigLoader.parse(WORKERS + "cache:\n  policy: round_robin\n  threshold: 0.5\n"))
                .problems();
        assertEquals(List.of("cache.threshold: not a setting of policy 'round_robin' (a setting of cache_aware)"), p);
        assertEquals(
                Map.of("hash_load_factor", 2),
                ConfigLoader.parse(WORKERS + "cache:\n  policy: consistent_hash\n  hash_load_factor: 2\n")
                        .cache()
                        .policySettings());
    }
}
