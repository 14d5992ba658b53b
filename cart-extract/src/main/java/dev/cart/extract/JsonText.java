package dev.cart.extract;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Decodes a JSON string straight from the request body into a {@link Segment}, in the key's byte form
 * ({@link Cesu8}), so that prompt text reaches the key builder as bytes without a detour through
 * Jackson's char buffers or through chars at all, and its long plain runs without a copy.
 *
 * <p>How: from the opening quote, runs of bytes that are neither a quote, a backslash, a control
 * character nor the lead byte of a four-byte sequence are found eight bytes at a time (sixteen while they
 * are ASCII), and not copied: UTF-8 up to U+FFFF is already CESU-8, so a run of {@link #MIN_REF} bytes or
 * more enters the segment as a reference to the body's bytes, which the key builder hashes where they
 * stand; a shorter one is copied into the segment's own chunk, where consecutive short runs and escapes
 * make one piece. An escape ({@code \n}, {@code \"}, a backslash-u escape, a surrogate pair as two of
 * them) becomes the bytes of its char; a four-byte sequence (an emoji) becomes its two surrogates, three
 * bytes each. The units are exactly those Jackson's {@code getText} would give. A run's length in units
 * is its bytes less its continuation bytes, counted eight at a time. Anything this decoder does not
 * accept (a raw control character, an unknown escape, a malformed four-byte sequence, a string that does
 * not end, non-ASCII in the body's last eight bytes) leaves the segment as it was ({@link Segment#mark})
 * and returns -1: the caller then reads the string through Jackson, which reports the error as it always
 * has. What it accepts is what Jackson accepts, so the parser is told the string is read ({@link
 * BodyParser#stringRead}) and does not scan it a second time. Its UTF-8 is checked as strictly as {@link
 * Utf8#isValid} checks it, a word at a time as it is scanned ({@link #utf8Step}; a string with an invalid
 * sequence is declined), so the strings it read need no check of their own.
 * Stateless and thread-safe.
 */
final class JsonText {

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGH = 0x8080808080808080L;
    /**
     * The shortest run appended by reference rather than copied: each piece costs the key builder a call
     * and, where it starts or ends inside a block, a copy of that block's part, so short runs are cheaper
     * copied.
     */
    static final int MIN_REF = 128;

    /** The char of each one-letter escape ({@code \\n} and the like) by its letter; 0 for the others. */
    private static final byte[] SIMPLE = new byte[128];

    static {
        SIMPLE['"'] = '"';
        SIMPLE['\\'] = '\\';
        SIMPLE['/'] = '/';
        SIMPLE['b'] = '\b';
        SIMPLE['f'] = '\f';
        SIMPLE['n'] = '\n';
        SIMPLE['r'] = '\r';
        SIMPLE['t'] = '\t';
    }

    private JsonText() {}

    /**
     * Appends the text of the JSON string whose opening quote is {@code b[quote]} to {@code out}; returns
     * the offset of its closing quote, or -1 (and {@code out} unchanged) when the string is left to
     * Jackson. Runs of plain bytes are scanned, not copied: one of {@link #MIN_REF} bytes or more enters
     * {@code out} as a reference to {@code b}, a shorter one as a copy; an escape or a four-byte sequence
     * enters as the bytes of its chars.
     */
    static int decode(byte[] b, int quote, Segment out) {
        return decode(b, quote, b.length, out);
    }

    /** {@link #decode(byte[], int, Segment)} of a body that ends at {@code b[n]} (exclusive). */
    static int decode(byte[] b, int quote, int n, Segment out) {
        if (quote < 0 || quote >= n || b[quote] != '"') {
            return -1;
        }
        out.mark();
        int end = decodeFrom(b, quote + 1, n, out);
        if (end < 0) {
            out.reset();
        }
        return end;
    }

    /** {@link #decode} past the opening quote; on -1 the caller drops what was appended. */
    private static int decodeFrom(byte[] b, int from, int n, Segment out) {
        int i = from;
        int run = i; // the plain run not yet appended starts here
        int cont = 0; // continuation bytes of the run: its units are its bytes less these
        long state = 0; // what the UTF-8 of the words so far leaves for the next word (see utf8Step)
        // own bytes (short runs, escapes) go straight into the segment's chunk, committed in one go
        byte[] o = out.chunk();
        int at = out.fill();
        int units = 0; // units written at o from out.fill() to at, not yet committed
        // The word loops test the array's length too: that test lets the JIT drop the bounds checks of their
        // reads (a test against n alone does not), so they may read up to a word past n, which is the array's
        // and never the string's: a stop found at n or beyond ends in -1 below, and so does a string that runs
        // to n without a stop.
        int lim = b.length;
        while (true) {
            while (i < n && i + 16 <= lim && state == 0) {
                // plain ASCII two words at a time: the one test of the loop
                if ((specialOrHigh((long) LONGS.get(b, i)) | specialOrHigh((long) LONGS.get(b, i + 8))) != 0) {
                    break;
                }
                i += 16;
            }
            while (i < n && i + 8 <= lim) {
                long w = (long) LONGS.get(b, i);
                long m = specialOrHigh(w);
                if ((m | state) == 0) {
                    i += 8;
                    continue;
                }
                m = special(w) | fourByteLeads(w);
                if (m == 0) {
                    // no stop: bytes of 0x80 and above (or the end of a sequence) to check and count
                    state = utf8Step(w, state);
                    if (state == INVALID) {
                        return -1;
                    }
                    cont += Long.bitCount(w & ~(w << 1) & HIGH);
                    i += 8;
                    continue;
                }
                // a stop byte in this word: the run ends at it
                int k = Long.numberOfTrailingZeros(m) >>> 3;
                w &= (1L << (k << 3)) - 1; // the bytes before the stop (none when k is 0)
                if (((w & HIGH) | state) != 0) {
                    // the bytes past the stop read as zeros: a sequence the stop cuts is invalid
                    state = utf8Step(w, state);
                    if (state != 0) {
                        return -1;
                    }
                    cont += Long.bitCount(w & ~(w << 1) & HIGH);
                }
                i += k;
                break;
            }
            while (i < n && plain(b[i])) {
                if (b[i] < 0) {
                    return -1; // non-ASCII in the body's last bytes: left to Jackson and the body's check
                }
                i++;
            }
            if (i >= n || state != 0) {
                return -1;
            }
            int len = i - run;
            int copy = len;
            if (len >= MIN_REF) {
                out.wrote(at, units);
                units = 0;
                out.addRef(b, run, len, len - cont);
                at = out.fill();
                copy = 0;
            }
            if (o.length - at < copy + 6) { // the run and the bytes of an escape or a four-byte sequence
                out.wrote(at, units);
                units = 0;
                o = out.room(copy + 6, n - i);
                at = out.fill();
            }
            if (copy > 0) {
                System.arraycopy(b, run, o, at, copy);
                at += copy;
                units += copy - cont;
            }
            cont = 0;
            int c = b[i] & 0xFF;
            if (c == '"') {
                out.wrote(at, units);
                return i;
            }
            if (c >= 0xF0) {
                // a four-byte sequence: its two surrogates, three bytes each
                if (c > 0xF4 || i + 4 > n) {
                    return -1;
                }
                int b1 = b[i + 1];
                int b2 = b[i + 2];
                int b3 = b[i + 3];
                if (((b1 & b2 & b3) & 0xC0) != 0x80 || ((b1 | b2 | b3) & 0x40) != 0) {
                    return -1;
                }
                int cp = (c & 0x07) << 18 | (b1 & 0x3F) << 12 | (b2 & 0x3F) << 6 | b3 & 0x3F;
                if (cp < 0x10000 || cp > 0x10FFFF) {
                    return -1;
                }
                at = Cesu8.encode(o, at, Character.highSurrogate(cp));
                at = Cesu8.encode(o, at, Character.lowSurrogate(cp));
                units += 2;
                i += 4;
            } else if (c == '\\' && i + 1 < n) {
                int e = b[i + 1];
                int simple = e >= 0 ? SIMPLE[e] : 0;
                if (simple != 0) {
                    // the common escapes by table, not by a switch whose jump the CPU cannot predict
                    o[at++] = (byte) simple;
                    i += 2;
                } else {
                    int ch = escape(b, i, n);
                    if (ch < 0) {
                        return -1;
                    }
                    if (ch < 0x80) {
                        o[at++] = (byte) ch;
                    } else {
                        at = Cesu8.encode(o, at, (char) ch);
                    }
                    i += b[i + 1] == 'u' ? 6 : 2;
                }
                units++;
            } else {
                return -1; // a raw control character: Jackson's error
            }
            run = i;
        }
    }

    /** The char of the escape at {@code b[i] == '\\'}, or -1 when it is not a valid JSON escape. */
    private static int escape(byte[] b, int i, int n) {
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
                if (i + 6 > n) {
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

    /** Whether {@link #decode} copies byte {@code c} as it is: not a quote, backslash, control or four-byte lead. */
    static boolean plain(byte c) {
        int v = c & 0xFF;
        return v >= 0x20 && v != '"' && v != '\\' && v < 0xF0;
    }

    /**
     * Nonzero when some byte of {@code w} is a quote, a backslash or a control character; its lowest set
     * bit is the high bit of the first such byte (little-endian: the first in the body). Bits above it may
     * be false alarms (a borrow carries into the next byte), never bits below it. Bytes of 0x80 and above
     * are never flagged.
     */
    static long special(long w) {
        long q = w ^ 0x2222222222222222L;
        long s = w ^ 0x5C5C5C5C5C5C5C5CL;
        long t = (q - ONES) & ~q | (s - ONES) & ~s | (w - 0x2020202020202020L) & ~w;
        return t & HIGH;
    }

    /**
     * The high bit of every byte of {@code w} that is 0xF0 or above (a four-byte sequence's lead), exactly:
     * such a byte's low seven bits plus 0x10 carry into its bit 7, never into the next byte.
     */
    static long fourByteLeads(long w) {
        return ((w & 0x7F7F7F7F7F7F7F7FL) + 0x1010101010101010L) & w & HIGH;
    }

    /** {@link #utf8Step}'s answer for bytes that are not UTF-8. */
    static final long INVALID = -1L;

    /**
     * Checks the UTF-8 of the eight bytes of {@code w} (none of them 0xF0 or above) as a continuation of
     * the words before it, which left {@code state}; returns what this word leaves for the next, or {@link
     * #INVALID}. Strict as {@link Utf8#isValid}: every lead byte is followed by exactly its continuation
     * bytes and no other byte is one, no overlong form (C0, C1, E0 followed by less than A0), no surrogate
     * (ED followed by A0 or more). All of it at once for the word: the continuation bytes expected after the
     * word's two- and three-byte leads (and those the word before still expects, {@code state}'s bits 7
     * and 15) must be exactly its continuation bytes. The state: bits 7 and 15, continuation bytes expected
     * at the next word's bytes 0 and 1; bit 23, its byte 0 must be A0 or more (after E0); bit 31, below A0
     * (after ED). Zero when no sequence is open.
     */
    static long utf8Step(long w, long state) {
        long cont = w & ~(w << 1) & HIGH;
        long lead = w & (w << 1) & HIGH;
        long lead3 = lead & (w << 2);
        long lead2 = lead & ~(w << 2);
        if (((lead2 | lead3) << 8 | lead3 << 16 | state & 0x8080L) != cont) {
            return INVALID;
        }
        long c0c1 = lead2 & ~(w << 3 | w << 4 | w << 5 | w << 6); // 110 0000x
        long e0 = lead3 & ~(w << 4 | w << 5 | w << 6 | w << 7); // 1110 0000
        long ed = lead3 & (w << 4) & (w << 5) & ~(w << 6) & (w << 7); // 1110 1101
        long next5 = (w >>> 8) << 2; // at bit 7 of each byte: bit 5 of the byte after it
        long own5 = (w << 2) & 0x80; // at bit 7: bit 5 of byte 0
        long bad = c0c1
                | (e0 & ~next5 | ed & next5) & 0x0080808080808080L
                | (state >>> 16) & 0x80 & ~own5
                | (state >>> 24) & 0x80 & own5;
        if (bad != 0) {
            return INVALID;
        }
        return (lead2 | lead3) >>> 56 | lead3 >>> 48 | (e0 >>> 63) << 23 | (ed >>> 63) << 31;
    }

    /** Whether byte {@code c} is ASCII other than a quote, backslash or control character. */
    static boolean plainAscii(byte c) {
        return c >= 0x20 && c != '"' && c != '\\';
    }

    /**
     * Nonzero when some byte of {@code w} is a quote, a backslash, a control character or not ASCII; its
     * lowest set bit is the high bit of the first such byte (little-endian: the first in the body). Bits
     * above it may be false alarms (a borrow carries into the next byte), never bits below it.
     */
    static long specialOrHigh(long w) {
        // special(w) | w & HIGH in fewer steps: below the first byte flagged no subtraction borrows, and
        // a byte under 0x80 has its high bit set by x - 1 exactly when x is 0 (x = w ^ 0x22 or w ^ 0x5C,
        // itself under 0x80), by w - 0x20 exactly when w is under 0x20; so the masks need no "& ~x", as
        // every byte of 0x80 and above is flagged anyway
        long q = w ^ 0x2222222222222222L;
        long s = w ^ 0x5C5C5C5C5C5C5C5CL;
        return ((q - ONES) | (s - ONES) | (w - 0x2020202020202020L) | w) & HIGH;
    }
}
