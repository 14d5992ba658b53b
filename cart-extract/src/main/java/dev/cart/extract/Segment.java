package dev.cart.extract;

import dev.cart.core.PromptKey;
import dev.cart.core.internal.KeyAccess;
import java.io.Writer;
import java.util.Arrays;

/**
 * A run of key text with the message boundaries inside it, held as pieces: byte ranges of the request
 * body itself, and of the segment's own chunks for the text that is not in the body as it stands.
 *
 * <p>Design: a key's sections (tools, system, messages) must enter the key in a fixed order, but JSON
 * objects have no order, so {@code messages} often arrives before {@code model} and {@code tools} (the
 * OpenAI Python SDK writes it first). Each section is therefore written into its own segment and the
 * segments are replayed into the {@link PromptKey.Builder} at the end, in long runs.
 *
 * <p>Text is in the key's own byte form, {@link Cesu8} (one to three bytes per UTF-16 unit), and {@link
 * PromptKey.Builder#appendCesu8} hashes it from wherever it is (whole ASCII blocks without a copy). UTF-8
 * up to U+FFFF is already CESU-8, so the long runs of a JSON string that hold no escape and no four-byte
 * sequence are not copied at all: {@link JsonText} records them as {@linkplain #addRef references} to the
 * body's bytes, which must then stay unchanged until the segment is replayed (an extraction replays its
 * segments before it returns). Everything else (delimiters, roles, escapes decoded, short runs, canonical
 * JSON) is written into the segment's own chunks: a chunk that is full is followed by a new one, twice its
 * size, and never copied, so nothing a segment holds is copied as it grows. Consecutive writes into one
 * chunk extend one piece, so a message's text is replayed in as few calls as the body allows.
 *
 * <p>Lengths and boundaries are counted in UTF-16 units, as the key counts them; a boundary is kept as
 * the number of pieces before it. {@link #addUtf8} copies {@link Utf8Builder}'s text (four-byte sequences
 * rewritten as their two surrogates). It is a {@link Writer} so that {@code JsonParser.getText(Writer)}
 * can stream a long string value into it segment by segment, without first joining Jackson's buffers
 * into one array or String. Not thread-safe; owned by one extraction.
 */
final class Segment extends Writer {

    /** The array each piece's bytes are in: the body or one of the segment's chunks. */
    private byte[][] srcs = NO_SRCS;
    /** Per piece: offset, length in bytes, length in units. */
    private int[] spans = NO_INTS;

    private int pieces;
    /** Whether the last piece ends at {@link #fill()} in {@link #chunk}, so that own writes extend it. */
    private boolean open;

    /** The chunk own text is written into, and its bytes in use. */
    private byte[] chunk = NO_BYTES;

    private int fill;
    /** UTF-16 units of the text. */
    private int units;

    /** Message boundaries: the unit offset and the number of pieces before each. */
    private int[] boundUnits = NO_INTS;

    private int[] boundPieces = NO_INTS;
    private int boundCount;

    /** State saved by {@link #mark()}. */
    private int markPieces;

    private int markLastLen;
    private int markLastUnits;
    private boolean markOpen;
    private byte[] markChunk = NO_BYTES;
    private int markFill;
    private int markUnits;
    private int markBounds;

    /** The first chunk's size: chunks are made on first use, as most sections of a body stay empty. */
    private final int initialCapacity;

    /** The largest chunk made to double the one before (a larger write gets a chunk of its own size). */
    private static final int MAX_CHUNK = 1 << 16;

    private static final byte[] NO_BYTES = new byte[0];
    private static final byte[][] NO_SRCS = new byte[0][];
    private static final int[] NO_INTS = new int[0];

    Segment(int initialCapacity) {
        this.initialCapacity = Math.max(16, initialCapacity);
    }

    /**
     * Makes {@code c} the chunk own text is written into first, in place of one the segment would make:
     * before anything is written. Its contents are never read beyond what the segment writes into it.
     */
    void firstChunk(byte[] c) {
        if (pieces == 0 && chunk.length == 0) {
            chunk = c;
            fill = 0;
        }
    }

