package dev.cart.sim;

import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.Tokenizers;

/**
 * Makes the router's key for a request body exactly as the proxy does: {@link PromptExtractor} over the
 * JSON body bytes, with the default options (character mode: 64-character blocks, message boundaries) or
 * in token mode ({@code cl100k_base}, 16-token blocks, per-segment tokenization with its token cache).
 *
 * <p>The token-mode extractor allows as many concurrent tokenizations as there could be callers, so a key
 * never falls back to characters for saturation: a run's keys are the same whatever runs beside it.
 */
final class RequestKeys {

    /** The encoding of token-mode keys. */
    static final String TOKEN_ENCODING = "cl100k_base";
    /** Token ids per block of a token-mode key: vLLM's block. */
    static final int BLOCK_TOKENS = PromptKey.DEFAULT_BLOCK_TOKENS;

    private static final PromptExtractor CHARS = new PromptExtractor(ExtractOptions.defaults());

    private RequestKeys() {}

    /** The token-mode extractor, created on first use (loading the encoding takes a moment). */
    private static final class Tokens {
        static final PromptExtractor EXTRACTOR = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(Tokenizers.jtokkit(TOKEN_ENCODING))
                .blockTokens(BLOCK_TOKENS)
                .maxConcurrentTokenizations(1 << 16)
                .build());
    }

    /** The character-mode routing key of {@code body} sent to {@code endpoint}. */
    static PromptKey key(Endpoint endpoint, byte[] body) {
        return key(PromptKey.Unit.CHARS, endpoint, body);
    }

    /** The routing key of {@code body} sent to {@code endpoint}, in characters or in tokens. */
    static PromptKey key(PromptKey.Unit unit, Endpoint endpoint, byte[] body) {
        PromptExtractor x = unit == PromptKey.Unit.TOKENS ? Tokens.EXTRACTOR : CHARS;
        ExtractedRequest r;
        try {
            r = x.extract(endpoint, body);
        } catch (ExtractionException e) {
            throw new IllegalArgumentException(
                    "a workload request the proxy would refuse (" + e.code() + "): " + e.getMessage(), e);
        }
        if (r.key().unit() != unit && !r.key().isEmpty()) {
            throw new IllegalStateException("a token-mode key fell back to characters: " + r.tokenization());
        }
        return r.key();
    }

    /** The block size of keys in {@code unit}, as the router's tree must be configured. */
    static int blockSize(PromptKey.Unit unit) {
        return unit == PromptKey.Unit.TOKENS
                ? BLOCK_TOKENS
                : ExtractOptions.defaults().blockChars();
    }
}
