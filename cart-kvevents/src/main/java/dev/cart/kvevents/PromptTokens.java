package dev.cart.kvevents;

import org.jspecify.annotations.Nullable;

/**
 * A request's engine tokens, or why they could not be had (then the request routes in the approximate
 * mode, with the reason in its decision line).
 *
 * @param tokens  the token ids, or null on failure
 * @param replica the replica whose engine tokenized (or failed to), or null in process
 * @param nanos   how long it took
 * @param failure null on success, else a short reason ({@code timeout}, {@code status 500}, {@code connect},
 *                {@code body}, {@code no replica}, {@code bad request})
 */
public record PromptTokens(
        int @Nullable [] tokens,
        @Nullable String replica,
        long nanos,
        @Nullable String failure) {

    /**
     * Tokens obtained.
     *
     * @param tokens  the token ids
     * @param replica the replica whose engine tokenized, or null for an in-process tokenizer
     * @param nanos   how long it took
     * @return a success
     */
    public static PromptTokens of(int[] tokens, @Nullable String replica, long nanos) {
        return new PromptTokens(tokens, replica, nanos, null);
    }

    /**
     * A failure: the request routes approximately.
     *
     * @param replica the replica whose engine failed, or null (in process, or no replica to ask)
     * @param nanos   how long it took
     * @param failure a short reason (never the prompt's text)
     * @return a failure
     */
    public static PromptTokens failed(@Nullable String replica, long nanos, String failure) {
        return new PromptTokens(null, replica, nanos, failure);
    }

    /**
     * Whether the tokens were obtained.
     *
     * @return true when {@link #failure()} is null
     */
    public boolean ok() {
        return failure == null;
    }
}
