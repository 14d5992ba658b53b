package dev.cart.extract;

import dev.cart.core.PromptKey;
import java.io.Writer;
import java.util.Arrays;

/**
 * A growable run of key text with the message boundaries inside it.
 *
 * <p>Design: a key's sections (tools, system, messages) must enter the key in a fixed order, but JSON
 * objects have no order, so {@code messages} often arrives before {@code model} and {@code tools} (the
 * OpenAI Python SDK writes it first). Each section is therefore written into its own segment and the
 * segments are replayed into the {@link PromptKey.Builder} at the end, in long runs.
 *
 * <p>Storage is the key's own byte form, {@link Cesu8} (one to three bytes per UTF-16 unit), in one
 * array, and {@link PromptKey.Builder#appendCesu8} hashes it from there (whole ASCII blocks without a
 * copy). Lengths and boundaries are counted in UTF-16 units, as the key counts them; each boundary also
 * remembers its byte offset. {@link JsonText} copies a string's UTF-8 from the request body straight in;
 * {@link #addUtf8} does the same for {@link Utf8Builder}'s text (four-byte sequences rewritten as their two
 * surrogates).
 *
 * <p>It is a {@link Writer} so that {@code JsonParser.getText(Writer)} can stream a long string value
 * into it segment by segment, without first joining Jackson's buffers into one array or String.
 * Not thread-safe; owned by one extraction.
 */
final class Segment extends Writer {

    /** The text as CESU-8. */
    private byte[] buf;
    /** Bytes of {@link #buf} in use. */
    private int byteLen;
    /** UTF-16 units of the text. */
    private int units;

    /** Message boundaries: the unit offset and the byte offset of each. */
    private int[] boundUnits = NO_INTS;

    private int[] boundBytes = NO_INTS;
    private int boundCount;

    /** The first allocation's size: arrays are made on first use, as most sections of a body stay empty. */
    private final int initialCapacity;

    private static final byte[] NO_BYTES = new byte[0];
    private static final int[] NO_INTS = new int[0];

    Segment(int initialCapacity) {
        this.initialCapacity = Math.max(16, initialCapacity);
        buf = NO_BYTES;
    }

    /** Length in UTF-16 units. */
    int length() {
        return units;
    }

    boolean isEmpty() {
        return units == 0;
    }

    /** Length in bytes. */
    int byteLength() {
        return byteLen;
    }

    private byte[] ensure(int extra) {
        int need = byteLen + extra;
        if (need < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (need > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(Math.max(need, initialCapacity), buf.length + (buf.length >> 1)));
        }
        return buf;
    }

    Segment add(char c) {
        byte[] b = ensure(3);
        if (c < 0x80) {
            b[byteLen++] = (byte) c;
        } else {
            byteLen = Cesu8.encode(b, byteLen, c);
        }
        units++;
        return this;
    }

    Segment add(String s) {
        return add((CharSequence) s, 0, s.length());
    }

    Segment add(StringBuilder sb) {
        return add(sb, 0, sb.length());
    }

    /** Appends the text of {@code u} (its UTF-8 decoded, see {@link Utf8Builder}). */
    Segment add(Utf8Builder u) {
        return addUtf8(u.bytes(), 0, u.length());
    }

