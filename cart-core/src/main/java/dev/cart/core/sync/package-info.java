/**
 * The transport SPI through which several router instances routing one pool share what they learn ({@link
 * dev.cart.core.sync.RouteSync}, {@link dev.cart.core.sync.RouteEvent}) and their load ({@link
 * dev.cart.core.sync.RemoteLoad}). The {@code cart-redis} module implements it over Redis.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.cart.core.sync;

import org.jspecify.annotations.NullMarked;
