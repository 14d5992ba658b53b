package dev.cart.extract.answer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.ContentReference;
import com.fasterxml.jackson.core.io.IOContext;
import com.fasterxml.jackson.core.util.BufferRecycler;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Reads what a replica's answer says about itself while its bytes pass to the client: the prompt-cache usage the
 * replica reports (for {@code Lease.succeeded(ServedUsage)}) and, when asked, the text of the answer (for learning
 * the next turn's prefix). A host feeds it the answer's bytes as they pass ({@link #accept(byte[], int, int)} or
 * {@link #accept(ByteBuffer)}), streamed ({@code text/event-stream}) or not (JSON), then calls {@link #finish} and
 * reads {@link #usage()}, {@link #text()} and {@link #textProblem()}. It never holds back, reorders or changes a
 * byte: the host writes each chunk to the client and hands the same bytes here.
 *
 * <pre>{@code
 * AnswerReader reader = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, contentType, contentEncoding, false);
 * // for each chunk written to the client:  if (reader != null) reader.accept(bytes, 0, n);
 * // at the end of the body:
 * ServedUsage usage = reader == null ? ServedUsage.unknown() : reader.finish();
 * lease.succeeded(usage);
 * }</pre>
 *
 * <p>Shapes read: OpenAI ({@code /v1/chat/completions}, {@code /v1/completions}): prompt =
 * {@code usage.prompt_tokens}, cached = {@code usage.prompt_tokens_details.cached_tokens}, the text of
 * {@code choices[0]}; Anthropic ({@code /v1/messages}), whose {@code input_tokens} counts only uncached input:
 * prompt = {@code input_tokens + cache_read_input_tokens + cache_creation_input_tokens}, cached =
 * {@code cache_read_input_tokens}, the text blocks of the message. A figure not reported stays
 * {@link ServedUsage#UNKNOWN}; a later report of a figure replaces an earlier one.
 *
 * <p>One class per job, wired here:
 * <ul>
 *   <li>{@code text/event-stream}: {@link SseLines} cuts the bytes into lines; each complete
 *       {@code data:} line holding a JSON object is parsed once, with Jackson's streaming parser (no
 *       tree). A line longer than {@link SseLines#MAX_LINE_BYTES} is skipped, not buffered.</li>
 *   <li>JSON: a body whose declared length arrives in one piece (the common case: a small answer read in
 *       one read) is parsed in place, at once, with no copy. Otherwise a copy is kept here up to
 *       {@link #MAX_JSON_BYTES} (sized from the declared length when there is one) and parsed once at the
 *       end; a larger body's copy is dropped at once and only its last {@link JsonTail#BYTES} bytes are kept, for the
 *       usage at its end ({@link JsonTail}); its text is not read.</li>
 *   <li>Anything else, or a compressed body: not observed ({@link #create} returns null).</li>
 *   <li>Each parsed object goes to the endpoint's {@link DialectReader}: {@link OpenAiReader} or
 *       {@link AnthropicReader}, which read the usage and put the answer's text into an
 *       {@link AnswerText}. An object that does not parse is counted ({@link #parseFailures()}).</li>
 *   <li>Once the answer's text is not wanted (answer learning off, or the answer already unusable: tool
 *       calls, a second choice, too long), only usage can matter, and an event is parsed only if its bytes
 *       hold {@code "usage"} or a &#92;u escape ({@link #mayNameUsage}): a JSON name is written either
 *       literally or with escapes, and letters can be escaped only as &#92;uXXXX, so an event without
 *       either cannot carry a {@code usage} member at any depth. Of an OpenAI stream's events only the last
 *       is parsed. An event that is not parsed is not checked either: a malformed one among them is not
 *       counted in {@link #parseFailures()} (it could have lost nothing the reader wants).</li>
 * </ul>
 *
 * <p>One parser per streamed answer: a blocking Jackson parser (it tokenizes faster than Jackson's
 * non-blocking one) over an {@link EventInput}, a stream that holds the bytes of one complete event at a time
 * and nothing between events. Each event is one root value for the parser: it is read to its closing brace,
 * and whatever the event holds after it is dropped ({@link JsonParser#releaseBuffered}), as a parser of its own
 * would ignore it. An event that does not parse (the parser read past its end, or met a bad token) leaves the
 * parser in no known state: it is closed, the event counted, and the next event gets a new parser. So each
 * event reads as it would with a parser of its own, without making one per event (its contexts, buffers and
 * symbol table: about 850 bytes and a tenth of the reader's time). The parser is closed at {@link #finish}
 * (closing merges the names it met into the factory's symbol table; an answer not finished only skips that).
 * Its buffers come from this reader's own {@link BufferRecycler}, with a 1 KB read buffer (an event is a few
 * hundred bytes; a longer one is read in pieces) rather than the factory's thread-local pool: nothing is
 * shared with another response, whichever thread reads this one. A JSON body is parsed once, within one call:
 * a small UTF-8 one by the calling thread's parser, which reads one body after another the same way
 * ({@link ThreadParser}), any other by a parser of its own from the factory's pool.
 *
 * <p>The template: the events of one streamed answer share their bytes but for the text (an OpenAI-compatible
 * server writes the members {@code id, object, created, model}, then {@code choices} with one choice of
 * {@code index} 0 whose {@code delta}'s {@code content} is the text, then the same tail; Anthropic's
 * {@code content_block_delta} events alike). An event parsed whole whose only effect was appending one text to a
 * block its own bytes name (no usage read, nothing made unavailable) becomes the template: its bytes up to the
 * text's opening quote (the head) and after its closing quote (the tail), found from the parser's token offsets.
 * While the text is wanted, an event whose first bytes are the head and last bytes the tail
 * ({@link Arrays#mismatch}), with between them one JSON string as Jackson reads it at the root (the parser is handed
 * only those bytes, and must end on the last), is read by appending that string: it has the template's token stream
 * but for that string, so a whole parse would append the same text and do nothing else. Anything else (another id,
 * the role delta, a finish reason, usage, tool calls, a second choice, a string that ends early or does not parse)
 * is parsed whole, and may become the template. Jackson still reads every value the reader uses; only bytes equal
 * to those of an event it has read are not tokenized again.
 *
 * <p>Cost: a streamed chunk costs a scan for line ends plus, per event, either two byte comparisons and Jackson's
 * reading of the text (by the template) or the tokenizing of the event by Jackson (a few hundred bytes: about a
 * third of a microsecond).
 *
 * <p>Concurrency: not thread-safe: one instance per answer, fed by one thread at a time (the thread relaying the
 * answer, or the HTTP client's threads one after the other, with a happens-before edge between them).
 */
public final class AnswerReader {

    /** Longest SSE line parsed; longer lines are skipped. */
    static final int MAX_LINE_BYTES = SseLines.MAX_LINE_BYTES;
    /** Largest JSON body parsed; a larger one is not observed. */
    static final int MAX_JSON_BYTES = 1024 * 1024;
    /** Longest answer text kept ({@link #text()}); a longer one is {@code too_long}. */
    public static final int MAX_TEXT_CHARS = AnswerText.MAX_CHARS;
    /** Longest template (an event's bytes but its text) kept. */
    static final int MAX_TEMPLATE_BYTES = 4096;

    static final Parsers JSON = new Parsers();

    /** A thread's scratch array for reading direct buffers ({@link #accept(ByteBuffer)}). */
    private static final ThreadLocal<byte[]> SLICE = ThreadLocal.withInitial(() -> new byte[8 * 1024]);

    static final OutputStream DISCARD = OutputStream.nullOutputStream();

    /** Jackson's factory, making parsers over a caller's {@link BufferRecycler}. */
    @SuppressWarnings("serial") // never serialized
    static final class Parsers extends JsonFactory {
        /** A parser reading {@code in}; its location never names the content (no text in errors). */
        JsonParser parser(InputStream in, BufferRecycler buffers) throws IOException {
            IOContext context = new IOContext(
                    _streamReadConstraints,
                    _streamWriteConstraints,
                    _errorReportConfiguration,
                    buffers,
                    ContentReference.redacted(),
                    false);
            return _createParser(in, context);
        }
    }

    /** One response's parsers' buffers: not pooled (closing a parser gives them back here), a 1 KB read buffer. */
    private static final class Buffers extends BufferRecycler {
        @Override
        protected int byteBufferLength(int ix) {
            return ix == BYTE_READ_IO_BUFFER ? 1024 : super.byteBufferLength(ix);
        }
    }

    private static final byte[] NO_BYTES = new byte[0];

    /**
     * The bytes of the event being parsed, as the stream the answer's parser reads: an event's bytes between
     * {@link #set} and {@link #clear}, the end of the stream after them (an event cut short fails to parse, as
     * with a parser of its own), nothing kept after {@link #clear}.
     */
    static final class EventInput extends InputStream {
        private byte[] b = NO_BYTES;
        private int at;
        private int end;

        void set(byte[] b, int off, int len) {
            this.b = b;
            this.at = off;
            this.end = off + len;
        }

        int remaining() {
            return end - at;
        }

        void clear() {
            b = NO_BYTES;
            at = 0;
            end = 0;
        }

        @Override
        public int read() {
            return at < end ? b[at++] & 0xff : -1;
        }

        @Override
        public int read(byte[] to, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (at >= end) {
                return -1;
            }
            int n = Math.min(len, end - at);
            System.arraycopy(b, at, to, off, n);
            at += n;
            return n;
        }
    }

    /** The streamed answer's parser's buffers; null for a JSON body (parsed once, with the factory's pool). */
    private final @Nullable BufferRecycler buffers;
    /** What the streamed answer's parser reads; null for a JSON body. */
    private final @Nullable EventInput input;
    /** The streamed answer's parser: made at the first event, dropped after an event that did not parse. */
    private @Nullable JsonParser events;

    /** The template: its event's bytes up to its text's opening quote, then those after its closing quote; or null. */
    private byte @Nullable [] template;
    /** Bytes of the template up to its text's opening quote, that included; 0 when there is none. */
    private int headLength;
    /** Bytes of the template after its text's closing quote. */
    private int tailLength;
    /** The block the template's text went to. */
    private int templateBlock;
    /** Events read by the template (for the tests). */
    private int templateReads;
    /** False: every event is parsed whole (the tests' reference). */
    private boolean templates = true;

    private final AnswerText answer;
    private final DialectReader reader;
    /** Null for a JSON body. */
    private final @Nullable SseLines lines;

    // JSON body copy
    private byte @Nullable [] json;
    private int jsonLength;
    private boolean jsonAbandoned;
    /** The tail of a JSON body too long to keep whole, for its usage; null otherwise. */
    private @Nullable JsonTail jsonTail;
    /** The JSON body's declared length, -1 when unknown. */
    private final long declaredLength;
    /** The JSON body was parsed in place as it arrived whole: later bytes (none, if it was framed right) are ignored. */
    private boolean jsonParsed;

    private int parseFailures;

    private AnswerReader(Endpoint endpoint, boolean sse, boolean collectReply, long declaredLength) {
        this.declaredLength = declaredLength;
        this.answer = new AnswerText(collectReply && endpoint != Endpoint.COMPLETIONS);
        this.reader = endpoint == Endpoint.MESSAGES ? new AnthropicReader(answer) : new OpenAiReader(answer, sse);
        this.input = sse ? new EventInput() : null;
        this.buffers = sse ? new Buffers() : null;
        this.lines = !sse
                ? null
                : new SseLines(new SseLines.Consumer() {
                    @Override
                    public void data(byte[] b, int off, int len) {
                        if (answer.collecting() || mayNameUsage(b, off, len)) {
                            event(b, off, len);
                        }
                    }

                    @Override
                    public void lineSkipped() {
                        answer.unavailable("too_long"); // a skipped event may have carried part of the answer
                    }
                });
    }

    /**
     * A reader for an answer to {@code endpoint}, or null when the answer cannot be read: no endpoint, a content
     * type that is neither JSON nor an event stream, or a content encoding other than identity.
     *
     * @param endpoint the routed endpoint the request went to (its dialect), or null
     * @param contentType the answer's {@code Content-Type}, or null (read as JSON)
     * @param contentEncoding the answer's {@code Content-Encoding}, or null
     * @param collectReply true to keep the answer's text ({@link #text()}); false reads usage only, which lets the
     *     reader skip every event that cannot carry usage
     * @return a new reader, or null when the answer cannot be read
     */
    public static @Nullable AnswerReader create(
            @Nullable Endpoint endpoint,
            @Nullable String contentType,
            @Nullable String contentEncoding,
            boolean collectReply) {
        return create(endpoint, contentType, contentEncoding, collectReply, -1);
    }

    /**
     * As {@link #create(Endpoint, String, String, boolean)}, for a body of {@code declaredLength} bytes (its
     * {@code Content-Length}; -1 when unknown or chunked): a JSON body that then arrives in one piece is parsed
     * where it lies, with no copy.
     *
     * @param endpoint        the routed endpoint the request went to (its dialect), or null
     * @param contentType     the answer's {@code Content-Type}, or null (read as JSON)
     * @param contentEncoding the answer's {@code Content-Encoding}, or null
     * @param collectReply    true to keep the answer's text ({@link #text()})
     * @param declaredLength  the body's {@code Content-Length}, or -1 when unknown
     * @return a new reader, or null when the answer cannot be read
     */
    public static @Nullable AnswerReader create(
            @Nullable Endpoint endpoint,
            @Nullable String contentType,
            @Nullable String contentEncoding,
            boolean collectReply,
            long declaredLength) {
        if (endpoint == null) {
            return null;
        }
        if (contentEncoding != null
                && !contentEncoding.isBlank()
                && !contentEncoding.trim().equalsIgnoreCase("identity")) {
            return null;
        }
        String ct = contentType == null ? "" : contentType;
        if (startsWithLowerCase(ct, "text/event-stream")) {
            return new AnswerReader(endpoint, true, collectReply, -1);
        }
        if (startsWithLowerCase(ct, "application/json") || ct.isEmpty()) {
            return new AnswerReader(endpoint, false, collectReply, declaredLength);
        }
        return null;
    }

    /**
     * Whether {@code s.toLowerCase(Locale.ROOT)} starts with {@code prefix} (lower-case ASCII letters and
     * punctuation, no {@code i} at its end and no {@code k}), without making the lower-case copy: the only
     * characters that lower-case to such a prefix's characters are those characters and their ASCII capitals
     * (the Kelvin sign lower-cases to {@code k}, and {@code U+0130} to {@code i} followed by a combining dot).
     */
    static boolean startsWithLowerCase(String s, String prefix) {
        int n = prefix.length();
        if (s.length() < n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            char p = prefix.charAt(i);
            if (c != p && !(p >= 'a' && p <= 'z' && c == p - ('a' - 'A'))) {
                return false;
            }
        }
        return true;
    }

    /**
     * The next {@code len} bytes of the answer, {@code b[off, off + len)}, in order; nothing of {@code b} is kept
     * after the call.
     *
     * @param b   holds the bytes
     * @param off the first byte in {@code b}
     * @param len the number of bytes, 0 or more
     */
    public void accept(byte[] b, int off, int len) {
        if (lines != null) {
            lines.accept(b, off, len);
        } else if (jsonTail != null) {
            jsonTail.add(b, off, len);
        } else if (!jsonAbandoned && !jsonParsed) {
            if (jsonLength == 0 && len == declaredLength && len <= MAX_JSON_BYTES) {
                jsonParsed = true; // the whole body, in one piece: parsed where it lies
                parse(b, off, len);
                return;
            }
            if ((long) jsonLength + len > MAX_JSON_BYTES) {
                jsonAbandoned = true; // only its tail is kept now, for the usage at its end
                jsonTail = new JsonTail();
                if (json != null) {
                    jsonTail.add(json, 0, jsonLength);
                }
                jsonTail.add(b, off, len);
                json = null;
                answer.unavailable("too_long");
                return;
            }
            if (json == null) {
                json = new byte
                        [(int) Math.min(
                                MAX_JSON_BYTES,
                                Math.max(len, declaredLength > 0 ? declaredLength : Math.max(1024, len)))];
            } else if (jsonLength + len > json.length) {
                json = Arrays.copyOf(json, Math.min(MAX_JSON_BYTES, Math.max(jsonLength + len, json.length * 2)));
            }
            System.arraycopy(b, off, json, jsonLength, len);
            jsonLength += len;
        }
    }

    /**
     * The next bytes of the answer: {@code b}'s remaining bytes, from its position to its limit (its position is
     * not moved, nothing of it is kept). A direct buffer is read in slices of a scratch array of the calling thread.
     *
     * @param b the bytes between its position and its limit
     */
    public void accept(ByteBuffer b) {
        int n = b.remaining();
        if (n == 0) {
            return;
        }
        if (b.hasArray()) {
            accept(b.array(), b.arrayOffset() + b.position(), n);
            return;
        }
        byte[] slice = SLICE.get();
        for (int from = 0; from < n; ) {
            int k = Math.min(slice.length, n - from);
            b.get(b.position() + from, slice, 0, k);
            accept(slice, 0, k);
            from += k;
        }
    }

    /**
     * The body ended normally: parses what is pending (a JSON body, a last SSE line without its newline) and
     * returns {@link #usage()}.
     *
     * @return what the replica reported about its cache ({@link #usage()})
     */
    public ServedUsage finish() {
        if (lines != null) {
            lines.finish();
            closeEvents();
        } else if (jsonTail != null) {
            jsonTail.finish(reader);
            jsonTail = null;
        } else if (!jsonAbandoned && json != null) {
            parse(json, 0, jsonLength);
            json = null;
        }
        return usage();
    }

    /**
     * What the replica reported, {@link ServedUsage#UNKNOWN} for each field it did not.
     *
     * @return the usage; {@link ServedUsage#unknown()}-like fields where it reported nothing
     */
    public ServedUsage usage() {
        return reader.usage();
    }

    /**
     * The answer's text blocks (one for OpenAI; one per text block for Anthropic), or null when it is not
     * available as plain text (see {@link #textProblem()}).
     */
    @Nullable
    List<String> reply() {
        return answer.text();
    }

    /**
     * The answer's text blocks (one for OpenAI; one per text block for Anthropic) as the reader holds them, without
     * a copy, or null when the text is not available (see {@link #textProblem()}). Read once the answer is complete:
     * the text changes if more of the answer is read.
     *
     * @return the text blocks (unmodifiable), or null
     */
    public @Nullable List<? extends CharSequence> text() {
        return answer.held();
    }

    /**
     * Why {@link #text()} is null: {@code not_collected}, {@code too_long}, {@code not_text} (tool calls, non-text
     * blocks), {@code several_choices}, {@code empty}; null when the text is available.
     *
     * @return the reason, or null
     */
    public @Nullable String textProblem() {
        return answer.problem();
    }

    /**
     * Events (or the JSON body) that started as a JSON object but could not be parsed: what they said about
     * usage or the reply is lost ({@code cart_response_parse_failures_total}). Only events that were parsed are
     * counted: once the text is not wanted, those that cannot carry usage are not parsed.
     *
     * @return the count, 0 or more
     */
    public int parseFailures() {
        return parseFailures;
    }

    /** This reader parses every event whole, as the reference the template is checked against; returns it. */
    AnswerReader withoutTemplate() {
        templates = false;
        return this;
    }

    /** Events read by the template rather than parsed whole. */
    int templateReads() {
        return templateReads;
    }

    /**
     * Whether {@code b[off, off + len)} may hold a member named {@code usage}: it holds {@code "usage"}, or a
     * &#92;u escape (which may spell a letter of a name). False only when no JSON object written there can
     * have such a member; true may be wrong (the text of a value), which costs only a parse.
     */
    static boolean mayNameUsage(byte[] b, int off, int len) {
        int end = off + len;
        for (int i = SseLines.indexOf(b, off, end, (byte) 'u');
                i >= 0;
                i = SseLines.indexOf(b, i + 1, end, (byte) 'u')) {
            if (i > off && b[i - 1] == '\\') {
                return true;
            }
            if (i > off
                    && b[i - 1] == '"'
                    && i + 5 < end
                    && b[i + 1] == 's'
                    && b[i + 2] == 'a'
                    && b[i + 3] == 'g'
                    && b[i + 4] == 'e'
                    && b[i + 5] == '"') {
                return true;
            }
        }
        return false;
    }

    /**
     * Reads one event: by the template when it fits ({@link #byTemplate}), else parsed whole ({@link #parseEvent}),
     * and an event parsed whole that only appended a text becomes the template.
     */
    private void event(byte[] b, int off, int len) {
        if (headLength > 0 && templates && answer.collecting() && byTemplate(b, off, len)) {
            return;
        }
        parseEvent(b, off, len);
    }

    /**
     * Reads an event shaped as the template: its bytes before the text's opening quote and after its closing
     * quote are the template's, byte for byte, and what lies between is one JSON string, as Jackson reads it at
     * the root (escapes, UTF-8 and control characters are Jackson's to judge). Such an event parses whole into
     * the same tokens as the template's event, but for that string: its text is appended to the template's
     * block, which is all the full parse would do. False, with nothing read, when the event does not fit.
     */
    private boolean byTemplate(byte[] b, int off, int len) {
        int head = headLength;
        int tail = tailLength;
        int textEnd = off + len - tail;
        byte[] t = template;
        EventInput input = eventInput();
        if (t == null // no template yet
                || len - head - tail < 1 // at least the closing quote after the head's opening one
                || b[textEnd - 1] != '"'
                || Arrays.mismatch(b, off, off + head, t, 0, head) >= 0
                || Arrays.mismatch(b, textEnd, off + len, t, head, head + tail) >= 0) {
            return false;
        }
        int from = off + head - 1;
        input.set(b, from, textEnd - from);
        try {
            JsonParser events = eventParser(input);
            if (events.nextToken() != JsonToken.VALUE_STRING) {
                closeEvents(); // cannot happen after a quote; the event is parsed whole
                return false;
            }
            char[] text = events.getTextCharacters(); // the parser's own buffer: no String made
            int textOffset = events.getTextOffset();
            int textLength = events.getTextLength();
            // the string must end at the tail: nothing left in the parser's buffer or the input
            boolean whole = events.releaseBuffered(DISCARD) == 0 && input.remaining() == 0;
            if (!whole) {
                return false; // a closing quote before the tail (another structure): parsed whole
            }
            answer.append(templateBlock, text, textOffset, textLength);
            templateReads++;
            return true;
        } catch (IOException | RuntimeException e) {
            closeEvents(); // not one string (cut short, bad escape): parsed whole, which counts it
            return false;
        } finally {
            input.clear();
        }
    }

    /** Parses one event's JSON object with the answer's parser; what follows the object is ignored. */
    private void parseEvent(byte[] b, int off, int len) {
        EventInput input = eventInput();
        input.set(b, off, len);
        boolean collecting = answer.collecting();
        answer.startEvent();
        try {
            JsonParser events = eventParser(input);
            if (events.nextToken() != JsonToken.START_OBJECT) {
                closeEvents(); // not an object (an event is one, from its first byte): no state to carry on from
                return;
            }
            long start = collecting ? events.currentTokenLocation().getByteOffset() : 0;
            reader.read(events);
            if (events.currentToken() != JsonToken.END_OBJECT
                    || !events.getParsingContext().inRoot()) {
                closeEvents(); // not read to its end: the next event starts on a new parser
                return;
            }
            events.releaseBuffered(DISCARD); // the rest of the event, if any: ignored
            if (collecting && answer.collecting()) {
                remember(b, off, len, answer.eventSpotFrom() - start, answer.eventSpotTo() - start);
            }
        } catch (IOException | RuntimeException e) {
            // as in parse(): counted; the parser is in no known state, so the next event gets a new one
            parseFailures++;
            closeEvents();
        } finally {
            input.clear();
        }
    }

    /** What the events' parser reads: a streamed answer's (events come from a stream only). */
    private EventInput eventInput() {
        EventInput in = input;
        if (in == null) {
            throw new IllegalStateException("an event in a JSON answer");
        }
        return in;
    }

    /** The events' parser, made at the first event and again after one that did not parse. */
    private JsonParser eventParser(EventInput in) throws IOException {
        JsonParser p = events;
        BufferRecycler b = buffers;
        if (p == null) {
            if (b == null) {
                throw new IllegalStateException("an event in a JSON answer");
            }
            p = JSON.parser(in, b);
            events = p;
        }
        return p;
    }

    /**
     * Makes the event just parsed whole the template, when all it did was append the string at
     * {@code [from, to)} of its bytes (its quotes included): keeps its bytes up to the string's opening quote and
     * after its closing quote.
     */
    private void remember(byte[] b, int off, int len, long from, long to) {
        if (b[off] != '{' // offsets are from the event's opening brace
                || from < 0
                || to > len
                || to - from < 2
                || b[off + (int) from] != '"'
                || b[off + (int) to - 1] != '"') {
            return; // no such text (or not where it should be: no template from it)
        }
        int head = (int) from + 1;
        int tail = len - (int) to;
        if (head + tail > MAX_TEMPLATE_BYTES) {
            return;
        }
        byte[] t = template;
        if (t == null || t.length < head + tail) {
            t = new byte[Math.max(256, head + tail)];
            template = t;
        }
        System.arraycopy(b, off, t, 0, head);
        System.arraycopy(b, off + (int) to, t, head, tail);
        headLength = head;
        tailLength = tail;
        templateBlock = answer.eventSpotBlock();
    }

    private void closeEvents() {
        JsonParser p = events;
        events = null;
        if (p != null) {
            try {
                p.close();
            } catch (IOException e) {
                // closing a parser of bytes already read: nothing to report
            }
        }
    }

    /**
     * Parses one JSON object (a whole body); anything that is not a JSON object is ignored. A small UTF-8 body is
     * read by the thread's parser ({@link ThreadParser}), any other by a parser of its own.
     */
    private void parse(byte[] b, int off, int len) {
        if (ThreadParser.fits(b, off, len)) {
            if (!ThreadParser.read(b, off, len, reader)) {
                parseFailures++;
            }
            return;
        }
        try (JsonParser p = JSON.createParser(b, off, len)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return;
            }
            reader.read(p);
        } catch (IOException | RuntimeException e) {
            // not JSON the reader understands: the client got it unchanged; nothing to learn from it, but
            // the usage or reply it may have carried is lost, so it is counted
            parseFailures++;
        }
    }
}
