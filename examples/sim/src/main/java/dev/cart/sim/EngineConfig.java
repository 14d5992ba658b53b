package dev.cart.sim;

/**
 * The constants of one simulated vLLM replica. The defaults model Llama-3.1-8B-Instruct (BF16) on one
 * NVIDIA A100-SXM4-40GB under vLLM V1's defaults for the OpenAI server; {@code examples/sim/README.md}
 * gives the source of every figure.
 *
 * @param blockTokens       KV-cache block size in tokens (vLLM {@code --block-size}, 16)
 * @param charsPerToken     characters counted as one token in character mode (4)
 * @param cacheTokens       KV-cache capacity in tokens; rounded down to whole blocks
 * @param maxBatchedTokens  token budget of one engine step ({@code max_num_batched_tokens}, 2048 on A100)
 * @param maxNumSeqs        most requests running at once ({@code max_num_seqs}, 256)
 * @param stepFixedNanos    fixed cost of one engine step (weights read once per forward pass)
 * @param prefillTokenNanos cost of one prompt token computed in a step
 * @param decodeSeqNanos    cost of one sequence decoding one token in a step
 * @param maxModelLen       longest sequence (prompt plus completion) accepted, in tokens
 */
record EngineConfig(
        int blockTokens,
        int charsPerToken,
        long cacheTokens,
        int maxBatchedTokens,
        int maxNumSeqs,
        long stepFixedNanos,
        long prefillTokenNanos,
        long decodeSeqNanos,
        int maxModelLen) {

    /** vLLM's default KV block size. */
    static final int BLOCK_TOKENS = 16;
    /** Characters per token in character mode. */
    static final int CHARS_PER_TOKEN = 4;
    /** One block in characters: the block size of the replica's cache keys (64). */
    static final int BLOCK_CHARS = BLOCK_TOKENS * CHARS_PER_TOKEN;
    /** KV capacity of Llama-3.1-8B on an A100-40GB at gpu_memory_utilization 0.9 (derived, see README). */
    static final long CACHE_TOKENS = 150_000;
    /** vLLM V1 default max_num_batched_tokens for the OpenAI server on an A100. */
    static final int MAX_BATCHED_TOKENS = 2048;
    /** vLLM V1 default max_num_seqs for the OpenAI server on an A100. */
    static final int MAX_NUM_SEQS = 256;
    /** 13 ms: one decode step alone, from about 75 tokens/s single-stream decode on an A100-40GB. */
    static final long STEP_FIXED_NANOS = 13_000_000L;
    /** 50 us per prompt token: 20,000 prefill tokens/s. */
    static final long PREFILL_TOKEN_NANOS = 50_000L;
    /** 0.15 ms per decoding sequence: reading ~2k tokens of KV (128 KiB each) at 1.56 TB/s. */
    static final long DECODE_SEQ_NANOS = 150_000L;
    /** Llama-3.1's context length. */
    static final int MAX_MODEL_LEN = 131_072;

    EngineConfig {
        if (blockTokens < 1 || charsPerToken < 1 || maxBatchedTokens < 1 || maxNumSeqs < 1 || maxModelLen < 2) {
            throw new IllegalArgumentException("engine sizes must be positive");
        }
        if (cacheTokens < blockTokens) {
            throw new IllegalArgumentException(
                    "cache must hold at least one block of " + blockTokens + " tokens, was " + cacheTokens);
        }
        if (cacheTokens / blockTokens > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("cache too large: " + cacheTokens + " tokens");
        }
        if (stepFixedNanos < 0 || prefillTokenNanos < 0 || decodeSeqNanos < 0) {
            throw new IllegalArgumentException("step costs must not be negative");
        }
    }

    static EngineConfig defaults() {
        return new EngineConfig(
                BLOCK_TOKENS,
                CHARS_PER_TOKEN,
                CACHE_TOKENS,
                MAX_BATCHED_TOKENS,
                MAX_NUM_SEQS,
                STEP_FIXED_NANOS,
                PREFILL_TOKEN_NANOS,
                DECODE_SEQ_NANOS,
                MAX_MODEL_LEN);
    }

    EngineConfig withCacheTokens(long tokens) {
        return new EngineConfig(
                blockTokens,
                charsPerToken,
                tokens,
                maxBatchedTokens,
                maxNumSeqs,
                stepFixedNanos,
                prefillTokenNanos,
                decodeSeqNanos,
                maxModelLen);
    }

    EngineConfig withMaxNumSeqs(int seqs) {
        return new EngineConfig(
                blockTokens,
                charsPerToken,
                cacheTokens,
                maxBatchedTokens,
                seqs,
                stepFixedNanos,
                prefillTokenNanos,
                decodeSeqNanos,
                maxModelLen);
    }

    EngineConfig withMaxBatchedTokens(int tokens) {
        return new EngineConfig(
                blockTokens,
                charsPerToken,
                cacheTokens,
                tokens,
                maxNumSeqs,
                stepFixedNanos,
                prefillTokenNanos,
                decodeSeqNanos,
                maxModelLen);
    }

    /** Characters in one cache block. */
    int blockChars() {
        return blockTokens * charsPerToken;
    }

    /** Capacity in whole blocks. */
    int capacityBlocks() {
        return (int) (cacheTokens / blockTokens);
    }

    /** Longest sequence the engine accepts: the model's context, or the whole cache if smaller. */
    int effectiveMaxModelLen() {
        return (int) Math.min(maxModelLen, (long) capacityBlocks() * blockTokens);
    }

    /** Tokens of a prompt of {@code chars} characters (rounded up). */
    int tokensOf(int chars) {
        return (chars + charsPerToken - 1) / charsPerToken;
    }

    /** Duration of a step that computes {@code prefillTokens} prompt tokens and decodes {@code decodeSeqs}. */
    long stepNanos(int prefillTokens, int decodeSeqs) {
        return stepFixedNanos + prefillTokens * prefillTokenNanos + decodeSeqs * decodeSeqNanos;
    }
}
