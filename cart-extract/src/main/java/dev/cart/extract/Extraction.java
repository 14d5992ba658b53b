package dev.cart.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.BufferRecycler;
import dev.cart.core.PromptKey;
import dev.cart.core.Tokenization;
import java.io.CharConversionException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One request body turned into a {@link PromptKey}: a single forward pass of Jackson's streaming
 * parser over the body bytes, writing key characters as it goes. The key format is documented in the
 * module README; the constants below are its delimiters.
 *
 * <p>Design. The work is split along its jobs:
 * <ul>
 *   <li>this class: the body's top level (model, stream, the dialect's members), the UTF-8 check, and
 *       assembling the key. <b>Sections come in any order</b>: the key is model, tools, system, messages,
 *       but JSON objects are unordered (the OpenAI Python SDK sends {@code messages} first), so each
 *       section is written into its own {@link Segment} and the segments are replayed into the key
 *       builder at the end;</li>
 *   <li>{@link JsonCursor}: the parser, paths for errors, the bytes of a string, and re-reading an object
 *       whose {@code role}/{@code type} is not its first member;</li>
 *   <li>{@link ChatDialect}, {@link CompletionsDialect}, {@link MessagesDialect} (over {@link Dialect}):
 *       what each API's members mean;</li>
 *   <li>{@link MediaRefs}: media strings (digests of inline data, URLs, the remote-media policy);
 *       {@link CanonicalJson}: values that enter the key whole; {@link JsonText}: prompt text decoded
 *       straight from the body bytes; {@link Errors}: every error, and Jackson's mapped.</li>
 * </ul>
 * Errors are {@link ExtractionException}s from {@link Errors}; none ever carries prompt text or
 * client-supplied values. The body's UTF-8 is validated strictly ({@link Utf8}), since Jackson does not
 * check every sequence: the strings decoded into the key as they are decoded ({@link JsonText}), the rest
 * of the body after parsing; an invalid body gets {@code invalid_encoding} whatever else is wrong with it.
 *
 * <p>Not thread-safe: one instance per call, discarded afterwards.
 */
final class Extraction {

    // Key delimiters (see README "Key format").
    static final char MODEL = '\u0000';
    static final char SECTION = '\u0001';
    static final char LABEL_END = '\u0002';
    static final char ITEM = '\u001B';
    static final char FIELD = '\u001D';
    static final char ATTR = '\u001E';
    static final char SEP = '\u001F';
    /** A model marker's length: NUL, {@code model:} or {@code model;}, 16 hex digits, NUL. */
    static final int MARKER_LENGTH = 24;
    /** Shown at boundaries by {@link #keyText()}; never part of a key. */
    static final char BOUNDARY_MARK = '\u2016';

    private final JsonFactory factory;
    private final ExtractOptions opts;
    private final Endpoint endpoint;
    private final byte[] body;
    /** The body is {@code body[from, end)}. */
    private final int from;

    private final int end;
    private final JsonCursor in;
    private final Dialect dialect;

    private @Nullable String model;
    /** vLLM's {@code cache_salt}: a replica keeps the caches of different salts apart. */
    private @Nullable String cacheSalt;
    /** SGLang's {@code lora_path}: the adapter(s) of the request, a cache of their own. */
    private @Nullable String loraPath;

    private boolean stream;
    /** The role of the last message read (top-level messages only); written by the dialects. */
    @Nullable
    String lastRole;

    /** The extractor's tool lists seen recently. */
    final ToolsCache toolsCache;

    /** The extractor's model markers made recently. */
    private final ModelMarkers markers;

    /** The sections before the messages, null until first used (most bodies have no tools or system). */
    private @Nullable Segment tools;

    private @Nullable Segment functions;
    private @Nullable Segment system;
    final Segment main;

    /**
     * The messages' first chunk, taken from the parser's buffer recycler (a platform thread's own keeps it
     * in a field, see {@link BufferPool}; a shared one in one of its byte slots that a body parser never
     * uses: Base64 decoding) and given back by {@link #release()}: own text (escapes
     * decoded, short runs, delimiters) is most of a realistic body, and a chunk of the body's size made and
     * zeroed per request was the largest allocation of an extraction. Null when none was taken.
     */
    private byte @Nullable [] pooledChunk;

    private @Nullable BufferRecycler pooledFrom;

    /** The recycler slot of {@link #pooledChunk}: never used by a parser of a byte array. */
    private static final int CHUNK_SLOT = BufferRecycler.BYTE_BASE64_CODEC_BUFFER;
    /** The smallest chunk kept by a thread's own recycler (as Jackson's slot is never under 2,000 bytes). */
    static final int MIN_POOLED_CHUNK = 2048;
    /** The largest chunk kept in a recycler: a larger body grows its segment with chunks of its own. */
    static final int MAX_POOLED_CHUNK = 1 << 18;

