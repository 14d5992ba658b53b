package dev.cart.extract;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Strict UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
 *
 * <p>Jackson rejects some invalid sequences but decodes others (overlong forms, lead bytes above
 * F4) without complaint, so a body is validated here before it is parsed. ASCII, which is nearly all
 * of a typical body (and all of base64 media), is skipped sixteen bytes at a time, shorter runs eight
 * at a time; only the bytes of a non-ASCII sequence are checked one by one. Stateless and thread-safe.
 */
final class Utf8 {

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long HIGH_BITS = 0x8080808080808080L;

    private Utf8() {}

    static boolean isValid(byte[] b) {
        return isValid(b, 0, b.length);
    }

    /** Whether {@code b[from, to)} is strict UTF-8 (a range that starts and ends between sequences). */
    static boolean isValid(byte[] b, int from, int to) {
        int i = from;
        int n = to;
        while (i < n) {
            while (i + 16 <= n && (((long) LONGS.get(b, i) | (long) LONGS.get(b, i + 8)) & HIGH_BITS) == 0) {
                i += 16;
            }
            // the ASCII before the next non-ASCII byte (text that mixes scripts has short ASCII runs): a word
            // at a time, the last step to the byte itself by its position in the word
            if (i + 8 <= n) {
                long w;
                while ((w = (long) LONGS.get(b, i) & HIGH_BITS) == 0) {
                    i += 8;
                    if (i + 8 > n) {
                        break;
                    }
                }
                if (w != 0) {
                    i += Long.numberOfTrailingZeros(w) >>> 3;
                }
            }
            while (i < n && b[i] >= 0) {
                i++;
            }
            if (i == n) {
                break;
            }
            int c = b[i] & 0xFF;
            // the common sequences first, each checked without a loop
            if (c >= 0xC2 && c <= 0xDF) {
                if (i + 1 >= n || (b[i + 1] & 0xC0) != 0x80) {
                    return false;
                }
                i += 2;
                continue;
            }
            if (c >= 0xE1 && c <= 0xEC || c == 0xEE || c == 0xEF) {
                if (i + 2 >= n || ((b[i + 1] & b[i + 2] & 0xC0) != 0x80) || (((b[i + 1] | b[i + 2]) & 0x40) != 0)) {
                    return false;
                }
                i += 3;
                continue;
            }
            int len;
            int min;
            if (c >= 0xC2 && c <= 0xDF) {
                len = 2;
                min = 0x80;
            } else if (c >= 0xE0 && c <= 0xEF) {
                len = 3;
                min = 0x800;
            } else if (c >= 0xF0 && c <= 0xF4) {
                len = 4;
                min = 0x10000;
            } else {
                return false;
            }
            if (i + len > n) {
                return false;
            }
            int cp = c & (0xFF >> (len + 1));
            for (int k = 1; k < len; k++) {
                int d = b[i + k] & 0xFF;
                if ((d & 0xC0) != 0x80) {
                    return false;
                }
                cp = cp << 6 | d & 0x3F;
            }
            if (cp < min || cp > 0x10FFFF || cp >= 0xD800 && cp <= 0xDFFF) {
                return false;
            }
            i += len;
        }
        return true;
    }

    /** How many bytes of {@code b[from, to)} are ASCII before the first that is not; eight at a time. */
    static int asciiRun(byte[] b, int from, int to) {
        int i = from;
        while (i + 8 <= to && ((long) LONGS.get(b, i) & HIGH_BITS) == 0) {
            i += 8;
        }
        while (i < to && b[i] >= 0) {
            i++;
        }
        return i - from;
    }
}
