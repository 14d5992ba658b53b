/**
 * Route sync between CART router instances over a Redis Stream ({@link dev.cart.redis.RedisRouteSync}) and
 * their shared load over Redis pub/sub ({@link dev.cart.redis.RedisLoadView}), built on Lettuce.
 */
module dev.cart.redis {
    exports dev.cart.redis;

    requires transitive dev.cart.core;
    // Lettuce's jar names its module in its manifest (Automatic-Module-Name), it has no descriptor
    requires lettuce.core;
    requires org.slf4j;
    requires static org.jspecify;
}