    /** Over the whole of {@code body}. */
    Extraction(
            JsonFactory factory,
            ExtractOptions opts,
            Endpoint endpoint,
            byte[] body,
            ToolsCache toolsCache,
            ModelMarkers markers) {
        this(factory, opts, endpoint, body, 0, body.length, toolsCache, markers);
    }

    /** Over the body {@code body[from, from + length)}; the array's other bytes are never read. */
    Extraction(
            JsonFactory factory,
            ExtractOptions opts,
            Endpoint endpoint,
            byte[] body,
            int from,
            int length,
            ToolsCache toolsCache,
            ModelMarkers markers) {
        this.factory = factory;
        this.toolsCache = toolsCache;
        this.markers = markers;
        this.opts = opts;
        this.endpoint = endpoint;
        this.body = body;
        this.from = from;
        this.end = from + length;
        // the messages' long runs of plain text stay in the body (see Segment): the own text is the roles,
        // escapes and short strings, often a small part of the body; a second chunk is sized to the rest
        this.main = new Segment(Math.min(length >> 2, 1 << 10));
        this.in = new JsonCursor(factory, body, from, end, opts.maxNestingDepth());
        this.dialect = switch (endpoint) {
            case CHAT_COMPLETIONS -> new ChatDialect(this, in, opts);
            case COMPLETIONS -> new CompletionsDialect(this, in, opts);
            case MESSAGES -> new MessagesDialect(this, in, opts);
        };
    }

    /** Parses the body; then {@link #result()} or {@link #keyText()}. */
    void parse() throws ExtractionException {
        checkEncoding();
        JsonParser parser;
        try {
            parser = factory.createParser(body, from, end - from);
        } catch (IOException e) {
            throw Errors.invalidEncoding();
        }
        in.start(parser);
        if (parser instanceof BodyParser bp) {
            BufferRecycler r = bp.buffers();
            int length = end - from;
            int size = Math.min(MAX_POOLED_CHUNK, length + (length >> 1) + 64);
            // a platform thread's own recycler keeps it in a plain field; a shared one in an atomic slot
            byte[] c = r instanceof BufferPool.ThreadBuffers own
                    ? own.takeChunk(Math.max(size, MIN_POOLED_CHUNK))
                    : r.allocByteBuffer(CHUNK_SLOT, size);
            pooledFrom = r;
            pooledChunk = c;
            main.firstChunk(c);
        }
        try {
            readBody();
        } catch (JsonProcessingException e) {
            requireUtf8();
            throw Errors.mapJackson(e, in, opts.maxNestingDepth());
        } catch (CharConversionException e) {
            throw Errors.invalidEncoding();
        } catch (IOException e) {
            // Reading a byte array does no I/O; anything else Jackson reports is a malformed body.
            requireUtf8();
            throw Errors.invalidJson("");
        } catch (RuntimeException e) { // an ExtractionException among them
            requireUtf8();
            throw e;
        } finally {
            try {
                parser.close();
            } catch (IOException ignored) {
                // nothing to release for a byte array
            }
        }
        if (!in.isValidUtf8()) {
            throw Errors.invalidEncoding();
        }
    }

    /**
     * Gives the pooled chunk back: after {@link #result} or {@link #keyText()} (which replay the segments
     * that refer to it), or after a failed {@link #parse}. The extraction must not be used afterwards.
     */
    void release() {
        BufferRecycler r = pooledFrom;
        byte[] c = pooledChunk;
        pooledFrom = null;
        pooledChunk = null;
        if (r instanceof BufferPool.ThreadBuffers own && c != null) {
            own.giveChunk(c);
        } else if (r != null && c != null) {
            r.releaseByteBuffer(CHUNK_SLOT, c);
        }
    }

    /** A body that is not UTF-8 gets that error, whatever else went wrong reading it. */
    private void requireUtf8() throws ExtractionException {
        if (!Utf8.isValid(body, from, end)) {
            throw Errors.invalidEncoding();
        }
    }

    ExtractedRequest result() {
        PromptKey.Builder key = PromptKey.textBuilder(opts.blockChars(), opts.anchorLimit());
        key.reserve(units()); // the block hashes in one array of the key's size, handed to the key
        assemble(Segment.Sink.of(key));
        return new ExtractedRequest(
                key.build(), model, stream, Tokenization.CHARACTER_MODE, new KeyState(endpoint, key, lastRole));
    }

    /** The result in token mode, or in character mode when {@code tokens} is null. */
    ExtractedRequest result(@Nullable TokenMode tokens) {
        if (tokens == null) {
            return result();
        }
        TokenMode.Chunks chunks = new TokenMode.Chunks();
        assemble(chunks);
        TokenMode.Keyed k = tokens.key(chunks);
        PromptKey.Builder continued = k.builder();
        return new ExtractedRequest(
                k.key(),
                model,
                stream,
                k.tokenization(),
                continued == null ? null : new KeyState(endpoint, continued, lastRole));
    }

