package dev.cart.extract;

import dev.cart.core.PromptKey;
import dev.cart.core.Tokenization;
import java.util.Objects;

/**
 * What CART takes from a request body: the routing key, the model, the stream flag, and how token mode
 * went. A request made by {@link PromptExtractor#extract} also carries what
 * {@link PromptExtractor#continuationKey} needs to extend its key with the assistant's reply without
 * reading the body again (the key builder's state: block hashes so far and the unfinished last block).
 * Outside this package only {@link PromptExtractor#extract} makes one. Immutable and thread-safe.
 */
public final class ExtractedRequest {

    private final PromptKey key;
    private final String model;
    private final boolean stream;
    private final Tokenization tokenization;
    /** Null when the request was not made by an extractor, or its key cannot be continued. */
    private final KeyState state;

    /** A request whose key was made in character mode, not by an extractor: its key cannot be continued. */
    ExtractedRequest(PromptKey key, String model, boolean stream) {
        this(key, model, stream, Tokenization.CHARACTER_MODE, null);
    }

    /**
     * @param key          the routing key (empty when the body has no prompt text). In token mode its
     *                     {@link PromptKey#unit() unit} is {@code TOKENS}, except when the request fell back
     *                     ({@link Tokenization#fellBack()}): then it is a character key, exactly the one
     *                     character mode would have made
     * @param model        the {@code model} field, or null when absent
     * @param stream       whether the client asked for a streamed ({@code text/event-stream}) response
     * @param tokenization how token mode went ({@link Tokenization#CHARACTER_MODE} when it is off)
     * @param state        what {@link PromptExtractor#continuationKey} continues, or null when it cannot
     */
    ExtractedRequest(PromptKey key, String model, boolean stream, Tokenization tokenization, KeyState state) {
        this.key = Objects.requireNonNull(key, "key");
        this.model = model;
        this.stream = stream;
        this.tokenization = Objects.requireNonNull(tokenization, "tokenization");
        this.state = state;
    }

    /** The routing key. */
    public PromptKey key() {
        return key;
    }

    /** The {@code model} field, or null when absent. */
    public String model() {
        return model;
    }

    /** Whether the client asked for a streamed response. */
    public boolean stream() {
        return stream;
    }

    /** How token mode went for this request ({@link Tokenization#CHARACTER_MODE} when it is off). */
    public Tokenization tokenization() {
        return tokenization;
    }

    KeyState state() {
        return state;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExtractedRequest r
                && r.key.equals(key)
                && Objects.equals(r.model, model)
                && r.stream == stream
                && r.tokenization.equals(tokenization);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, model, stream, tokenization);
    }

    /** Lengths and flags only, never prompt text. */
    @Override
    public String toString() {
        return "ExtractedRequest[key=" + key + ", model=" + model + ", stream=" + stream + ", tokenization="
                + tokenization + "]";
    }
}
