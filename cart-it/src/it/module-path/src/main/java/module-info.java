/** A host that embeds CART on the module path, with its own replicas and its own policy. */
module com.example.host {
    requires dev.cart.core;
    requires dev.cart.extract;

    provides dev.cart.core.spi.RoutingPolicyProvider with
            com.example.host.PrefixAffinityProvider;
}
