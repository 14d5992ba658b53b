/** The prefix tree and the key's bytes, exported to CART's own modules only: not API, may change at any time. */
@NullMarked
package dev.cart.core.internal;

import org.jspecify.annotations.NullMarked;
