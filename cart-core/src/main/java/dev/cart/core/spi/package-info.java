/**
 * What a host or a policy implements: the pool ({@link dev.cart.core.spi.ReplicaSet} of {@link
 * dev.cart.core.spi.Replica}s), a {@link dev.cart.core.spi.RoutingListener} for metrics and logs, and a
 * {@link dev.cart.core.spi.RoutingPolicy} with the types the router hands it, found by name through a {@link
 * dev.cart.core.spi.RoutingPolicyProvider}.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}. The router calls these interfaces from
 * many routing threads at once: each interface states what its implementations must tolerate.
 */
@NullMarked
package dev.cart.core.spi;

import org.jspecify.annotations.NullMarked;
