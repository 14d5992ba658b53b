package dev.cart.extract.answer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The last {@link #BYTES} bytes of a JSON answer too long to keep whole ({@link AnswerReader#MAX_JSON_BYTES}), for
 * its usage: servers write {@code usage} at the end of the object, so at the end of the body the object after the
 * last {@code "usage"} key found in the tail (not preceded by a backslash: not an escaped quote inside a string) is
 * read by the dialect's reader. The answer's text of such an answer is not available ({@code too_long}).
 *
 * <p>Not thread-safe: one instance per answer, as its reader.
 */
final class JsonTail {

    /** Bytes kept from the end of the answer. */
    static final int BYTES = 4096;

    private static final JsonFactory JSON = JsonFactory.builder().build();
    private static final byte[] USAGE = "\"usage\"".getBytes(StandardCharsets.US_ASCII);

    private final byte[] ring = new byte[BYTES];
    private long total;

    /** The next {@code len} bytes of the answer: the last {@link #BYTES} of them are kept. */
    void add(byte[] b, int off, int len) {
        if (len > BYTES) {
            total += len - BYTES;
            off += len - BYTES;
            len = BYTES;
        }
        int at = (int) (total % BYTES);
        int first = Math.min(len, BYTES - at);
        System.arraycopy(b, off, ring, at, first);
        System.arraycopy(b, off + first, ring, 0, len - first);
        total += len;
    }

    /** The answer ended: the usage after the tail's last {@code "usage"} key goes to {@code reader}. */
    void finish(DialectReader reader) {
        int n = (int) Math.min(total, BYTES);
        byte[] b = new byte[n];
        int oldest = total <= BYTES ? 0 : (int) (total % BYTES);
        System.arraycopy(ring, oldest, b, 0, n - oldest);
        System.arraycopy(ring, 0, b, n - oldest, oldest);
        int key = lastUsage(b, n);
        if (key < 0) {
            return;
        }
        int i = skipSpace(b, key + USAGE.length, n);
        if (i >= n || b[i] != ':') {
            return;
        }
        i = skipSpace(b, i + 1, n);
        if (i >= n || b[i] != '{') {
            return;
        }
        try (JsonParser p = JSON.createParser(b, i, n - i)) {
            if (p.nextToken() == JsonToken.START_OBJECT) {
                reader.readUsage(p);
            }
        } catch (IOException | RuntimeException e) {
            // not JSON the reader understands: the client got it unchanged; usage stays unknown
        }
    }

    /** Where the last {@code "usage"} not preceded by a backslash starts in {@code b[0, to)}, or -1. */
    private static int lastUsage(byte[] b, int to) {
        outer:
        for (int i = to - USAGE.length; i >= 0; i--) {
            for (int j = 0; j < USAGE.length; j++) {
                if (b[i + j] != USAGE[j]) {
                    continue outer;
                }
            }
            if (i > 0 && b[i - 1] == '\\') {
                continue;
            }
            return i;
        }
        return -1;
    }

    private static int skipSpace(byte[] b, int i, int to) {
        while (i < to && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
            i++;
        }
        return i;
    }
}
