package dev.cart.core;

/**
 * What the replica reported about a request it served: its prompt size and how much of the prompt it
 * found in its prefix cache ({@code usage.prompt_tokens} and {@code usage.prompt_tokens_details.cached_tokens}
 * in vLLM's OpenAI-style responses; {@code input_tokens} plus cache reads in Anthropic-style ones).
 * A field the replica did not report is {@link #UNKNOWN}, never zero.
 *
 * @param promptTokens prompt tokens, or {@link #UNKNOWN}
 * @param cachedTokens prompt tokens served from the prefix cache, or {@link #UNKNOWN}
 */
public record ServedUsage(long promptTokens, long cachedTokens) {

    /** A figure the replica did not report. */
    public static final long UNKNOWN = -1;

    private static final ServedUsage NONE = new ServedUsage(UNKNOWN, UNKNOWN);

    /**
     * Nothing reported.
     *
     * @return the usage with both figures {@link #UNKNOWN}
     */
    public static ServedUsage unknown() {
        return NONE;
    }

    /**
     * True when both figures were reported and make sense together.
     *
     * @return true if the usage can be compared with a prediction
     */
    public boolean known() {
        return promptTokens > 0 && cachedTokens >= 0 && cachedTokens <= promptTokens;
    }
}
