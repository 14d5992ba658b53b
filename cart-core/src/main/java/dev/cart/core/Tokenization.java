package dev.cart.core;

import java.util.Objects;

/**
 * How one request's key was made with respect to token mode: the per-request figures a proxy reports
 * (tokenization latency, cache hits, fallbacks). Never holds prompt text.
 *
 * @param status         whether the key is in tokens, and if not, why
 * @param segments       how many key segments there were (model marker and tools, system prompt, each
 *                       message; each batch element of a completions prompt); 0 in character mode
 * @param cacheHits      how many of them the token cache supplied (every segment is looked up before a
 *                       permit is asked for, so this is counted for a fallback too)
 * @param tokenizerNanos time spent in the tokenizer for this request (0 when every segment
 *                       was cached, when the request fell back for saturation, and in character mode)
 */
public record Tokenization(Status status, int segments, int cacheHits, long tokenizerNanos) {

    /** What happened to a request with respect to token mode. */
    public enum Status {
        /** Token mode is off: the key is in characters, as configured. */
        CHARACTER_MODE,
        /** The key is in tokens. */
        TOKENIZED,
        /**
         * Token mode is on, but every tokenization permit was taken and some segment was not cached: the
         * request did not wait, and its key is in characters.
         */
        SATURATED,
        /** Token mode is on, but the tokenizer threw: the key is in characters. */
        FAILED
    }

    /** The figures of every request in character mode. */
    public static final Tokenization CHARACTER_MODE = new Tokenization(Status.CHARACTER_MODE, 0, 0, 0);

    /**
     * Checks that the status is given.
     *
     * @param status         whether the key is in tokens, and if not, why
     * @param segments       how many key segments there were, 0 or more
     * @param cacheHits      how many of them the token cache supplied, at most {@code segments}
     * @param tokenizerNanos time spent in the tokenizer for this request, 0 or more
     * @throws NullPointerException if {@code status} is null
     */
    public Tokenization {
        Objects.requireNonNull(status, "status");
    }

    /**
     * True when token mode is on but this request's key is in characters ({@link Status#SATURATED} or {@link Status#FAILED}).
     *
     * @return true for a key that fell back to characters
     */
    public boolean fellBack() {
        return status == Status.SATURATED || status == Status.FAILED;
    }

    /**
     * Segments that went through the tokenizer: {@code segments - cacheHits} when tokenized, else 0.
     *
     * @return the segments tokenized, 0 or more
     */
    public int tokenizedSegments() {
        return status == Status.TOKENIZED ? segments - cacheHits : 0;
    }
}
