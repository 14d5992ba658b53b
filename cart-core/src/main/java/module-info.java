/**
 * CART's router: the host API ({@code dev.cart.core}), what a host, a policy or a sync transport implements
 * ({@code dev.cart.core.spi}, {@code dev.cart.core.sync}). Routing policies are found by name among the
 * {@link dev.cart.core.spi.RoutingPolicyProvider}s of the module path (or {@code META-INF/services} on the
 * class path).
 */
module dev.cart.core {
    exports dev.cart.core;
    exports dev.cart.core.spi;
    exports dev.cart.core.sync;
    // the tree and the key's bytes, for CART's own modules only: not API
    exports dev.cart.core.internal to
            dev.cart.extract;

    requires org.slf4j;
    requires static com.google.errorprone.annotations;
    // the nullness annotations of the API (@Nullable in signatures): read by hosts that compile against it
    requires static transitive org.jspecify;

    uses dev.cart.core.spi.RoutingPolicyProvider;
}
