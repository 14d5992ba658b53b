package dev.cart.proxy.config;

import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The {@code cache} section's policy and its settings, checked through the policies' own description of
 * their settings ({@link RoutingPolicyProvider#settings()}, {@link PolicySettings#problems}): the proxy
 * keeps no list of setting names or ranges of its own. A key that another available policy takes is
 * named as such; when the policy's name is unknown, each setting is still checked, by the first policy that
 * takes it ({@code cache_aware} first), so that the name's problem hides none of the others. The
 * providers are looked up once ({@link RoutingPolicyProvider#available()}); thread-safe.
 */
final class PolicyCheck {

    /** Where a problem goes: the key within {@code cache}, or null for the section as a whole. */
    interface Report {
        void problem(String key, String problem);
    }

    private static final Map<String, RoutingPolicyProvider> AVAILABLE = RoutingPolicyProvider.available();

    /** Every setting an available policy describes: the keys of {@code cache} handed to the policy. */
    static final Set<String> KEYS = keys();

    /**
     * The policy that checks the settings first when the configured name is unknown (a key it does not take
     * is checked by the first other policy that does).
     */
    private static final String FALLBACK_POLICY = "cache_aware";

    private PolicyCheck() {}

    private static Set<String> keys() {
        Set<String> keys = new TreeSet<>();
        for (RoutingPolicyProvider p : AVAILABLE.values()) {
            for (PolicySettings.Setting<?> setting : p.settings().list()) {
                keys.add(setting.name());
            }
        }
        return Collections.unmodifiableSet(keys);
    }

    /**
     * Checks the settings against the policy's description (every bad one is reported, with its range), then
     * makes the policy with all of them, for the rules that relate settings to each other.
     *
     * @param policy   the configured name
     * @param settings the settings the files set, values as parsed (Integer, Long, Double, String, Boolean)
     */
    static void check(String policy, Map<String, Object> settings, Report report) {
        RoutingPolicyProvider provider = AVAILABLE.get(policy);
        if (provider == null) {
            try {
                provider = RoutingPolicyProvider.named(policy); // its message names the close one and the rest
            } catch (IllegalArgumentException e) {
                report.problem("policy", e.getMessage());
                checkByReaders(settings, report);
                return;
            }
        }
        List<PolicySettings.Problem> problems = provider.settings().problems(settings);
        for (PolicySettings.Problem p : problems) {
            if (provider.settings().setting(p.key()) == null) {
                List<String> by = new ArrayList<>();
                readersOf(p.key()).forEach(r -> by.add(r.name()));
                report.problem(
                        p.key(),
                        "not a setting of policy '" + policy + "'"
                                + (by.isEmpty() ? "" : " (a setting of " + String.join(" and ", by) + ")"));
            } else {
                report.problem(p.key(), p.problem());
            }
        }
        if (problems.isEmpty()) {
            try {
                provider.create(settings);
            } catch (IllegalArgumentException e) {
                report.problem(null, e.getMessage());
            } catch (RuntimeException e) {
                report.problem("policy", "policy '" + policy + "' failed to start: " + e);
            }
        }
    }

    /** Each setting checked by the first policy that takes it, {@code cache_aware} first. */
    private static void checkByReaders(Map<String, Object> settings, Report report) {
        for (Map.Entry<String, Object> setting : settings.entrySet()) {
            List<RoutingPolicyProvider> readers = readersOf(setting.getKey());
            RoutingPolicyProvider reader = AVAILABLE.get(FALLBACK_POLICY);
            if (!readers.contains(reader)) {
                reader = readers.isEmpty() ? null : readers.get(0);
            }
            if (reader != null) {
                for (PolicySettings.Problem p :
                        reader.settings().problems(Map.of(setting.getKey(), setting.getValue()))) {
                    report.problem(p.key(), p.problem());
                }
            }
        }
    }

    /** The available policies that take the setting {@code key}, by name. */
    private static List<RoutingPolicyProvider> readersOf(String key) {
        List<RoutingPolicyProvider> by = new ArrayList<>();
        for (RoutingPolicyProvider p : AVAILABLE.values()) {
            if (p.settings().setting(key) != null) {
                by.add(p);
            }
        }
        return by;
    }
}