    /** Length in UTF-16 units. */
    int length() {
        return units;
    }

    boolean isEmpty() {
        return units == 0;
    }

    /**
     * The chunk, with room for {@code extra} more bytes at {@link #fill()}: a writer fills it from there
     * and then calls {@link #wrote}. A new chunk when the current one lacks the room: the first of the
     * segment's initial capacity, a later one twice the size of the one before, or {@code hint} bytes (up to
     * {@link #MAX_CHUNK}) when the writer expects that many more.
     */
    byte[] room(int extra, int hint) {
        if (extra < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (chunk.length - fill >= extra) {
            return chunk;
        }
        int size = chunk.length == 0 ? initialCapacity : Math.min(MAX_CHUNK, Math.max(chunk.length << 1, hint));
        chunk = new byte[Math.max(size, extra)];
        fill = 0;
        open = false;
        return chunk;
    }

    private byte[] room(int extra) {
        return room(extra, 0);
    }

    /** The chunk own text is being written into (see {@link #room}). */
    byte[] chunk() {
        return chunk;
    }

    /** Where the next own byte goes in {@link #chunk()}. */
    int fill() {
        return fill;
    }

    /** Makes the bytes written into the chunk from {@link #fill()} to {@code end}, {@code added} units, text. */
    void wrote(int end, int added) {
        int len = end - fill;
        if (len == 0) {
            return;
        }
        if (open) {
            int s = 3 * (pieces - 1);
            spans[s + 1] += len;
            spans[s + 2] += added;
        } else {
            piece(chunk, fill, len, added);
            open = true;
        }
        fill = end;
        units += added;
    }

    private void piece(byte[] src, int off, int len, int n) {
        if (pieces == srcs.length) {
            int cap = Math.max(8, pieces * 2);
            srcs = Arrays.copyOf(srcs, cap);
            spans = Arrays.copyOf(spans, 3 * cap);
        }
        srcs[pieces] = src;
        int s = 3 * pieces++;
        spans[s] = off;
        spans[s + 1] = len;
        spans[s + 2] = n;
    }

    /**
     * Appends {@code src[off, off + len)}, CESU-8 holding {@code n} units, by reference: the bytes are read
     * when the segment is replayed, and must not change until then.
     */
    void addRef(byte[] src, int off, int len, int n) {
        if (len == 0) {
            return;
        }
        piece(src, off, len, n);
        open = false;
        units += n;
    }

    /** Appends a copy of {@code src[off, off + len)}, CESU-8 holding {@code n} units. */
    void addCopy(byte[] src, int off, int len, int n) {
        byte[] b = room(len);
        System.arraycopy(src, off, b, fill, len);
        wrote(fill + len, n);
    }

    /** Saves the segment's state, to which {@link #reset()} returns (one mark at a time). */
    void mark() {
        markPieces = pieces;
        if (pieces > 0) {
            markLastLen = spans[3 * pieces - 2];
            markLastUnits = spans[3 * pieces - 1];
        }
        markOpen = open;
        markChunk = chunk;
        markFill = fill;
        markUnits = units;
        markBounds = boundCount;
    }

    /** Returns to the state of the last {@link #mark()}: what was appended since is dropped. */
    void reset() {
        Arrays.fill(srcs, markPieces, pieces, null);
        pieces = markPieces;
        if (pieces > 0) {
            spans[3 * pieces - 2] = markLastLen;
            spans[3 * pieces - 1] = markLastUnits;
        }
        open = markOpen;
        chunk = markChunk;
        fill = markFill;
        units = markUnits;
        boundCount = markBounds;
        markChunk = NO_BYTES; // not kept past its reset
    }

    Segment add(char c) {
        byte[] b = room(3);
        int at = fill;
        if (c < 0x80) {
            b[at++] = (byte) c;
        } else {
            at = Cesu8.encode(b, at, c);
        }
        wrote(at, 1);
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

    /**
     * Appends {@code open}, {@code label}, {@code close} (a message's head: its delimiters are ASCII), as the
     * three appends would: in one write when the label is short (a role).
     */
    Segment addLabel(char open, String label, char close) {
        int n = label.length();
        if (open >= 0x80 || close >= 0x80 || n > 64) {
            return add(open).add(label).add(close);
        }
        byte[] b = room(3 * n + 2);
        int at = fill;
        b[at++] = (byte) open;
        for (int i = 0; i < n; i++) {
            char c = label.charAt(i);
            if (c < 0x80) {
                b[at++] = (byte) c;
            } else {
                at = Cesu8.encode(b, at, c);
            }
        }
        b[at++] = (byte) close;
        wrote(at, n + 2);
        return this;
    }

    private Segment add(CharSequence s, int from, int to) {
        int need = to - from;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                need += c < 0x800 ? 1 : 2;
            }
        }
        byte[] b = room(need);
        int at = fill;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                b[at++] = (byte) c;
            } else {
                at = Cesu8.encode(b, at, c);
            }
        }
        wrote(at, to - from);
        return this;
    }

    /** Appends chars. */
    Segment add(char[] chars, int off, int n) {
        byte[] b = room(3 * n);
        int at = fill;
        for (int i = off, end = off + n; i < end; i++) {
            char c = chars[i];
            if (c < 0x80) {
                b[at++] = (byte) c;
            } else {
                at = Cesu8.encode(b, at, c);
            }
        }
        wrote(at, n);
        return this;
    }

    /**
     * Appends the text of {@code src[off, off + n)}, which must be well-formed UTF-8 (the body is validated
     * before parsing) or the generalized UTF-8 of {@link Utf8Builder} (a lone surrogate as three bytes):
     * copied as it is but for four-byte sequences, each written as its two surrogates.
     */
    Segment addUtf8(byte[] src, int off, int n) {
        byte[] b = room(n + (n >> 1));
        int at = Cesu8.fromUtf8(src, off, n, b, fill);
        wrote(at, at - fill - Cesu8.continuations(b, fill, at));
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
            boundPieces = Arrays.copyOf(boundPieces, Math.max(8, boundCount * 2));
        }
        boundUnits[boundCount] = units;
        boundPieces[boundCount++] = pieces;
        open = false; // text after the boundary starts a piece of its own
    }

    /** Where assembled key text goes: the key builder, the token-mode chunks, or a String for tests. */
    interface Sink {
        /** The key builder's byte entry points, which cart-core does not make public API. */
        KeyAccess.Secrets KEYS = KeyAccess.secrets();

        /** {@code units} UTF-16 units as CESU-8 bytes ({@code units == len} exactly when they are ASCII). */
        void appendCesu8(byte[] bytes, int off, int len, int units);

        void boundary();

        static Sink of(PromptKey.Builder key) {
            return new Sink() {
                @Override
                public void appendCesu8(byte[] bytes, int off, int len, int units) {
                    KEYS.appendCesu8(key, bytes, off, len, units);
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
        int k = 0;
        for (int p = 0; p < pieces; p++) {
            int s = 3 * p;
            key.appendCesu8(srcs[p], spans[s], spans[s + 1], spans[s + 2]);
            while (k < boundCount && boundPieces[k] == p + 1) {
                key.boundary();
                k++;
            }
        }
    }

    /** The text as a String (small segments only: canonical JSON, attributes, token mode). */
    String text() {
        if (pieces == 1) {
            return Cesu8.toString(srcs[0], spans[0], spans[1], spans[2]);
        }
        StringBuilder sb = new StringBuilder(units);
        for (int p = 0; p < pieces; p++) {
            int s = 3 * p;
            sb.append(Cesu8.toString(srcs[p], spans[s], spans[s + 1], spans[s + 2]));
        }
        return sb.toString();
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
