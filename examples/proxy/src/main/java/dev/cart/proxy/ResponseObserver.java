package dev.cart.proxy;

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
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Reads what a routed response says about itself while its bytes pass to the client: the replica's
 * prompt-cache usage (for {@code Lease.succeeded(ServedUsage)}) and the text of the answer (for learning
 * the next turn's prefix). It never holds back, reorders or changes a byte: the forwarder writes each
 * chunk to the client first and then hands the same bytes here.
 *
 * <p>One class per job, wired here:
 * <ul>
 *   <li>{@code text/event-stream}: {@link SseLines} cuts the bytes into lines; each complete
 *       {@code data:} line holding a JSON object is parsed once, with Jackson's streaming parser (no
 *       tree). A line longer than {@link SseLines#MAX_LINE_BYTES} is skipped, not buffered.</li>
 *   <li>JSON: a body whose declared length arrives in one piece (the common case: a small answer read in
 *       one read) is parsed in place, at once, with no copy. Otherwise a copy is kept here up to
 *       {@link #MAX_JSON_BYTES} (sized from the declared length when there is one) and parsed once at the
 *       end; a larger body is given up on (usage unknown, nothing learned) and its copy dropped at once.</li>
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
 *       counted in {@link #parseFailures()} (it could have lost nothing the observer wants).</li>
 * </ul>
 *
 * <p>One parser per streamed answer: a blocking Jackson parser (it tokenizes faster than Jackson's
 * non-blocking one) over an {@link EventInput}, a stream that holds the bytes of one complete event at a time
 * and nothing between events. Each event is one root value for the parser: it is read to its closing brace,
 * and whatever the event holds after it is dropped ({@link JsonParser#releaseBuffered}), as a parser of its own
 * would ignore it. An event that does not parse (the parser read past its end, or met a bad token) leaves the
 * parser in no known state: it is closed, the event counted, and the next event gets a new parser. So each
 * event reads as it would with a parser of its own, without making one per event (its contexts, buffers and
 * symbol table: about 850 bytes and a tenth of the observer's time). The parser is closed at {@link #finish}
 * (closing merges the names it met into the factory's symbol table; an answer not finished only skips that).
 * Its buffers come from this observer's own {@link BufferRecycler}, with a 1 KB read buffer (an event is a few
 * hundred bytes; a longer one is read in pieces) rather than the factory's thread-local pool: nothing is
 * shared with another response, whichever thread reads this one. A JSON body is parsed once, by a parser
 * of its own from the factory's pool.
 *
 * <p>Cost: a streamed chunk costs a scan for line ends plus the tokenizing of each event line by Jackson
 * (a few hundred bytes: about a third of a microsecond). Not thread-safe: one instance per response, used by
 * one thread at a time (the relaying thread, or the HTTP client's threads one after the other).
 */
final class ResponseObserver {

    /** Longest SSE line parsed; longer lines are skipped. */
    static final int MAX_LINE_BYTES = SseLines.MAX_LINE_BYTES;
    /** Largest JSON body parsed; a larger one is not observed. */
    static final int MAX_JSON_BYTES = 1024 * 1024;
    /** Longest answer kept for learning. */
    static final int MAX_REPLY_CHARS = AnswerText.MAX_CHARS;

    private static final Parsers JSON = new Parsers();

    private static final OutputStream DISCARD = OutputStream.nullOutputStream();

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

    /**
     * The bytes of the event being parsed, as the stream the answer's parser reads: an event's bytes between
     * {@link #set} and {@link #clear}, the end of the stream after them (an event cut short fails to parse, as
     * with a parser of its own), nothing kept after {@link #clear}.
     */
    private static final class EventInput extends InputStream {
        private byte[] b;
        private int at;
        private int end;

        void set(byte[] b, int off, int len) {
            this.b = b;
            this.at = off;
            this.end = off + len;
        }

        void clear() {
            b = null;
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
    private final BufferRecycler buffers;
    /** What the streamed answer's parser reads; null for a JSON body. */
    private final EventInput input;
    /** The streamed answer's parser: made at the first event, dropped after an event that did not parse. */
    private JsonParser events;

    private final AnswerText answer;
    private final DialectReader reader;
    /** Null for a JSON body. */
    private final SseLines lines;

    // JSON body copy
    private byte[] json;
    private int jsonLength;
    private boolean jsonAbandoned;
    /** The JSON body's declared length, -1 when unknown. */
    private final long declaredLength;
    /** The JSON body was parsed in place as it arrived whole: later bytes (none, if it was framed right) are ignored. */
    private boolean jsonParsed;

    private int parseFailures;

    private ResponseObserver(Endpoint endpoint, boolean sse, boolean collectReply, long declaredLength) {
        this.declaredLength = declaredLength;
        this.answer = new AnswerText(collectReply && endpoint != Endpoint.COMPLETIONS);
        this.reader = endpoint == Endpoint.MESSAGES ? new AnthropicReader(answer) : new OpenAiReader(answer);
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
     * An observer for a response to {@code endpoint}, or null when the response cannot be read (a content
     * type that is neither JSON nor an event stream, or a content encoding other than identity).
     */
    static ResponseObserver create(
            Endpoint endpoint, String contentType, String contentEncoding, boolean collectReply) {
        return create(endpoint, contentType, contentEncoding, collectReply, -1);
    }

    /**
     * As {@link #create(Endpoint, String, String, boolean)}, for a body of {@code declaredLength} bytes (its
     * {@code Content-Length}; -1 when unknown or chunked).
     */
    static ResponseObserver create(
            Endpoint endpoint, String contentType, String contentEncoding, boolean collectReply, long declaredLength) {
        if (endpoint == null) {
            return null;
        }
        if (contentEncoding != null
                && !contentEncoding.isBlank()
                && !contentEncoding.trim().equalsIgnoreCase("identity")) {
            return null;
        }
        String ct = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
        if (ct.startsWith("text/event-stream")) {
            return new ResponseObserver(endpoint, true, collectReply, -1);
        }
        if (ct.startsWith("application/json") || ct.isEmpty()) {
            return new ResponseObserver(endpoint, false, collectReply, declaredLength);
        }
        return null;
    }

    /** Bytes that were just relayed to the client, in order; nothing of {@code b} is kept after the call. */
    void accept(byte[] b, int off, int len) {
        if (lines != null) {
            lines.accept(b, off, len);
        } else if (!jsonAbandoned && !jsonParsed) {
            if (jsonLength == 0 && len == declaredLength && len <= MAX_JSON_BYTES) {
                jsonParsed = true; // the whole body, in one piece: parsed where it lies
                parse(b, off, len);
                return;
            }
            if ((long) jsonLength + len > MAX_JSON_BYTES) {
                jsonAbandoned = true;
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

    /** The body ended normally: parses what is pending (a JSON body, a last SSE line without its newline). */
    void finish() {
        if (lines != null) {
            lines.finish();
            closeEvents();
        } else if (!jsonAbandoned && json != null) {
            parse(json, 0, jsonLength);
            json = null;
        }
    }

    /** What the replica reported, {@link ServedUsage#UNKNOWN} for each field it did not. */
    ServedUsage usage() {
        return reader.usage();
    }

    /**
     * The answer's text blocks (one for OpenAI; one per text block for Anthropic), or null when it is not
     * available as plain text (see {@link #replyProblem()}).
     */
    List<String> reply() {
        return answer.text();
    }

    /**
     * Why {@link #reply()} is null: {@code not_collected}, {@code too_long}, {@code not_text} (tool
     * calls, non-text blocks), {@code several_choices}, {@code empty}; null when the reply is available.
     */
    String replyProblem() {
        return answer.problem();
    }

    /**
     * Events (or the JSON body) that started as a JSON object but could not be parsed: what they said about
     * usage or the reply is lost ({@code cart_response_parse_failures_total}). Only events that were parsed are
     * counted: once the text is not wanted, those that cannot carry usage are not parsed.
     */
    int parseFailures() {
        return parseFailures;
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

    /** Parses one event's JSON object with the answer's parser; what follows the object is ignored. */
    private void event(byte[] b, int off, int len) {
        input.set(b, off, len);
        try {
            if (events == null) {
                events = JSON.parser(input, buffers);
            }
            if (events.nextToken() != JsonToken.START_OBJECT) {
                closeEvents(); // not an object (an event is one, from its first byte): no state to carry on from
                return;
            }
            reader.read(events);
            if (events.currentToken() != JsonToken.END_OBJECT
                    || !events.getParsingContext().inRoot()) {
                closeEvents(); // not read to its end: the next event starts on a new parser
                return;
            }
            events.releaseBuffered(DISCARD); // the rest of the event, if any: ignored
        } catch (IOException | RuntimeException e) {
            // as in parse(): counted; the parser is in no known state, so the next event gets a new one
            parseFailures++;
            closeEvents();
        } finally {
            input.clear();
        }
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

    /** Parses one JSON object (a whole body); anything that is not a JSON object is ignored. */
    private void parse(byte[] b, int off, int len) {
        try (JsonParser p = JSON.createParser(b, off, len)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return;
            }
            reader.read(p);
        } catch (IOException | RuntimeException e) {
            // not JSON the observer understands: the client got it unchanged; nothing to learn from it, but
            // the usage or reply it may have carried is lost, so it is counted
            parseFailures++;
        }
    }
}
