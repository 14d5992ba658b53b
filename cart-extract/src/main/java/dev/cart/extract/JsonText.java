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
 * decoded (the body's UTF-8 was validated before parsing). The characters are exactly those Jackson's
 * {@code getText} would give. Anything this decoder does not accept (a raw control character, an
 * unknown escape, a string that does not end) undoes what it wrote and returns -1: the caller then
 * reads the string through Jackson, which reports the error as it always has. The parser skips the
 * string afterwards, validating it again, so Jackson remains the judge of what is valid JSON.
 * Stateless and thread-safe.
 */
final class JsonText {

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGH = 0x8080808080808080L;

    private JsonText() {
    }

    /**
     * Appends the characters of the JSON string whose opening quote is {@code b[quote]} to {@code out};
     * returns their number, or -1 (and {@code out} unchanged) when the string is left to Jackson.
     */
    static int decode(byte[] b, int quote, Segment out) {
        int n = b.length;
        if (quote < 0 || quote >= n || b[quote] != '"') {
            return -1;
        }
        int start = out.length();
        out.mark();
        int i = quote + 1;
        while (true) {
            int r = i;
            while (r + 8 <= n && !special((long) LONGS.get(b, r))) {
                r += 8;
            }
            while (r < n && plain(b[r])) {
                r++;
            }
            out.addAscii(b, i, r - i);
            i = r;
            if (i >= n) {
                break;
            }
            int c = b[i] & 0xFF;
            if (c == '"') {
                return out.length() - start;
            }
            if (c >= 0x80) {
                int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
                if (i + len > n) {
                    break;
                }
                out.addUtf8(b, i, len);
                i += len;
                continue;
            }
            if (c != '\\' || i + 1 >= n) {
                break; // a raw control character: Jackson's error
            }
            int e = b[i + 1];
            char decoded;
            switch (e) {
                case '"', '\\', '/' -> decoded = (char) e;
                case 'b' -> decoded = '\b';
                case 'f' -> decoded = '\f';
                case 'n' -> decoded = '\n';
                case 'r' -> decoded = '\r';
                case 't' -> decoded = '\t';
                case 'u' -> {
                    if (i + 6 > n) {
                        decoded = 0xFFFF;
                        i = -1;
                        break;
                    }
                    int v = 0;
                    for (int k = 2; k < 6; k++) {
                        int d = Character.digit(b[i + k], 16);
                        if (d < 0) {
                            v = -1;
                            break;
                        }
                        v = v << 4 | d;
                    }
                    if (v < 0) {
                        i = -1;
                        decoded = 0;
                        break;
                    }
                    decoded = (char) v;
                    i += 4;
                }
                default -> {
                    decoded = 0;
                    i = -1;
                }
            }
            if (i < 0) {
                break;
            }
            out.add(decoded);
            i += 2;
        }
        out.reset();
        return -1;
    }

    private static boolean plain(byte c) {
        return c >= 0x20 && c != '"' && c != '\\';
    }

    /** True when some byte of {@code w} is a quote, a backslash, a control character or not ASCII. */
    private static boolean special(long w) {
        long q = w ^ 0x2222222222222222L;
        long s = w ^ 0x5C5C5C5C5C5C5C5CL;
        long t = (q - ONES) & ~q | (s - ONES) & ~s | (w - 0x2020202020202020L) & ~w;
        return ((t | w) & HIGH) != 0;
    }
}
