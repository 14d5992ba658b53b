package dev.cart.core.spi;

import dev.cart.core.Router;
import dev.cart.core.internal.Names;
import java.util.Collections;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * Makes a {@link RoutingPolicy} available by name, for configuration files and
 * {@link Router.Builder#policy(String, Map)}. This interface is also where a policy is looked up by name:
 * {@link #available()} and {@link #named(String)}, the one {@link ServiceLoader} lookup CART has.
 *
 * <p>Registering a provider: on the class path, list the implementation's binary name in a file
 * {@code META-INF/services/dev.cart.core.spi.RoutingPolicyProvider} of its jar; on the module path, the
 * provider's module declares {@code provides dev.cart.core.spi.RoutingPolicyProvider with
 * com.example.MyProvider;}. The implementation needs a public no-argument constructor. Providers are
 * found through the class loader that loaded this interface (and, on the module path, in the modules of
 * its layer); when two have the same name, the first one found is used.
 *
 * <p>Implementations must be thread-safe: a provider may be asked for policies from several threads.
 */
public interface RoutingPolicyProvider {

    /**
     * The name used in configuration, e.g. {@code cache_aware}: lower-case words joined by {@code _}.
     *
     * @return the name, the same on every call
     */
    String name();

    /**
     * The settings the policy takes by name, each with its type, default, allowed values and a line of
     * doc: what a configuration is checked against ({@link PolicySettings#problems}) before
     * {@link #create(PolicySettings.Values)} is called. None by default.
     *
     * @return the description of the settings (the same on every call)
     */
    default PolicySettings settings() {
        return PolicySettings.of(name());
    }

    /**
     * Creates a policy from settings already checked against {@link #settings()}: every value typed, in
     * range, and the default where the configuration gave none. A rule that relates settings to each
     * other is checked here.
     *
     * @param settings the checked settings
     * @return a new policy
     * @throws IllegalArgumentException if the settings break a rule that relates them to each other
     */
    RoutingPolicy create(PolicySettings.Values settings);

    /**
     * Creates a policy from settings as a configuration gives them (keys as in the proxy's {@code cache}
     * section, values as parsed from YAML or given by code): checks them against {@link #settings()},
     * then calls {@link #create(PolicySettings.Values)}.
     *
     * @param settings the settings by key; empty for the defaults
     * @return a new policy
     * @throws IllegalArgumentException carrying every problem at once, one per line, each starting with the
     *     policy's name ({@code cache_aware: unknown setting 'treshold' (did you mean 'threshold'?)},
     *     {@code cache_aware: threshold must be in [0, 1], was 1.5})
     */
    default RoutingPolicy create(Map<String, ?> settings) {
        return create(settings().values(settings));
    }

    /**
     * Every provider visible to this interface's class loader, by name (sorted). Scans the class path
     * (and module layer) on each call: call it when configuring, not per request.
     *
     * @return an unmodifiable map from each provider's {@link #name()} to the provider
     */
    static Map<String, RoutingPolicyProvider> available() {
        Map<String, RoutingPolicyProvider> all = new TreeMap<>();
        for (RoutingPolicyProvider p :
                ServiceLoader.load(RoutingPolicyProvider.class, RoutingPolicyProvider.class.getClassLoader())) {
            all.putIfAbsent(p.name(), p);
        }
        return Collections.unmodifiableMap(all);
    }

    /**
     * The provider registered under {@code name}.
     *
     * @param name a policy name, e.g. {@code cache_aware}
     * @return the provider
     * @throws IllegalArgumentException if no provider has that name; the message suggests a close name and
     *     lists those that exist: {@code unknown routing policy 'cache_awre' (did you mean 'cache_aware'?);
     *     available: cache_aware, ...}
     */
    static RoutingPolicyProvider named(String name) {
        Map<String, RoutingPolicyProvider> all = available();
        RoutingPolicyProvider p = all.get(name);
        if (p == null) {
            throw new IllegalArgumentException("unknown routing policy '" + name + "'"
                    + Names.didYouMean(String.valueOf(name), all.keySet()) + "; available: "
                    + String.join(", ", all.keySet()));
        }
        return p;
    }
}
