/**
 * The host API: build a {@link dev.cart.core.Router} over a pool of replicas, key each request by its prompt
 * ({@link dev.cart.core.PromptKey}, usually made by {@code cart-extract}), {@linkplain
 * dev.cart.core.Router#choose choose} a replica, and close the returned {@link dev.cart.core.Lease} with what
 * the replica reported. {@link dev.cart.core.ManagedReplicaSet} is a ready pool with per-replica circuit
 * breakers for hosts without their own.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}. The router and the managed pool are
 * thread-safe; value types (requests, decisions, keys, reports) are immutable.
 */
@NullMarked
package dev.cart.core;

import org.jspecify.annotations.NullMarked;