    private Segment add(CharSequence s, int from, int to) {
        byte[] b = ensure(3 * (to - from));
        int at = byteLen;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                b[at++] = (byte) c;
            } else {
                at = Cesu8.encode(b, at, c);
            }
        }
        byteLen = at;
        units += to - from;
        return this;
    }

    /** Appends chars. */
    Segment add(char[] chars, int off, int n) {
        byte[] b = ensure(3 * n);
        int at = byteLen;
        for (int i = off, end = off + n; i < end; i++) {
            char c = chars[i];
            if (c < 0x80) {
                b[at++] = (byte) c;
            } else {
                at = Cesu8.encode(b, at, c);
            }
        }
        byteLen = at;
        units += n;
        return this;
    }

    /**
     * The buffer, with room for {@code extra} more bytes after {@link #byteLength()}: a writer fills it from
     * there and then calls {@link #commit} (or leaves the bytes uncommitted, which discards them).
     */
    byte[] reserve(int extra) {
        return ensure(extra);
    }

    /**
     * The buffer grown, while a writer of {@link #reserve} is at {@code at} (bytes written but not committed
     * are kept), to room for at least {@code extra} more bytes from there.
     */
    byte[] grow(int at, int extra) {
        int need = at + extra;
        if (need < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (need > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(Math.max(need, initialCapacity), buf.length << 1));
        }
        return buf;
    }

    /** Makes the bytes a writer of {@link #reserve} wrote up to {@code end}, {@code added} units, part of the text. */
    void commit(int end, int added) {
        byteLen = end;
        units += added;
    }

    /**
     * Appends the text of {@code src[off, off + n)}, which must be well-formed UTF-8 (the body is validated
     * before parsing) or the generalized UTF-8 of {@link Utf8Builder} (a lone surrogate as three bytes):
     * copied as it is but for four-byte sequences, each written as its two surrogates.
     */
    Segment addUtf8(byte[] src, int off, int n) {
        byte[] b = ensure(n + (n >> 1));
        int at = byteLen;
        int added = 0;
        int end = off + n;
        int i = off;
        while (i < end) {
            int run = Utf8.asciiRun(src, i, end);
            if (run > 0) {
                System.arraycopy(src, i, b, at, run);
                at += run;
                added += run;
                i += run;
                continue;
            }
            int b0 = src[i] & 0xFF;
            if (b0 < 0xF0) {
                int len = b0 < 0xE0 ? 2 : 3;
                System.arraycopy(src, i, b, at, len);
                at += len;
                added++;
                i += len;
            } else {
                int cp = (b0 & 0x07) << 18 | (src[i + 1] & 0x3F) << 12 | (src[i + 2] & 0x3F) << 6 | (src[i + 3] & 0x3F);
                at = Cesu8.encode(b, at, Character.highSurrogate(cp));
                at = Cesu8.encode(b, at, Character.lowSurrogate(cp));
                added += 2;
                i += 4;
            }
        }
        commit(at, added);
        return this;
    }

    /**
     * Marks a message boundary at the current length. A repeated mark at one offset counts once, and a
     * mark at offset 0 is dropped: a boundary needs text before it (and one right after the model marker
     * would shrink the key's anchor to the marker alone).
     */
    void boundary() {
        if (units == 0 || boundCount > 0 && boundUnits[boundCount - 1] == units) {
            return;
        }
        if (boundCount == boundUnits.length) {
            boundUnits = Arrays.copyOf(boundUnits, Math.max(8, boundCount * 2));
            boundBytes = Arrays.copyOf(boundBytes, Math.max(8, boundCount * 2));
        }
        boundUnits[boundCount] = units;
        boundBytes[boundCount++] = byteLen;
    }

    /** Where assembled key text goes: the key builder, the token-mode chunks, or a String for tests. */
    interface Sink {
        /** {@code units} UTF-16 units as CESU-8 bytes ({@code units == len} exactly when they are ASCII). */
        void appendCesu8(byte[] bytes, int off, int len, int units);

        void boundary();

        static Sink of(PromptKey.Builder key) {
            return new Sink() {
                @Override
                public void appendCesu8(byte[] bytes, int off, int len, int units) {
                    key.appendCesu8(bytes, off, len, units);
                }

                @Override
                public void boundary() {
                    key.boundary();
                }
            };
        }
    }

    /** Replays the text into {@code key}, calling {@code boundary()} at each recorded offset. */
    void appendTo(Sink key) {
        int u = 0;
        int p = 0;
        for (int k = 0; k < boundCount; k++) {
            int bu = boundUnits[k];
            int bb = boundBytes[k];
            if (bu > u) {
                key.appendCesu8(buf, p, bb - p, bu - u);
                u = bu;
                p = bb;
            }
            key.boundary();
        }
        if (units > u) {
            key.appendCesu8(buf, p, byteLen - p, units - u);
        }
    }

    /** The text as a String (small segments only: canonical JSON, attributes, token mode). */
    String text() {
        return Cesu8.toString(buf, 0, byteLen, units);
    }

    // Writer: the target of JsonParser.getText(Writer).

    @Override
    public void write(char[] cbuf, int off, int n) {
        add(cbuf, off, n);
    }

    @Override
    public void write(int c) {
        add((char) c);
    }

    @Override
    public void write(String str, int off, int n) {
        add(str, off, off + n);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
}
