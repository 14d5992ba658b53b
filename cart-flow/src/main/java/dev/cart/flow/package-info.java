/**
 * Flow control in front of CART's router: an admission queue per model ({@link dev.cart.flow.FlowControl}),
 * ordered by priority band, tenant share of work and arrival, with cache affinity while waiting and early
 * shedding with 429. Off by default ({@link dev.cart.flow.FlowConfig#defaults()}).
 */
@NullMarked
package dev.cart.flow;

import org.jspecify.annotations.NullMarked;