    /** The key's characters, with {@link #BOUNDARY_MARK} at each message boundary (for tests). */
    String keyText() {
        StringBuilder sb = new StringBuilder();
        assemble(new Segment.Sink() {
            @Override
            public void appendCesu8(byte[] bytes, int off, int len, int units) {
                sb.append(Cesu8.toString(bytes, off, len, units));
            }

            @Override
            public void boundary() {
                if (sb.length() > 0 && sb.charAt(sb.length() - 1) != BOUNDARY_MARK) {
                    sb.append(BOUNDARY_MARK);
                }
            }
        });
        return sb.toString();
    }

    /**
     * UTF-8 only (RFC 8259 §8.1): UTF-16/32 (zero bytes up front) is rejected here; invalid sequences once
     * the body is read ({@link #parse}), where the check skips the strings that were decoded, whose UTF-8
     * was checked then.
     */
    private void checkEncoding() throws ExtractionException {
        for (int i = from; i < Math.min(end, from + 4); i++) {
            if (body[i] == 0) {
                throw Errors.invalidEncoding();
            }
        }
    }

    private void readBody() throws IOException, ExtractionException {
        JsonToken t = in.next();
        if (t == null) {
            throw new ExtractionException(400, "empty_body", null, "request body is empty");
        }
        if (t != JsonToken.START_OBJECT) {
            throw new ExtractionException(400, "invalid_type", null, "request body must be a JSON object");
        }
        while ((t = in.next()) == JsonToken.FIELD_NAME) {
            String name = in.name();
            JsonToken v = in.next();
            switch (name) {
                case "model" -> model = modelName(v);
                case "cache_salt" -> cacheSalt = in.optString(v);
                case "lora_path" -> loraPath = adapters(v);
                case "stream" -> stream = in.optBoolean(v);
                default -> {
                    if (!dialect.member(name, v)) {
                        in.skip();
                    }
                }
            }
        }
        if (in.next() != null) {
            throw Errors.invalidJson(": unexpected data after the top-level object");
        }
        dialect.end();
    }

    /**
     * {@code model}: a string or null. A plain ASCII name equal to the last one read is that String, taken from
     * the extractor's markers without Jackson decoding it; any other is read by Jackson (and remembered when
     * plain ASCII).
     */
    private @Nullable String modelName(JsonToken v) throws IOException, ExtractionException {
        long range = in.plainAsciiRange();
        if (range < 0) {
            return in.optString(v);
        }
        int start = (int) (range >>> 32);
        int closing = (int) range;
        String known = markers.name(body, start, closing);
        if (known != null) {
            in.stringRead(closing);
            return known;
        }
        String name = in.string();
        markers.rememberName(name, body, start, closing);
        return name;
    }

    /**
     * {@code lora_path}: a string, null, or (SGLang, for a batch) a list of strings and nulls, which enters
     * the marker as its items joined by {@link #SEP}.
     */
    private @Nullable String adapters(JsonToken v) throws IOException, ExtractionException {
        if (v != JsonToken.START_ARRAY) {
            return in.optString(v);
        }
        StringBuilder sb = new StringBuilder("[");
        JsonToken t;
        while ((t = in.next()) != JsonToken.END_ARRAY) {
            String item = in.optString(t);
            sb.append(SEP).append(item == null ? "" : item);
        }
        return sb.toString();
    }

    /** The {@code tools} section, made on first use. */
    Segment tools() {
        Segment s = tools;
        if (s == null) {
            s = new Segment(256);
            tools = s;
        }
        return s;
    }

    /** The {@code functions} section (chat's older tool list), made on first use. */
    Segment functions() {
        Segment s = functions;
        if (s == null) {
            s = new Segment(16);
            functions = s;
        }
        return s;
    }

    /** The system prompt's section (messages), made on first use. */
    Segment system() {
        Segment s = system;
        if (s == null) {
            s = new Segment(256);
            system = s;
        }
        return s;
    }

    private static int length(@Nullable Segment s) {
        return s == null ? 0 : s.length();
    }

    private static boolean isEmpty(@Nullable Segment s) {
        return s == null || s.isEmpty();
    }

