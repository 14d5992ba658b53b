package dev.cart.kvevents;

import java.util.List;

/**
 * Gives a request's prompt exactly as the engine tokenizes it: its chat template applied, special tokens
 * parsed as special. Matching the block index needs exactly these tokens; CART's own {@code Tokenizer}
 * (cart-extract) treats special tokens as text and renders no template, so it cannot be used here.
 *
 * <p>{@link EngineTokenizer} asks an engine ({@code POST /tokenize}); an operator who has a renderer and
 * tokenizer in process that they vouch match the engine's implements this interface instead. Called on the
 * request's thread; may block for the time it needs (I/O); thread-safe.
 */
@FunctionalInterface
public interface PromptTokenizer {

    /**
     * The engine tokens of {@code request}.
     *
     * @param request  the request's tokenize body, model and salt
     * @param replicas the replicas that may be asked (those serving the request's model), by id; an in-process
     *                 tokenizer ignores them
     * @return the tokens, or a failure with its reason (never null; never throws for a failure to tokenize)
     */
    PromptTokens tokenize(TokenizeRequest request, List<String> replicas);
}
