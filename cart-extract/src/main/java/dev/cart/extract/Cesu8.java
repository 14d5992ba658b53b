package dev.cart.extract;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The byte form of key text: CESU-8, each UTF-16 unit encoded on its own (U+0000 to U+007F one byte, to
 * U+07FF two, to U+FFFF three, so a surrogate pair is six bytes and a lone surrogate three), as {@link
 * dev.cart.core.PromptKey.Builder#appendCesu8} hashes it. UTF-8 without four-byte sequences is CESU-8 as it
 * is, which lets prompt text go from a request body into the key as bytes. Stateless and thread-safe.
 */
final class Cesu8 {

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long HIGH = 0x8080808080808080L;

    private Cesu8() {}

    /** Writes the bytes of {@code c} (U+0080 or above) at {@code b[at]} (room for three); returns the end. */
    static int encode(byte[] b, int at, char c) {
        if (c < 0x800) {
            b[at] = (byte) (0xC0 | c >> 6);
            b[at + 1] = (byte) (0x80 | c & 0x3F);
            return at + 2;
        }
        b[at] = (byte) (0xE0 | c >> 12);
        b[at + 1] = (byte) (0x80 | c >> 6 & 0x3F);
        b[at + 2] = (byte) (0x80 | c & 0x3F);
        return at + 3;
    }

    /**
     * Writes the CESU-8 of {@code src[off, off + n)} at {@code dst[at]}, which has room for {@code n + n / 2}
     * bytes; returns the end. The source is well-formed UTF-8 or the generalized UTF-8 of {@link Utf8Builder}
     * (a lone surrogate as three bytes): copied as it is but for four-byte sequences, each written as its two
     * surrogates (four bytes become six).
     */
    static int fromUtf8(byte[] src, int off, int n, byte[] dst, int at) {
        int end = off + n;
        int i = off;
        while (i < end) {
            int run = Utf8.asciiRun(src, i, end);
            if (run > 0) {
                System.arraycopy(src, i, dst, at, run);
                at += run;
                i += run;
                continue;
            }
            int b0 = src[i] & 0xFF;
            if (b0 < 0xF0) {
                int len = b0 < 0xE0 ? 2 : 3;
                System.arraycopy(src, i, dst, at, len);
                at += len;
                i += len;
            } else {
                int cp = (b0 & 0x07) << 18 | (src[i + 1] & 0x3F) << 12 | (src[i + 2] & 0x3F) << 6 | (src[i + 3] & 0x3F);
                at = encode(dst, at, Character.highSurrogate(cp));
                at = encode(dst, at, Character.lowSurrogate(cp));
                i += 4;
            }
        }
        return at;
    }

    /** The CESU-8 of {@code src[off, off + n)} (UTF-8, see {@link #fromUtf8(byte[], int, int, byte[], int)}). */
    static byte[] fromUtf8(byte[] src, int off, int n) {
        byte[] b = new byte[n + (n >> 1)];
        return Arrays.copyOf(b, fromUtf8(src, off, n, b, 0));
    }

    /** How many continuation bytes ({@code 10xxxxxx}) {@code b[from, to)} holds; eight bytes at a time. */
    static int continuations(byte[] b, int from, int to) {
        int n = 0;
        int i = from;
        for (; i + 8 <= to; i += 8) {
            long w = (long) LONGS.get(b, i);
            n += Long.bitCount(w & ~(w << 1) & HIGH);
        }
        for (; i < to; i++) {
            if ((b[i] & 0xC0) == 0x80) {
                n++;
            }
        }
        return n;
    }

    /** Decodes the units of {@code b[off, off + len)} into {@code out} from {@code at}; returns the end. */
    static int decode(byte[] b, int off, int len, char[] out, int at) {
        int end = off + len;
        for (int i = off; i < end; ) {
            int c = b[i] & 0xFF;
            if (c < 0x80) {
                out[at++] = (char) c;
                i++;
            } else if (c < 0xE0) {
                out[at++] = (char) ((c & 0x1F) << 6 | b[i + 1] & 0x3F);
                i += 2;
            } else {
                out[at++] = (char) ((c & 0x0F) << 12 | (b[i + 1] & 0x3F) << 6 | b[i + 2] & 0x3F);
                i += 3;
            }
        }
        return at;
    }

    /** The units of {@code b[off, off + len)}, holding {@code units} of them, as a String. */
    static String toString(byte[] b, int off, int len, int units) {
        char[] c = new char[units];
        decode(b, off, len, c, 0);
        return new String(c);
    }
}
