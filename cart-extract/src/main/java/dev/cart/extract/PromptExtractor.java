package dev.cart.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import dev.cart.core.PromptKey;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Turns the body of an OpenAI or Anthropic request into the {@link PromptKey} CART routes by.
 *
 * <pre>{@code
 * PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
 * try {
 *     ExtractedRequest req = extractor.extract(Endpoint.CHAT_COMPLETIONS, bodyBytes);
 *     router.choose(...req.key()...);
 * } catch (ExtractionException e) {
 *     // answer e.status() with {"error": {"message", "type", "code", "param"}}
 * }
 * }</pre>
 *
 * <p>What goes into a key, per endpoint, is documented in the module README. In short: a marker for
 * the model, then tool definitions, then the system prompt and every message in order, with a message
 * boundary after the tools, the system prompt and each message; inline media enters as a digest.
 *
 * <p>In token mode ({@link ExtractOptions#tokenizer()} set) the key is made of token ids: each segment
 * (model marker and tools, system prompt, each message) is tokenized on its own, through a cache of
 * recent segments ({@link #tokenCache()}), with at most {@link ExtractOptions#maxConcurrentTokenizations()}
 * tokenizations running at once; a request that finds them all busy gets a character key instead of
 * waiting. {@link ExtractedRequest#tokenization()} says which happened.
 *
 * <p>Design: one forward pass of Jackson's streaming parser over the bytes, never a tree; see
 * {@code Extraction}. Thread-safe: instances share one immutable, configured {@link JsonFactory}
 * (thread-safe by Jackson's contract) and, in token mode, one thread-safe {@code TokenMode} (tokenizer,
 * cache, permits); a call keeps everything else to itself, so one extractor serves every request.
 * Its buffer pool ({@code BufferPool}) keeps one set of buffers per platform thread and shares a concurrent
 * deque between virtual threads, which are never reused, so that they still reuse buffers. It never logs.
 */
public final class PromptExtractor {

    private final ExtractOptions options;
    private final JsonFactory factory;
    /** Tool lists seen recently, by their bytes (an agent sends the same list every turn). */
    private final ToolsCache toolsCache = new ToolsCache();
    /** Model markers made recently (a deployment serves a handful of models). */
    private final ModelMarkers markers = new ModelMarkers();
    /** Null in character mode. */
    private final @Nullable TokenMode tokens;

    /**
     * An extractor with {@code options}; make one per process (or per configuration) and share it.
     *
     * @param options how keys are made and what bodies are accepted
     * @throws NullPointerException if {@code options} is null
     */
    public PromptExtractor(ExtractOptions options) {
        this.options = Objects.requireNonNull(options, "options");
        this.tokens = options.tokenizer() == null ? null : new TokenMode(options); // null: character mode
        this.factory = new BodyParser.Factory(new JsonFactoryBuilder()
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                .streamReadConstraints(StreamReadConstraints.builder()
                        .maxNestingDepth(options.maxNestingDepth())
                        .maxStringLength(options.maxStringLength())
                        .build())
                .recyclerPool(new BufferPool()));
    }

    /**
     * The options it was made with.
     *
     * @return the options
     */
    public ExtractOptions options() {
        return options;
    }

    /**
     * The token cache, whose {@link TokenCache#stats()} are cumulative hits, misses, evictions and size;
     * null in character mode.
     *
     * @return the token cache, or null
     */
    public @Nullable TokenCache tokenCache() {
        return tokens == null ? null : tokens.cache();
    }

    /** The configured parser factory (for the timing harness). */
    JsonFactory factory() {
        return factory;
    }

    /**
     * Extracts the routing key, the model and the stream flag from a request body.
     *
     * @param endpoint which API the body is for
     * @param body     the whole request body, UTF-8 JSON; not modified, not retained
     * @return the key (empty when the body holds no prompt text, e.g. a completion prompt of {@code ""}),
     *         and in token mode how it was made
     * @throws ExtractionException when the body is malformed (status 400) or refers to remote media while
     *                             {@link ExtractOptions#remoteMediaUrlPolicy()} is set (that status)
     */
    public ExtractedRequest extract(Endpoint endpoint, byte[] body) throws ExtractionException {
        Objects.requireNonNull(body, "body");
        return extract(endpoint, body, 0, body.length);
    }

    /**
     * {@link #extract(Endpoint, byte[])} of the body {@code array[offset, offset + length)}: the rest of the
     * array is never read, so a caller may hand the backing array of a pooled buffer (no copy of the body of
     * its own). The bytes must not change until this returns; nothing of the array is kept after it.
     *
     * @throws IndexOutOfBoundsException when the range is not within the array
     * @param endpoint which API the body is for
     * @param array    holds the body, UTF-8 JSON; not modified, not retained
     * @param offset   the body's first byte in {@code array}
     * @param length   the body's length in bytes
     * @return the key, as {@link #extract(Endpoint, byte[])} returns it
     * @throws ExtractionException as {@link #extract(Endpoint, byte[])}
     */
    public ExtractedRequest extract(Endpoint endpoint, byte[] array, int offset, int length)
            throws ExtractionException {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(array, "array");
        Objects.checkFromIndexSize(offset, length, array.length);
        Extraction x = new Extraction(factory, options, endpoint, array, offset, length, toolsCache, markers);
        try {
            x.parse();
            return x.result(tokens);
        } finally {
            x.release();
        }
    }

    /**
     * The key of the next turn of a conversation: {@code routed}'s messages followed by the assistant's
     * {@code reply}, as {@link #extract} will make it from the next request's body, whose key starts with
     * it (the next body adds the reply as an assistant message, then the user's new message). Made from the
     * key state {@code routed} carries: the shared part is neither read nor hashed again; only the reply
     * is. For learning, after a response, which replica now holds the longer prefix.
     *
     * <p>The reply enters as the clients send it back: {@code {"role": "assistant", "content": text}}; on
     * {@code /v1/messages} several text blocks enter as an array of text blocks (one block and a plain
     * string give the same key). On {@code /v1/chat/completions} the pieces are joined into one text.
     *
     * @param routed a request returned by this extractor's {@link #extract}
     * @param reply  the reply's text: its pieces in order (chat: joined; messages: one text block each), which
     *               must not change until this returns (a {@code StringBuilder} is read where it is, not copied)
     * @return the key, or null when there is nothing to learn: a {@code /v1/completions} request, a
     *         request whose last message is already the assistant's (a prefill the reply continues), a
     *         request whose token-mode key fell back to characters, or (token mode) when tokenizing the
     *         reply would have to wait for a permit or failed
     */
    public @Nullable PromptKey continuationKey(ExtractedRequest routed, List<? extends CharSequence> reply) {
        Objects.requireNonNull(routed, "routed");
        Objects.requireNonNull(reply, "reply");
        KeyState state = routed.state();
        if (state == null || state.endpoint() == Endpoint.COMPLETIONS || "assistant".equals(state.lastRole())) {
            return null;
        }
        PromptKey.Builder b = state.builder().copy();
        if (routed.key().unit() == PromptKey.Unit.TOKENS) {
            int[] ids = tokens == null ? null : tokens.segmentIds(Extraction.assistantText(reply, state.endpoint()));
            if (ids == null) {
                return null;
            }
            return b.append(ids, 0, ids.length).boundary().build();
        }
        return Extraction.appendAssistant(b, reply, state.endpoint());
    }

    /** The key's characters with boundaries shown as U+2016, for tests of the key format. */
    String keyText(Endpoint endpoint, byte[] body) throws ExtractionException {
        Extraction x = new Extraction(factory, options, endpoint, body, toolsCache, markers);
        try {
            x.parse();
            return x.keyText();
        } finally {
            x.release();
        }
    }
}
