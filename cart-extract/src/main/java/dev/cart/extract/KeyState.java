package dev.cart.extract;

import dev.cart.core.PromptKey;
import org.jspecify.annotations.Nullable;

/**
 * The state a routed request's key was left in, kept with its {@link ExtractedRequest} so that the key
 * of "this conversation followed by the reply" can be made by appending to a copy of it: the builder
 * (block hashes so far, the unfinished last block, boundaries, anchor), the endpoint, and the role of
 * the last message. The builder is never appended to after extraction, only copied, so one state may
 * be continued from several threads.
 *
 * @param endpoint the API the body was for
 * @param builder  the key's builder after the last character (a token builder in token mode)
 * @param lastRole the {@code role} of the last message, or null
 */
record KeyState(
        Endpoint endpoint,
        PromptKey.Builder builder,
        @Nullable String lastRole) {}