    /** The key's length in units: what {@link #assemble} appends. */
    private int units() {
        long n = (long) length(tools) + length(functions) + length(system) + main.length();
        return n == 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, n + MARKER_LENGTH);
    }

    /** Model marker, tools, system, messages: the key's fixed order, whatever the body's field order. */
    private void assemble(Segment.Sink key) {
        boolean hasTools = !isEmpty(tools) || !isEmpty(functions);
        if (!hasTools && isEmpty(system) && main.isEmpty()) {
            return;
        }
        byte[] marker = markers.marker(model, cacheSalt, loraPath);
        key.appendCesu8(marker, 0, marker.length, marker.length);
        if (hasTools) {
            if (tools != null) {
                tools.appendTo(key);
            }
            if (functions != null) {
                functions.appendTo(key);
            }
            key.boundary();
        }
        Segment sys = system;
        if (sys != null && !sys.isEmpty()) {
            sys.appendTo(key);
            key.boundary();
        }
        main.appendTo(key);
    }

    /** The head of the assistant message a reply enters the key as: {@code SOH "assistant" STX}. */
    static final String ASSISTANT = SECTION + "assistant" + LABEL_END;

    /**
     * The key text of an assistant message holding {@code reply}, as clients send it back: chat content is
     * one string (the pieces joined); Anthropic content is a string for one block, else text blocks, which
     * enter separated by {@link #SEP}. The message's boundary follows it (see {@link #appendAssistant}).
     */
    static String assistantText(List<? extends CharSequence> reply, Endpoint endpoint) {
        StringBuilder sb = new StringBuilder((int) Math.min(Integer.MAX_VALUE - 8, assistantUnits(reply, endpoint)));
        assistantPieces(reply, endpoint, sb::append);
        return sb.toString();
    }

    private static final String SEP_TEXT = String.valueOf(SEP);

    /** Hands {@link #assistantText}'s pieces to {@code to} in order: the head, then the reply's, separated. */
    private static void assistantPieces(
            List<? extends CharSequence> reply, Endpoint endpoint, Consumer<CharSequence> to) {
        to.accept(ASSISTANT);
        for (int i = 0; i < reply.size(); i++) {
            if (i > 0 && endpoint == Endpoint.MESSAGES) {
                to.accept(SEP_TEXT);
            }
            to.accept(reply.get(i));
        }
    }

    /** The length of {@link #assistantText} in UTF-16 units. */
    private static long assistantUnits(List<? extends CharSequence> reply, Endpoint endpoint) {
        long n = ASSISTANT.length();
        for (int i = 0; i < reply.size(); i++) {
            n += reply.get(i).length();
        }
        if (endpoint == Endpoint.MESSAGES && reply.size() > 1) {
            n += reply.size() - 1;
        }
        return n;
    }

    /**
     * Appends the assistant message of {@code reply} ({@link #assistantText}) to {@code key}, then its
     * boundary: the key {@code key.append(assistantText(reply, endpoint)).boundary()} makes, without making
     * that text. The key's room is reserved for the message's length first, so its block hashes go into one
     * array of the final size, and the reply's pieces are hashed from where they are
     * ({@link PromptKey.Builder#append(CharSequence)}): nothing grows with the reply but the key itself.
     */
    static PromptKey appendAssistant(PromptKey.Builder key, List<? extends CharSequence> reply, Endpoint endpoint) {
        key.reserve((int) Math.min(Integer.MAX_VALUE - 8, assistantUnits(reply, endpoint)));
        assistantPieces(reply, endpoint, key::append);
        return key.boundary().build();
    }

    /** {@code NUL "model:" <16 hex digits of the name's digest> NUL}: fixed length, so it fits block 0. */
    static String modelMarker(@Nullable String model) {
        return modelMarker(model, null, null);
    }

    /**
     * The marker of {@code model} with what else separates replica caches: a {@code cache_salt} and an
     * adapter ({@code lora_path}); null or empty ones are absent, and with neither the marker is the
     * model's alone. With either, the marker is {@code NUL "model;" h NUL} (a semicolon, not a colon) and
     * {@code h} digests every part length-prefixed ({@code length ":" model}, then {@code NUL name ":"
     * length ":" value} per present field), so no model name, salt or adapter can be spelled to give
     * another request's marker. The same fixed length.
     */
    static String modelMarker(@Nullable String model, @Nullable String cacheSalt, @Nullable String loraPath) {
        String m = model == null ? "" : model;
        boolean salted = (cacheSalt != null && !cacheSalt.isEmpty()) || (loraPath != null && !loraPath.isEmpty());
        StringBuilder in = new StringBuilder();
        if (salted) {
            in.append(m.length()).append(':').append(m);
            separate(in, "cache_salt", cacheSalt);
            separate(in, "lora_path", loraPath);
        } else {
            in.append(m);
        }
        byte[] b = in.toString().getBytes(StandardCharsets.UTF_8);
        return MODEL
                + (salted ? "model;" : "model:")
                + MediaDigest.of(b, 0, b.length).substring(1, 17)
                + MODEL;
    }

    private static void separate(StringBuilder in, String name, @Nullable String value) {
        if (value != null && !value.isEmpty()) {
            in.append(MODEL)
                    .append(name)
                    .append(':')
                    .append(value.length())
                    .append(':')
                    .append(value);
        }
    }
}
