package dev.cart.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.core.util.JsonParserDelegate;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.io.IOException;
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
 *       tree). One non-blocking parser serves all the events of an answer ({@link EventParser}), fed
 *       one event at a time, instead of a parser (and its context, buffers and symbol table) created per
 *       event. A line longer than {@link SseLines#MAX_LINE_BYTES} is skipped, not buffered.</li>
 *   <li>JSON: a copy is kept here up to {@link #MAX_JSON_BYTES} and parsed once at the end; a larger body
 *       is given up on (usage unknown, nothing learned) and its copy dropped at once.</li>
 *   <li>Anything else, or a compressed body: not observed ({@link #create} returns null).</li>
 *   <li>Each parsed object goes to the endpoint's {@link DialectReader}: {@link OpenAiReader} or
 *       {@link AnthropicReader}, which read the usage and put the answer's text into an
 *       {@link AnswerText}. An object that does not parse is counted ({@link #parseFailures()}).</li>
 * </ul>
 *
 * <p>Cost: a streamed chunk costs a scan for line ends plus one streaming parse of each event line (a
 * few hundred bytes: about half a microsecond, and about 50 bytes of garbage instead of the 850 a parser
 * per event made). Not thread-safe: one instance per response, used by the
 * thread relaying it.
 */
final class ResponseObserver {

    /** Longest SSE line parsed; longer lines are skipped. */
    static final int MAX_LINE_BYTES = SseLines.MAX_LINE_BYTES;
    /** Largest JSON body parsed; a larger one is not observed. */
    static final int MAX_JSON_BYTES = 1024 * 1024;
    /** Longest answer kept for learning. */
    static final int MAX_REPLY_CHARS = AnswerText.MAX_CHARS;

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private final AnswerText answer;
    private final DialectReader reader;
    /** Null for a JSON body. */
    private final SseLines lines;

    // JSON body copy
    private byte[] json;
    private int jsonLength;
    private boolean jsonAbandoned;

    private int parseFailures;
    /** The events' parser, made at the first event; dropped after an event it could not read whole. */
    private EventParser events;

    private ResponseObserver(Endpoint endpoint, boolean sse, boolean collectReply) {
        this.answer = new AnswerText(collectReply && endpoint != Endpoint.COMPLETIONS);
        this.reader = endpoint == Endpoint.MESSAGES ? new AnthropicReader(answer) : new OpenAiReader(answer);
        this.lines = !sse
                ? null
                : new SseLines(new SseLines.Consumer() {
                    @Override
                    public void data(byte[] b, int off, int len) {
                        parseEvent(b, off, len);
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
            return new ResponseObserver(endpoint, true, collectReply);
        }
        if (ct.startsWith("application/json") || ct.isEmpty()) {
            return new ResponseObserver(endpoint, false, collectReply);
        }
        return null;
    }

    /** Bytes that were just relayed to the client, in order; nothing of {@code b} is kept after the call. */
    void accept(byte[] b, int off, int len) {
        if (lines != null) {
            lines.accept(b, off, len);
        } else if (!jsonAbandoned) {
            if ((long) jsonLength + len > MAX_JSON_BYTES) {
                jsonAbandoned = true;
                json = null;
                answer.unavailable("too_long");
                return;
            }
            if (json == null) {
                json = new byte[Math.max(1024, len)];
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
            dropEvents();
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
     * usage or the reply is lost ({@code cart_response_parse_failures_total}).
     */
    int parseFailures() {
        return parseFailures;
    }

    /**
     * Parses one event's JSON object with the answer's parser, exactly as {@link #parse} would: the first
     * object is read, anything after it on the line is ignored, an object cut short is a failure.
     */
    private void parseEvent(byte[] b, int off, int len) {
        try {
            if (events == null) {
                events = new EventParser();
            }
            EventParser p = events;
            p.feed(b, off, len);
            if (p.nextToken() != JsonToken.START_OBJECT) {
                dropEvents();
                return;
            }
            reader.read(p);
            if (!p.atEndOfEvent(b, off, len)) {
                dropEvents(); // something followed the object on the line (ignored, as by a parser of its own)
            }
        } catch (IOException | RuntimeException e) {
            dropEvents();
            parseFailures++; // as in parse()
        }
    }

    /**
     * Closes the events' parser: its buffers go back to Jackson's pool and the field names it met into the
     * factory's symbol table, so the next answer's parser finds them there instead of adding (and interning)
     * them again.
     */
    private void dropEvents() {
        EventParser p = events;
        events = null;
        if (p != null) {
            try {
                p.close();
            } catch (IOException e) {
                // nothing was written: closing a byte-array parser does not fail
            }
        }
    }

    /** Parses one JSON object (an event or a whole body); anything that is not a JSON object is ignored. */
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

    /**
     * Jackson's non-blocking parser, fed one event at a time, made to read each event as a blocking parser
     * of its own would: where the non-blocking parser has no more input ({@link JsonToken#NOT_AVAILABLE}),
     * the event ended. A space is fed once then, which ends a number or literal the event ended on (a
     * blocking parser sees the end of its input there); if the parser still needs input, the event was cut
     * short and {@link #nextToken()} throws, as a blocking parser does at an unexpected end of input.
     */
    private static final class EventParser extends JsonParserDelegate {

        private static final byte[] SPACE = {' '};
        private static final byte[] NOTHING = {};

        private final ByteArrayFeeder feeder;
        private boolean padded;
        /** Bytes fed so far, and where the current event starts among them. */
        private long fed;

        private long eventStart;

        EventParser() throws IOException {
            super(JSON.createNonBlockingByteArrayParser());
            this.feeder = (ByteArrayFeeder) delegate().getNonBlockingInputFeeder();
        }

        void feed(byte[] b, int off, int len) throws IOException {
            padded = false;
            eventStart = fed;
            fed += len;
            feeder.feedInput(b, off, off + len);
        }

        @Override
        public JsonToken nextToken() throws IOException {
            JsonToken t = delegate().nextToken();
            if (t == JsonToken.NOT_AVAILABLE && !padded) {
                padded = true;
                feeder.feedInput(SPACE, 0, 1);
                t = delegate().nextToken();
            }
            if (t == JsonToken.NOT_AVAILABLE) {
                throw new JsonEOFException(this, null, "Unexpected end of an event");
            }
            return t;
        }

        @Override
        public JsonParser skipChildren() throws IOException {
            // the delegate's own skipChildren would call its own nextToken, past the end of the event
            JsonToken t = currentToken();
            if (t != JsonToken.START_OBJECT && t != JsonToken.START_ARRAY) {
                return this;
            }
            int open = 1;
            while (open > 0) {
                JsonToken n = nextToken();
                if (n == null) {
                    throw new JsonEOFException(this, null, "Unexpected end of an event");
                }
                if (n.isStructStart()) {
                    open++;
                } else if (n.isStructEnd()) {
                    open--;
                }
            }
            return this;
        }

        /**
         * After an object was read whole from {@code b[off, off + len)}, the event just fed: true when only
         * white space followed it on the line, so the parser can take the next event; false when more
         * followed (a blocking parser would have ignored it, so it is no failure, but this parser cannot
         * go on: the rest may be a token left open).
         */
        boolean atEndOfEvent(byte[] b, int off, int len) {
            if (padded
                    || currentToken() != JsonToken.END_OBJECT
                    || !delegate().getParsingContext().inRoot()) {
                return false;
            }
            long read = delegate().currentLocation().getByteOffset() - eventStart;
            for (long i = off + read; i < off + len; i++) {
                byte c = b[(int) i];
                if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                    return false;
                }
            }
            try {
                if (delegate().nextToken() != JsonToken.NOT_AVAILABLE) {
                    return false;
                }
                feeder.feedInput(NOTHING, 0, 0); // keep no reference to the event's array until the next one
                return true;
            } catch (IOException | RuntimeException e) {
                return false;
            }
        }
    }
}
