package dev.cart.sim;

import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;

/**
 * Makes the router's key for a request body exactly as the proxy does: {@link PromptExtractor} with the
 * default options (64-character blocks, message boundaries) over the JSON body bytes.
 */
final class RequestKeys {

    private static final PromptExtractor EXTRACTOR = new PromptExtractor(ExtractOptions.defaults());

    private RequestKeys() {
    }

    /** The routing key of {@code body} sent to {@code endpoint}. */
    static PromptKey key(Endpoint endpoint, byte[] body) {
        try {
            return EXTRACTOR.extract(endpoint, body).key();
        } catch (ExtractionException e) {
            throw new IllegalArgumentException("a workload request the proxy would refuse (" + e.code() + "): "
                    + e.getMessage(), e);
        }
    }
}
