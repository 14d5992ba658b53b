/**
 * CART's routing policies: the cache-aware policy of the specification ({@link dev.cart.policy.CacheAwarePolicy}),
 * one that predicts time to first token ({@link dev.cart.policy.PredictedTtftPolicy}), and the baselines, all made
 * by {@link dev.cart.policy.Policies} or by name through {@code Router.Builder.policy(String)}.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}. Every policy is thread-safe: the
 * router calls one instance from many routing threads at once.
 */
@NullMarked
package dev.cart.policy;

import org.jspecify.annotations.NullMarked;
