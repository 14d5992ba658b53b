package dev.cart.proxy.routing;

import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.TokenCache;
import dev.cart.extract.Tokenizer;
import dev.cart.extract.Tokenizers;
import dev.cart.proxy.config.ProxyConfig;

/**
 * Turns a routed request body into its routing key with cart-extract's {@link PromptExtractor}, set up
 * from the configuration: {@code cache.block_chars} for the key's blocks (it must match the tree's),
 * token mode when {@code cache.tokenizer} is set, and {@code proxy.remote_media_url_policy} for requests
 * that would make a replica fetch remote media.
 */
public final class RoutingKeys {

    /** Characters of the key's stable start that the anchor hash covers (consistent-hash placement). */
    static final int ANCHOR_LIMIT = 1024;
    /** Deepest JSON nesting accepted in a body; deeper is a 400. */
    static final int MAX_NESTING_DEPTH = 64;

    private final PromptExtractor extractor;

    public RoutingKeys(ProxyConfig config) {
        this(config, null);
    }

    /** With {@code tokenizer} (when not null) as token mode's tokenizer instead of {@code cache.tokenizer}'s. */
    public RoutingKeys(ProxyConfig config, Tokenizer tokenizer) {
        ExtractOptions.Builder b = ExtractOptions.builder()
                .blockChars(config.cache().blockChars())
                .anchorLimit(ANCHOR_LIMIT)
                .remoteMediaUrlPolicy(config.proxy().remoteMediaUrlPolicy())
                .maxNestingDepth(MAX_NESTING_DEPTH);
        ProxyConfig.Tokens t = config.cache().tokens();
        if (t.on()) {
            b.tokenizer(tokenizer != null ? tokenizer : Tokenizers.jtokkit(t.tokenizer()))
                    .blockTokens(t.blockTokens())
                    .tokenCacheEntries(t.cacheEntries())
                    .tokenCacheMaxChars(t.cacheMaxChars());
            if (t.maxConcurrent() > 0) {
                b.maxConcurrentTokenizations(t.maxConcurrent());
            }
        }
        this.extractor = new PromptExtractor(b.build());
    }

    /** The token cache's cumulative figures, or null in character mode. */
    TokenCache.Stats tokenCacheStats() {
        return extractor.tokenCache() == null ? null : extractor.tokenCache().stats();
    }

    public ExtractedRequest extract(Endpoint endpoint, byte[] body) throws ExtractionException {
        return extractor.extract(endpoint, body);
    }

    /** The key of the body {@code array[offset, offset + length)}; the array is not kept. */
    public ExtractedRequest extract(Endpoint endpoint, byte[] array, int offset, int length)
            throws ExtractionException {
        return extractor.extract(endpoint, array, offset, length);
    }

    /** The key of {@code routed}'s conversation followed by {@code reply}, or null: {@link PromptExtractor#continuationKey}. */
    PromptKey continuationKey(ExtractedRequest routed, java.util.List<? extends CharSequence> reply) {
        return extractor.continuationKey(routed, reply);
    }
}
