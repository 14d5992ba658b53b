package dev.cart.extract;

import dev.cart.core.PromptKey;

/**
 * What CART takes from a request body.
 *
 * @param key    the routing key (empty when the body has no prompt text)
 * @param model  the {@code model} field, or null when absent
 * @param stream whether the client asked for a streamed ({@code text/event-stream}) response
 */
public record ExtractedRequest(PromptKey key, String model, boolean stream) {
}
