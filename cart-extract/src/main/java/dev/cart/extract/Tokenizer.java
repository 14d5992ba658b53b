package dev.cart.extract;

/**
 * Turns text into token ids, for keys in token mode ({@link ExtractOptions.Builder#tokenizer(Tokenizer)}).
 *
 * <p>Implementations must be thread-safe: one instance serves every request on every thread. They must
 * be deterministic (the same text always gives the same ids), must treat text that looks like a special
 * token ({@code <|endoftext|>}) as ordinary text, and should not log the text. An exception thrown by
 * {@link #encode} is not passed on: the request gets a character-mode key instead.
 *
 * <p>{@link Tokenizers#jtokkit(String)} gives the OpenAI encodings.
 */
public interface Tokenizer {

    /**
     * The token ids of {@code text}; never null. The caller does not modify the array.
     *
     * @param text the text of one key segment
     * @return its token ids
     */
    int[] encode(String text);

    /**
     * A short name for logs and metrics, e.g. {@code cl100k_base}.
     *
     * @return the name
     */
    String name();
}
