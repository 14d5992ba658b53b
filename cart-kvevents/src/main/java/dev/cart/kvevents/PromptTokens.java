package dev.cart.kvevents;

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
public record PromptTokens(int[] tokens, String replica, long nanos, String failure) {

    /** Tokens obtained. */
    public static PromptTokens of(int[] tokens, String replica, long nanos) {
        return new PromptTokens(tokens, replica, nanos, null);
    }

    /** A failure. */
    public static PromptTokens failed(String replica, long nanos, String failure) {
        return new PromptTokens(null, replica, nanos, failure);
    }

    /** True when the tokens were obtained. */
    public boolean ok() {
        return failure == null;
    }
}
