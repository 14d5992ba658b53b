/**
 * CART inside the reactive Spring Cloud Gateway: auto-configured ({@link dev.cart.gateway.CartGatewayAutoConfiguration})
 * from {@code cart.*} ({@link dev.cart.gateway.CartProperties}), CART becomes the load balancer of the services it
 * names, with global filters that read each request's prompt key ({@link dev.cart.gateway.CartPromptFilter}), make
 * its lease follow the answer to its last byte ({@link dev.cart.gateway.CartLeaseFilter}) and answer a replica that
 * cannot be reached in the API's error shape ({@link dev.cart.gateway.CartConnectFailureFilter}). The routing state
 * of every service is {@link dev.cart.gateway.CartGatewayRouting}.
 */
@NullMarked
package dev.cart.gateway;

import org.jspecify.annotations.NullMarked;
