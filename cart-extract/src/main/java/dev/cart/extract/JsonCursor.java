package dev.cart.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The reader every dialect walks a body with: Jackson's streaming parser over the body bytes, plus what
 * the extraction needs beyond Jackson's tokens: where the current string's bytes are in the body (for
 * media digests and for decoding text straight from the bytes), the JSON path of the current value for
 * errors, and re-reading one object whose discriminator is not its first member ({@link #typed}).
 *
 * <p>Re-reading: a message needs its {@code role}, a content part its {@code type}, before its other
 * fields can be interpreted. When that field is first (every SDK writes it first) the object is handled
 * in the same pass. When it is not, the object is pre-scanned (values skipped, not decoded) to find it,
 * and then read again by a second parser over the same bytes, which becomes the current parser until the
 * object ends. The bytes re-read are bounded (eight times the body plus 64 KiB), so a body cannot make
 * extraction quadratic.
 *
 * <p>Not thread-safe: one per extraction.
 */
final class JsonCursor {

    /** Field names in error paths are cut to this many characters. */
    private static final int MAX_PATH_NAME = 64;

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /** Reads one typed object once its discriminator is known. */
    interface Handler {
        void read(String discriminator) throws IOException, ExtractionException;
    }

    private final JsonFactory factory;
    private final byte[] body;
    /** The body is {@code body[from, end)}; the array's other bytes are not the body's. */
    private final int from;

    private final int end;
    private final int maxNestingDepth;

    /** Bytes typed() may still re-read: eight times the body (eight levels of nesting), plus 64 KiB. */
    private long rereadBudget;
    /** The parser being read: the main one, or a sub-parser re-reading one object (see typed()). */
    @SuppressWarnings("NullAway.Init") // set by start(), which Extraction calls before any read
    private JsonParser p;
    /** Offset in {@link #body} of {@link #p}'s first byte. */
    private int baseOffset;
    /** JSON path of {@link #p}'s root value; "" for the main parser. */
    private String basePath = "";

    private int rawStart;
    private int rawEnd;

    /** Body ranges (from, to pairs, in decoding order) whose UTF-8 {@link JsonText} checked. */
    private int[] checked = new int[32];

    private int checkedCount;
    private boolean checkedInOrder = true;

    JsonCursor(JsonFactory factory, byte[] body, int from, int end, int maxNestingDepth) {
        this.factory = factory;
        this.body = body;
        this.from = from;
        this.end = end;
        this.baseOffset = from; // the main parser's byte offsets count from the body's first byte
        this.maxNestingDepth = maxNestingDepth;
        this.rereadBudget = 8L * (end - from) + 65_536;
    }

    /** Starts reading the body with {@code parser}, the main parser. */
    void start(JsonParser parser) {
        this.p = parser;
    }

    /** The array the body is in; the body is {@code body()[bodyFrom(), bodyEnd())}. */
    byte[] body() {
        return body;
    }

    int bodyFrom() {
        return from;
    }

    int bodyEnd() {
        return end;
    }

    JsonToken next() throws IOException {
        return p.nextToken();
    }

    JsonToken token() {
        return p.currentToken();
    }

    String name() throws IOException {
        return p.currentName();
    }

    void skip() throws IOException {
        p.skipChildren();
    }

    /** The current string, number or name as text. */
    String string() throws IOException {
        return p.getText();
    }

    /** True when the current token is an integer that fits a non-negative int. */
    boolean isNonNegativeInt() throws IOException {
        return p.getNumberType() == JsonParser.NumberType.INT && p.getIntValue() >= 0;
    }

    int intValue() throws IOException {
        return p.getIntValue();
    }

    /**
     * Writes the string that is the current token into {@code out}: decoded from the body bytes
     * ({@link JsonText}, which checks its UTF-8 as it scans it: recorded as checked), or, when that
     * declines, streamed from Jackson; returns its length in UTF-16 units.
     */
    int text(Segment out) throws IOException {
        BodyParser bp = (BodyParser) p;
        int before = out.length();
        int closing = JsonText.decode(body, bp.tokenOffset(), end, out);
        if (closing < 0) {
            return p.getText(out);
        }
        bp.stringRead(closing);
        checkedUtf8(bp.tokenOffset(), closing);
        return out.length() - before;
    }

    /**
     * When the string that is the current token is ASCII with no control character and no escape other than
     * {@code \"} and {@code \\} (the only two {@link Utf8Builder#quoted} writes for ASCII that is not a control
     * character), appends it to {@code out} as it stands in the body, quotes included (which is then its canonical
     * JSON), marks it read and returns true; otherwise appends nothing and returns false. Searches eight bytes at
     * a time between escapes. A tool call's {@code arguments}, JSON in a string, is such a string.
     */
    boolean plainAscii(Utf8Builder out) {
        BodyParser bp = (BodyParser) p;
        int q = bp.tokenOffset();
        byte[] b = body;
        int n = end;
        if (q < from || q >= n || b[q] != '"') {
            return false;
        }
        int i = q + 1;
        int lim =
                b.length; // as in JsonText.decodeFrom: lets the JIT drop the reads' bounds checks; a stop at n or past
        // it fails below
        while (true) {
            while (i < n && i + 8 <= lim) {
                long m = JsonText.specialOrHigh((long) LONGS.get(b, i));
                if (m != 0) {
                    i += Long.numberOfTrailingZeros(m) >>> 3;
                    break;
                }
                i += 8;
            }
            while (i < n && JsonText.plainAscii(b[i])) {
                i++;
            }
            if (i + 1 < n && b[i] == '\\' && (b[i + 1] == '"' || b[i + 1] == '\\')) {
                i += 2; // an escape that is already canonical
                continue;
            }
            break;
        }
        if (i >= n || b[i] != '"') {
            return false;
        }
        out.raw(b, q, i + 1);
        bp.stringRead(i);
        checkedUtf8(q, i);
        return true;
    }

    /** The offset in the body of the current token's first byte. */
    int tokenOffset() {
        return ((BodyParser) p).tokenOffset();
    }

    /**
     * Skips the array whose START_ARRAY is the current token and whose closing bracket is at
     * {@code closing}: the next token is its END_ARRAY. Only for bytes known to parse without error; see
     * {@link BodyParser#skipArrayTo} for the line count.
     */
    void skipArrayTo(int closing, int lines, int lastLineStart) {
        ((BodyParser) p).skipArrayTo(closing, lines, lastLineStart);
    }

    /**
     * Records that {@code body[from, to)}, which starts and ends between UTF-8 sequences, is known to be
     * strict UTF-8 (checked as it was read, or equal to bytes that were), so {@link #isValidUtf8} skips it.
     */
    void checkedUtf8(int from, int to) {
        if (checkedCount > 0 && from < checked[checkedCount - 1]) {
            checkedInOrder = false;
        }
        if (checkedCount == checked.length) {
            checked = Arrays.copyOf(checked, checkedCount * 2);
        }
        checked[checkedCount++] = from;
        checked[checkedCount++] = to;
    }

    /**
     * Whether the body is strict UTF-8, given that the strings {@link #text} decoded were checked as they
     * were decoded: only the bytes between them are checked here (the whole body if they were not decoded
     * in order, which re-reading never causes but nothing here relies on).
     */
    boolean isValidUtf8() {
        if (!checkedInOrder) {
            return Utf8.isValid(body, from, end);
        }
        int at = from;
        for (int k = 0; k < checkedCount; k += 2) {
            if (!Utf8.isValid(body, at, checked[k])) {
                return false;
            }
            at = checked[k + 1];
        }
        return Utf8.isValid(body, at, end);
    }

    @Nullable
    String optString(JsonToken v) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return null;
        }
        if (v != JsonToken.VALUE_STRING) {
            throw Errors.invalidType(path(), "a string");
        }
        return p.getText();
    }

    boolean optBoolean(JsonToken v) throws ExtractionException {
        if (v == JsonToken.VALUE_TRUE) {
            return true;
        }
        if (v == JsonToken.VALUE_FALSE || v == JsonToken.VALUE_NULL) {
            return false;
        }
        throw Errors.invalidType(path(), "a boolean");
    }

    void requireString(JsonToken v) throws ExtractionException {
        if (v != JsonToken.VALUE_STRING) {
            throw Errors.invalidType(path(), "a string");
        }
    }

    // ---------------------------------------------------------------- typed objects

    /**
     * Reads the object whose START_OBJECT is the current token with {@code handler}, given the value of
     * its discriminator member {@code key} ({@code role} or {@code type}). When the discriminator is the
     * first member the object is read in this pass. Otherwise the object is pre-scanned to find it (values
     * are skipped, not decoded) and then read by a sub-parser starting at the object's first byte; the
     * main parser is left on the object's END_OBJECT either way. Handlers skip the discriminator if they
     * meet it again.
     */
    void typed(String key, Handler handler) throws IOException, ExtractionException {
        JsonToken t = p.nextToken();
        if (t == JsonToken.FIELD_NAME && key.equals(p.currentName())) {
            p.nextToken();
            handler.read(discriminator());
            return;
        }
        if (t == JsonToken.END_OBJECT) {
            throw Errors.missingField(path() + "." + key);
        }
        int start = objectStart();
        String value = null;
        do {
            boolean isKey = key.equals(p.currentName());
            p.nextToken();
            if (isKey) {
                value = discriminator();
            } else {
                p.skipChildren();
            }
        } while (p.nextToken() == JsonToken.FIELD_NAME);
        String objectPath = path();
        if (value == null) {
            throw Errors.missingField(objectPath + "." + key);
        }
        // Re-reading costs the object's bytes once more; nested re-reads would cost them once per level,
        // so the total is bounded (a body cannot make extraction quadratic).
        long objectEnd = baseOffset + p.currentTokenLocation().getByteOffset();
        rereadBudget -= objectEnd - start;
        if (rereadBudget < 0) {
            throw new ExtractionException(
                    400,
                    "too_complex",
                    objectPath,
                    "objects whose '" + key
                            + "' is not their first member are nested too deeply at " + objectPath
                            + "; put '" + key + "' first");
        }
        JsonParser mainParser = p;
        int mainOffset = baseOffset;
        String mainPath = basePath;
        JsonParser sub = factory.createParser(body, start, end - start);
        p = sub;
        baseOffset = start;
        basePath = objectPath;
        try {
            sub.nextToken();
            handler.read(value);
        } catch (JsonProcessingException e) {
            throw Errors.mapJackson(e, this, maxNestingDepth);
        } finally {
            p = mainParser;
            baseOffset = mainOffset;
            basePath = mainPath;
            sub.close();
        }
    }

    private String discriminator() throws IOException, ExtractionException {
        if (p.currentToken() != JsonToken.VALUE_STRING) {
            throw Errors.invalidType(path(), "a string");
        }
        String common = commonValue();
        return common != null ? common : p.getText();
    }

    /**
     * The {@code role} and {@code type} values most bodies hold, most frequent first: read from the body's
     * bytes by {@link #commonValue()} (one per message or part), without Jackson decoding a String of its own.
     */
    private static final String[] COMMON_VALUES = {
        "user", "assistant", "text", "tool", "system", "developer", "image_url", "tool_use", "tool_result", "image"
    };

    private static final byte[][] COMMON_BYTES = new byte[COMMON_VALUES.length][];

    static {
        for (int k = 0; k < COMMON_VALUES.length; k++) {
            COMMON_BYTES[k] = COMMON_VALUES[k].getBytes(StandardCharsets.US_ASCII);
        }
    }

    /**
     * The current string token when its bytes in the body are one of {@link #COMMON_VALUES} as it stands
     * (quotes around it, no escape), which is then marked read; null otherwise (Jackson reads it). The same
     * value Jackson's {@code getText} gives (ASCII, so the body's UTF-8 check covers it as any other byte).
     */
    private @Nullable String commonValue() {
        BodyParser bp = (BodyParser) p;
        int q = bp.tokenOffset();
        byte[] b = body;
        if (q < from || q >= end || b[q] != '"') {
            return null;
        }
        for (int k = 0; k < COMMON_BYTES.length; k++) {
            byte[] c = COMMON_BYTES[k];
            int close = q + 1 + c.length;
            if (close < end && b[close] == '"' && Arrays.equals(b, q + 1, close, c, 0, c.length)) {
                bp.stringRead(close);
                return COMMON_VALUES[k];
            }
        }
        return null;
    }

    /**
     * The body range of the current string token's text, {@code [start, end)} packed as {@code start << 32 |
     * end}, when it is ASCII with no escape and no control character; -1 otherwise. For short values (a model
     * name): the bytes are scanned one by one.
     */
    long plainAsciiRange() {
        if (p.currentToken() != JsonToken.VALUE_STRING) {
            return -1;
        }
        int q = ((BodyParser) p).tokenOffset();
        byte[] b = body;
        if (q < from || q >= end || b[q] != '"') {
            return -1;
        }
        for (int i = q + 1; i < end; i++) {
            byte c = b[i];
            if (c == '"') {
                return (long) (q + 1) << 32 | i;
            }
            if (!JsonText.plainAscii(c)) {
                return -1;
            }
        }
        return -1;
    }

    /** Marks the current string token, whose closing quote is {@code body[closingQuote]}, as read. */
    void stringRead(int closingQuote) {
        ((BodyParser) p).stringRead(closingQuote);
    }

    /** The offset in the body of the '{' opening the object whose first field name is the current token. */
    private int objectStart() {
        int i = (int) (baseOffset + p.currentTokenLocation().getByteOffset()) - 1;
        while (i >= from && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t')) {
            i--;
        }
        if (i < from || body[i] != '{') {
            throw new IllegalStateException("object start not found");
        }
        return i;
    }

    // ---------------------------------------------------------------- raw strings

    /** Start (inclusive) in the body of the string {@link #rawRange()} found. */
    int rawStart() {
        return rawStart;
    }

    /** End (exclusive) in the body of the string {@link #rawRange()} found. */
    int rawEnd() {
        return rawEnd;
    }

    /**
     * Finds the body bytes of the string that is the current token: sets {@link #rawStart()} and
     * {@link #rawEnd()} and returns true when the string has no escape (its bytes are then its UTF-8
     * encoding); returns false when it has one or cannot be located. Searches eight bytes at a time.
     */
    boolean rawRange() {
        long loc = p.currentTokenLocation().getByteOffset();
        if (loc < 0) {
            return false;
        }
        long q = baseOffset + loc;
        byte[] b = body;
        if (q >= end || b[(int) q] != '"') {
            return false;
        }
        int i = (int) q + 1;
        int n = end;
        int lim = b.length; // as in JsonText.decodeFrom: lets the JIT drop the reads' bounds checks
        for (; i < n && i + 8 <= lim; i += 8) {
            long w = (long) LONGS.get(b, i);
            long x = w ^ 0x2222222222222222L;
            long y = w ^ 0x5C5C5C5C5C5C5C5CL;
            if (hasZeroByte(x) || hasZeroByte(y)) {
                break;
            }
        }
        for (; i < n; i++) {
            byte c = b[i];
            if (c == '"') {
                rawStart = (int) q + 1;
                rawEnd = i;
                return true;
            }
            if (c == '\\') {
                return false;
            }
        }
        return false;
    }

    /** True when some byte of {@code v} is zero (exact; the classic bit trick). */
    private static boolean hasZeroByte(long v) {
        return ((v - 0x0101010101010101L) & ~v & 0x8080808080808080L) != 0;
    }

    // ---------------------------------------------------------------- paths

    /**
     * The JSON path of the current value, e.g. {@code messages[2].content[0].image_url.url}: the
     * sub-parser's base path, then the parser's context chain. On START_OBJECT/START_ARRAY the context
     * is the new container, so its parent names the value; on END_* Jackson has already popped it.
     */
    String path() {
        JsonStreamContext ctx = p.getParsingContext();
        JsonToken t = p.currentToken();
        if ((t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) && ctx != null) {
            ctx = ctx.getParent();
        }
        StringBuilder sb = new StringBuilder(basePath);
        render(sb, ctx);
        return sb.toString();
    }

    /** {@link #path()}, or null when it is empty or cannot be made (the parser failed mid-token). */
    @Nullable
    String safePath() {
        try {
            String path = path();
            return path.isEmpty() ? null : path;
        } catch (RuntimeException ignored) {
            return null;
        }
    }

    private static void render(StringBuilder sb, JsonStreamContext ctx) {
        if (ctx == null || ctx.inRoot()) {
            return;
        }
        render(sb, ctx.getParent());
        if (ctx.inArray()) {
            sb.append('[').append(ctx.getCurrentIndex()).append(']');
        } else {
            String name = ctx.getCurrentName();
            if (name != null) {
                if (sb.length() > 0) {
                    sb.append('.');
                }
                sb.append(name.length() > MAX_PATH_NAME ? name.substring(0, MAX_PATH_NAME) + "..." : name);
            }
        }
    }
}
