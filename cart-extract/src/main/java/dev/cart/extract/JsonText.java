package dev.cart.extract;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Decodes a JSON string straight from the request body into a {@link Segment}, so that prompt text
 * reaches the key builder as Latin-1 bytes without a detour through Jackson's char buffers.
 *
 * <p>How: from the opening quote, runs of plain ASCII (no quote, backslash or control character) are
 * found eight bytes at a time and copied as they are; an escape ({@code \n}, {@code \"},
 * a backslash-u escape, a surrogate pair as two of them) becomes its char; other UTF-8 is
 * decoded. The characters are exactly those Jackson's
 * {@code getText} would give. Anything this decoder does not accept (a raw control character, an
 * unknown escape, a string that does not end) undoes what it wrote and returns -1: the caller then
 * reads the string through Jackson, which reports the error as it always has. What it accepts is
 * exactly what Jackson accepts, so the parser is told the string is read ({@link BodyParser#stringRead})
 * and does not scan it a second time. Its UTF-8 is checked as strictly as {@link Utf8#isValid} checks it
 * (a string with an invalid sequence is declined), so the strings it decoded need no check of their own.
 * Stateless and thread-safe.
 */
final class JsonText {

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGH = 0x8080808080808080L;
    /** Room reserved up front: most strings are shorter; longer ones grow the buffer geometrically. */
    private static final int FIRST_RESERVE = 4096;

    private JsonText() {}

    /**
     * Appends the characters of the JSON string whose opening quote is {@code b[quote]} to {@code out};
     * returns the offset of its closing quote, or -1 (and {@code out} unchanged) when the string is left
     * to Jackson.
     * Latin-1 characters are written straight into the segment's byte buffer, which is grown as the string
     * needs (at least 16 bytes of room before each step, which writes at most eight), wider ones as chars.
     */
    static int decode(byte[] b, int quote, Segment out) {
        int n = b.length;
        if (quote < 0 || quote >= n || b[quote] != '"') {
            return -1;
        }
        out.mark();
        int i = quote + 1;
        byte[] lat = out.reserveLatin1(Math.min(n - i, FIRST_RESERVE) + 16);
        int at = out.latin1Length();
        while (true) {
            if (lat.length - at < 16) {
                lat = out.growLatin1(at, Math.min(n - i, lat.length) + 16);
            }
            while (i + 8 <= n) {
                if (lat.length - at < 16) {
                    lat = out.growLatin1(at, Math.min(n - i, lat.length) + 16);
                }
                long w = (long) LONGS.get(b, i);
                LONGS.set(lat, at, w); // all eight; only those before the first special byte count
                long m = special(w);
                if (m != 0) {
                    int k = Long.numberOfTrailingZeros(m) >>> 3;
                    i += k;
                    at += k;
                    break;
                }
                i += 8;
                at += 8;
            }
            while (i < n && plain(b[i])) {
                lat[at++] = b[i++];
            }
            if (i >= n) {
                break;
            }
            int c = b[i] & 0xFF;
            if (c == '"') {
                out.commitLatin1(at);
                return i;
            }
            int ch;
            if (c >= 0x80) {
                // strict UTF-8 (RFC 3629), as Utf8.isValid: the caller counts this string's bytes as checked
                if (c < 0xC2 || c > 0xF4) {
                    break;
                }
                int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
                if (i + len > n) {
                    break;
                }
                int cp = c & (0x7F >> len);
                int cont = 0;
                for (int k = 1; k < len; k++) {
                    int d = b[i + k];
                    cont |= d ^ 0x80;
                    cp = cp << 6 | d & 0x3F;
                }
                if ((cont & 0xC0) != 0
                        || cp < (len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000)
                        || cp > 0x10FFFF
                        || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    break;
                }
                if (len == 4) {
                    out.commitLatin1(at);
                    out.addWide(Character.highSurrogate(cp));
                    ch = Character.lowSurrogate(cp);
                } else {
                    ch = cp;
                }
                i += len;
            } else if (c == '\\' && i + 1 < n) {
                ch = escape(b, i);
                if (ch < 0) {
                    break;
                }
                i += b[i + 1] == 'u' ? 6 : 2;
            } else {
                break; // a raw control character: Jackson's error
            }
            if (ch <= 0xFF) {
                lat[at++] = (byte) ch;
            } else {
                out.commitLatin1(at);
                out.addWide((char) ch);
            }
        }
        out.reset();
        return -1;
    }

    /** The char of the escape at {@code b[i] == '\\'}, or -1 when it is not a valid JSON escape. */
    private static int escape(byte[] b, int i) {
        switch (b[i + 1]) {
            case '"', '\\', '/' -> {
                return b[i + 1];
            }
            case 'b' -> {
                return '\b';
            }
            case 'f' -> {
                return '\f';
            }
            case 'n' -> {
                return '\n';
            }
            case 'r' -> {
                return '\r';
            }
            case 't' -> {
                return '\t';
            }
            case 'u' -> {
                if (i + 6 > b.length) {
                    return -1;
                }
                int v = 0;
                for (int k = 2; k < 6; k++) {
                    int d = Character.digit(b[i + k], 16);
                    if (d < 0) {
                        return -1;
                    }
                    v = v << 4 | d;
                }
                return v;
            }
            default -> {
                return -1;
            }
        }
    }

    static boolean plain(byte c) {
        return c >= 0x20 && c != '"' && c != '\\';
    }

    /**
     * Nonzero when some byte of {@code w} is a quote, a backslash, a control character or not ASCII; its
     * lowest set bit is the high bit of the first such byte (little-endian: the first in the body). Bits
     * above it may be false alarms (a borrow carries into the next byte), never bits below it.
     */
    static long special(long w) {
        long q = w ^ 0x2222222222222222L;
        long s = w ^ 0x5C5C5C5C5C5C5C5CL;
        long t = (q - ONES) & ~q | (s - ONES) & ~s | (w - 0x2020202020202020L) & ~w;
        return (t | w) & HIGH;
    }
}
