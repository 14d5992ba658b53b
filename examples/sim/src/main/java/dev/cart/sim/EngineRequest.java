package dev.cart.sim;

/**
 * One request inside a simulated engine: what it asks for and how far it has got. Owned by one
 * {@link Engine}; read the outcome fields only after {@link Sink#onFinished}.
 */
final class EngineRequest {

    /** Receives what happens to a request, on the engine's thread, at engine (model) time. */
    interface Sink {
        /** First scheduled: {@link EngineRequest#cachedTokens()} is known. */
        default void onAdmitted(EngineRequest request, long nanos) {}

        /** One token was generated; {@link EngineRequest#generated()} counts it. */
        default void onToken(EngineRequest request, long nanos) {}

        /** The last token was generated; the request has left the engine. */
        default void onFinished(EngineRequest request, long nanos) {}

        /** The engine refused the request (longer than the model's context). */
        default void onRejected(EngineRequest request, String message) {}
    }

    static final Sink NO_SINK = new Sink() {};

    final long[] blocks;
    /**
     * The token ids of the sequence {@link #blocks} hash (for the replica's KV events), or null when the
     * replica publishes none; with them, the adapter and the {@code cache_salt} the chain was seeded with.
     */
    int[] tokens;

    String lora;
    String salt;
    final int promptTokens;
    final int maxTokens;
    final Sink sink;

    long submitNanos = -1;
    long admittedNanos = -1;
    long firstTokenNanos = -1;
    long finishNanos = -1;
    int computed;
    int generated;
    int cachedTokens = -1;
    int hashedHeld;
    int privateHeld;
    int scheduled;
    int preemptions;
    boolean rejected;
    boolean aborted;

    /**
     * @param blocks       chained hashes of the full blocks the replica caches as it computes them: the
     *                     prompt's ({@code PromptKey.ofText(prompt, blockChars)}), or, to cache generated
     *                     tokens as vLLM V1 does, those of the prompt followed by the output the request
     *                     will generate (a block of output becomes cached once its tokens' KV is computed,
     *                     so at most {@code promptTokens + maxTokens - 1} tokens' worth)
     * @param promptTokens prompt length in tokens
     * @param maxTokens    tokens to generate, at least 1
     */
    EngineRequest(long[] blocks, int promptTokens, int maxTokens, Sink sink) {
        if (promptTokens < 1) {
            throw new IllegalArgumentException("a prompt has at least one token");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max_tokens must be at least 1, was " + maxTokens);
        }
        this.blocks = blocks;
        this.promptTokens = promptTokens;
        this.maxTokens = maxTokens;
        this.sink = sink;
    }

    /** Tokens of the sequence so far: the prompt plus what has been generated. */
    int known() {
        return promptTokens + generated;
    }

    int held() {
        return hashedHeld + privateHeld;
    }

    /** Prompt tokens found in the cache when first scheduled (vLLM's {@code cached_tokens}); -1 before. */
    int cachedTokens() {
        return cachedTokens;
    }

    int generated() {
        return generated;
    }

    /** Time to first token in engine nanoseconds, -1 until the first token. */
    long ttftNanos() {
        return firstTokenNanos < 0 ? -1 : firstTokenNanos - submitNanos;
    }

    boolean finished() {
        return finishNanos >= 0;
    }
}
