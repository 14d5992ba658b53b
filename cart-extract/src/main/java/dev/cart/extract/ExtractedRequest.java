package dev.cart.extract;

import dev.cart.core.Tokenization;

import dev.cart.core.PromptKey;

import java.util.Objects;

/**
 * What CART takes from a request body.
 *
 * @param key          the routing key (empty when the body has no prompt text). In token mode its
 *                     {@link PromptKey#unit() unit} is {@code TOKENS}, except when the request fell back
 *                     ({@link Tokenization#fellBack()}): then it is a character key, exactly the one
 *                     character mode would have made
 * @param model        the {@code model} field, or null when absent
 * @param stream       whether the client asked for a streamed ({@code text/event-stream}) response
 * @param tokenization how token mode went for this request ({@link Tokenization#CHARACTER_MODE} when it is off)
 */
public record ExtractedRequest(PromptKey key, String model, boolean stream, Tokenization tokenization) {

    public ExtractedRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(tokenization, "tokenization");
    }

    /** A request whose key was made in character mode. */
    public ExtractedRequest(PromptKey key, String model, boolean stream) {
        this(key, model, stream, Tokenization.CHARACTER_MODE);
    }
}
