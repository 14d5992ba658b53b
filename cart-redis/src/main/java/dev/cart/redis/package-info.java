/**
 * Route sync and shared load between CART router instances over Redis. {@link dev.cart.redis.RedisRouteSync}
 * publishes what a router's prefix tree learns to one Redis Stream per pool and applies what the other
 * instances published; {@link dev.cart.redis.RedisLoadView} shares each instance's in-flight and
 * pending-prefill counts per replica over pub/sub. Routing never waits for Redis.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.cart.redis;

import org.jspecify.annotations.NullMarked;
