package dev.cart.proxy.routing;

import dev.cart.core.PromptKey;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.answer.AnswerReader;
import java.util.List;

/**
 * Learns the answer: after a chat request was served, records that the replica holds the prefix the
 * <em>next</em> turn of the conversation will start with, which is this request's messages followed by
 * the assistant's reply. (vLLM caches the blocks of the generated tokens too, so the replica holds it.)
 * Without this, the router only knows the prefix up to the last user message, and a follow-up turn
 * matches that much; with it, the follow-up matches its whole history.
 *
 * <p>How: cart-extract's {@link PromptExtractor#continuationKey} extends the routed request's key with
 * the reply, as an assistant message written the way clients send it back, from the key state the
 * extraction left (the body is neither read nor hashed again: only the reply is). The key is exactly the
 * start of what cart-extract will make of the next request, and {@link Router#record} is called with it.
 * The work is bounded by the reply (at most {@link AnswerReader#MAX_TEXT_CHARS}) and runs after the
 * response has reached the client, so it delays no byte of it. Nothing is learned when the request's last
 * message is already the assistant's (a prefill the reply continues: the client will merge them), or in
 * token mode when the request fell back to a character key or tokenizing the reply would have to wait.
 * Thread-safe: no state.
 */
public final class AnswerLearning {

    private AnswerLearning() {}

    /**
     * Records the continuation of {@code routed} with {@code reply} as held by {@code replica}. Returns the
     * result label for the metrics: {@code learned} or {@code unusable_request}.
     */
    public static String learn(
            Router router,
            RoutingKeys extraction,
            ExtractedRequest routed,
            List<? extends CharSequence> reply,
            Replica replica) {
        PromptKey key = routed == null ? null : extraction.continuationKey(routed, reply);
        if (key == null) {
            return "unusable_request";
        }
        router.record(key, replica);
        return "learned";
    }
}
