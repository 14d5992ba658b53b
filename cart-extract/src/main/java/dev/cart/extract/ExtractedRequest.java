package dev.cart.extract;

import dev.cart.core.PromptKey;
import dev.cart.core.Tokenization;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What CART takes from a request body: the routing key, the model, the stream flag, and how token mode
 * went. A request made by {@link PromptExtractor#extract} also carries what
 * {@link PromptExtractor#continuationKey} needs to extend its key with the assistant's reply without
 * reading the body again (the key builder's state: block hashes so far and the unfinished last block).
 * Outside this package only {@link PromptExtractor#extract} makes one. Immutable and thread-safe.
 */
public final class ExtractedRequest {

    private final PromptKey key;
    private final @Nullable String model;
    private final boolean stream;
    private final Tokenization tokenization;
    /** Null when the request was not made by an extractor, or its key cannot be continued. */
    private final @Nullable KeyState state;

    /** A request whose key was made in character mode, not by an extractor: its key cannot be continued. */
    ExtractedRequest(PromptKey key, @Nullable String model, boolean stream) {
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
    ExtractedRequest(
            PromptKey key,
            @Nullable String model,
            boolean stream,
            Tokenization tokenization,
            @Nullable KeyState state) {
        this.key = Objects.requireNonNull(key, "key");
        this.model = model;
        this.stream = stream;
        this.tokenization = Objects.requireNonNull(tokenization, "tokenization");
        this.state = state;
    }

    /**
     * The routing key.
     *
     * @return the key; empty when the body holds no prompt text
     */
    public PromptKey key() {
        return key;
    }

    /**
     * The {@code model} field, or null when absent.
     *
     * @return the model's name, or null
     */
    public @Nullable String model() {
        return model;
    }

    /**
     * Whether the client asked for a streamed response.
     *
     * @return true if the body's {@code stream} is true
     */
    public boolean stream() {
        return stream;
    }

    /**
     * How token mode went for this request ({@link Tokenization#CHARACTER_MODE} when it is off).
     *
     * @return how the key was made
     */
    public Tokenization tokenization() {
        return tokenization;
    }

    @Nullable
    KeyState state() {
        return state;
    }

    @Override
    public boolean equals(@Nullable Object o) {
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
