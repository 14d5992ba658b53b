package dev.cart.extract;

import dev.cart.core.PromptKey;
import java.io.Writer;
import java.util.Arrays;

/**
 * A growable run of key characters with the message boundaries inside it.
 *
 * <p>Design: a key's sections (tools, system, messages) must enter the key in a fixed order, but JSON
 * objects have no order, so {@code messages} often arrives before {@code model} and {@code tools} (the
 * OpenAI Python SDK writes it first). Each section is therefore written into its own segment and the
 * segments are replayed into the {@link PromptKey.Builder} at the end, in long runs.
 *
 * <p>Storage is compact, as in {@code String}: characters up to U+00FF (all ASCII and Latin-1 text) are
 * kept one byte each in {@link #lat}, and replayed with {@link PromptKey.Builder#appendLatin1}, which
 * hashes full blocks straight from that array; runs of wider characters are kept as chars in
 * {@link #wide}. The text is a sequence of <em>pieces</em>, alternately of one kind and the other, so a
 * message with one CJK word does not widen the rest of the conversation. {@link #addUtf8} copies the
 * unescaped UTF-8 of a request body in (ASCII eight bytes at a time), without a detour through chars.
 *
 * <p>It is a {@link Writer} so that {@code JsonParser.getText(Writer)} can stream a long string value
 * into it segment by segment, without first joining Jackson's buffers into one array or String.
 * Not thread-safe; owned by one extraction.
 */
final class Segment extends Writer {

    /** Latin-1 characters, one per byte. */
    private byte[] lat;

    private int latLen;
    /** Characters above U+00FF. */
    private char[] wide = NO_CHARS;

    private int wideLen;
    /** Where each piece ends, in characters of the whole segment; pieces alternate kind. */
    private int[] pieceEnds = new int[4];

    private int pieceCount;
    /** Whether piece 0 is wide (then odd pieces are Latin-1, and the other way round). */
    private boolean firstWide;

    private int[] bounds = new int[8];
    private int boundCount;

    private int markLat;
    private int markWide;
    private int markPieces;
    private int markLastEnd;
    private int markBounds;

    private static final char[] NO_CHARS = new char[0];

    Segment(int initialCapacity) {
        lat = new byte[Math.max(16, initialCapacity)];
    }

    int length() {
        return latLen + wideLen;
    }

    boolean isEmpty() {
        return length() == 0;
    }

    private boolean lastIsWide() {
        return ((pieceCount - 1) & 1) == 0 == firstWide;
    }

    /** Extends the last piece when it is of this kind, else opens a piece; then it ends at {@code end}. */
    private void piece(boolean isWide, int end) {
        if (pieceCount > 0 && lastIsWide() == isWide) {
            pieceEnds[pieceCount - 1] = end;
            return;
        }
        if (pieceCount == 0) {
            firstWide = isWide;
        }
        if (pieceCount == pieceEnds.length) {
            pieceEnds = Arrays.copyOf(pieceEnds, pieceCount * 2);
        }
        pieceEnds[pieceCount++] = end;
    }

    private void ensureLat(int extra) {
        int need = latLen + extra;
        if (need < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (need > lat.length) {
            lat = Arrays.copyOf(lat, Math.max(need, lat.length + (lat.length >> 1)));
        }
    }

    private void ensureWide(int extra) {
        int need = wideLen + extra;
        if (need < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (need > wide.length) {
            wide = Arrays.copyOf(wide, Math.max(Math.max(need, 16), wide.length + (wide.length >> 1)));
        }
    }

    Segment add(char c) {
        if (c <= 0xFF) {
            if (latLen == lat.length) {
                ensureLat(1);
            }
            lat[latLen++] = (byte) c;
            piece(false, length());
        } else {
            ensureWide(1);
            wide[wideLen++] = c;
            piece(true, length());
        }
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

    /** Appends {@code s[from, to)}: Latin-1 characters into the byte buffer, others as chars. */
    private Segment add(CharSequence s, int from, int to) {
        byte[] b = reserveLatin1(to - from);
        int at = latLen;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c <= 0xFF) {
                b[at++] = (byte) c;
            } else {
                commitLatin1(at);
                addWide(c);
            }
        }
        commitLatin1(at);
        return this;
    }

    /** Appends chars, splitting them into Latin-1 and wide pieces. */
    Segment add(char[] chars, int off, int n) {
        int end = off + n;
        int i = off;
        while (i < end) {
            int start = i;
            if (chars[i] <= 0xFF) {
                ensureLat(end - i);
                byte[] b = lat;
                int at = latLen;
                while (i < end && chars[i] <= 0xFF) {
                    b[at++] = (byte) chars[i++];
                }
                latLen = at;
                piece(false, length());
            } else {
                while (i < end && chars[i] > 0xFF) {
                    i++;
                }
                ensureWide(i - start);
                System.arraycopy(chars, start, wide, wideLen, i - start);
                wideLen += i - start;
                piece(true, length());
            }
        }
        return this;
    }

    /**
     * The Latin-1 buffer, with room for {@code extra} more characters after {@link #latin1Length()}: a
     * writer fills it from there and then calls {@link #commitLatin1} (and nothing else in between).
     */
    byte[] reserveLatin1(int extra) {
        ensureLat(extra);
        return lat;
    }

    /**
     * The Latin-1 buffer grown, while a writer of {@link #reserveLatin1} is at {@code at} (bytes written
     * but not committed are kept), to room for at least {@code extra} more bytes from there.
     */
    byte[] growLatin1(int at, int extra) {
        int need = at + extra;
        if (need < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (need > lat.length) {
            lat = Arrays.copyOf(lat, Math.max(need, lat.length << 1));
        }
        return lat;
    }

    /** Characters in the Latin-1 buffer (the offset a writer of {@link #reserveLatin1} starts at). */
    int latin1Length() {
        return latLen;
    }

    /** Makes the Latin-1 characters written up to {@code end} part of the text. */
    void commitLatin1(int end) {
        if (end != latLen) {
            latLen = end;
            piece(false, length());
        }
    }

    /** Appends one character above U+00FF (or any character, kept as a char). */
    void addWide(char c) {
        ensureWide(1);
        wide[wideLen++] = c;
        piece(true, length());
    }

    /** Appends {@code n} ASCII bytes of {@code src} from {@code off} (each byte is one character). */
    Segment addAscii(byte[] src, int off, int n) {
        if (n > 0) {
            ensureLat(n);
            System.arraycopy(src, off, lat, latLen, n);
            latLen += n;
            piece(false, length());
        }
        return this;
    }

    /**
     * Appends the characters of {@code src[off, off + n)}, which must be well-formed UTF-8 (the body is
     * validated before parsing): ASCII is copied as it is, two-byte sequences up to U+00FF become
     * Latin-1 bytes, everything else UTF-16 chars (a surrogate pair for a four-byte sequence).
     */
    Segment addUtf8(byte[] src, int off, int n) {
        int end = off + n;
        int i = off;
        while (i < end) {
            int run = Utf8.asciiRun(src, i, end);
            if (run > 0) {
                addAscii(src, i, run);
                i += run;
                continue;
            }
            int b0 = src[i] & 0xFF;
            if (b0 < 0xE0) {
                add((char) ((b0 & 0x1F) << 6 | (src[i + 1] & 0x3F)));
                i += 2;
            } else if (b0 < 0xF0) {
                add((char) ((b0 & 0x0F) << 12 | (src[i + 1] & 0x3F) << 6 | (src[i + 2] & 0x3F)));
                i += 3;
            } else {
                int cp = (b0 & 0x07) << 18 | (src[i + 1] & 0x3F) << 12 | (src[i + 2] & 0x3F) << 6 | (src[i + 3] & 0x3F);
                add(Character.highSurrogate(cp));
                add(Character.lowSurrogate(cp));
                i += 4;
            }
        }
        return this;
    }

    /** Remembers the current end, for {@link #reset()}: one mark at a time. */
    void mark() {
        markLat = latLen;
        markWide = wideLen;
        markPieces = pieceCount;
        markLastEnd = pieceCount == 0 ? 0 : pieceEnds[pieceCount - 1];
        markBounds = boundCount;
    }

    /** Drops everything appended since {@link #mark()}. */
    void reset() {
        latLen = markLat;
        wideLen = markWide;
        pieceCount = markPieces;
        if (pieceCount > 0) {
            pieceEnds[pieceCount - 1] = markLastEnd;
        }
        boundCount = markBounds;
    }

    /**
     * Marks a message boundary at the current length. A repeated mark at one offset counts once, and a
     * mark at offset 0 is dropped: a boundary needs text before it (and one right after the model marker
     * would shrink the key's anchor to the marker alone).
     */
    void boundary() {
        markAt(length());
    }

    private void markAt(int at) {
        if (at == 0 || boundCount > 0 && bounds[boundCount - 1] == at) {
            return;
        }
        if (boundCount == bounds.length) {
            bounds = Arrays.copyOf(bounds, boundCount * 2);
        }
        bounds[boundCount++] = at;
    }

    /** Where assembled key characters go: the key builder, the token-mode chunks, or a String for tests. */
    interface Sink {
        void append(char[] chars, int off, int len);

        /** Latin-1 characters, one per byte. */
        default void appendLatin1(byte[] bytes, int off, int len) {
            char[] c = new char[len];
            for (int i = 0; i < len; i++) {
                c[i] = (char) (bytes[off + i] & 0xFF);
            }
            append(c, 0, len);
        }

        void boundary();

        static Sink of(PromptKey.Builder key) {
            return new Sink() {
                @Override
                public void append(char[] chars, int off, int len) {
                    key.append(chars, off, len);
                }

                @Override
                public void appendLatin1(byte[] bytes, int off, int len) {
                    key.appendLatin1(bytes, off, len);
                }

                @Override
                public void boundary() {
                    key.boundary();
                }
            };
        }
    }

    /** Replays the characters into {@code key}, calling {@code boundary()} at each recorded offset. */
    void appendTo(Sink key) {
        replay(key);
    }

    private void replay(Sink key) {
        int pos = 0;
        int latAt = 0;
        int wideAt = 0;
        int b = 0;
        for (int p = 0; p < pieceCount; p++) {
            boolean isWide = (p & 1) == 0 == firstWide;
            int end = pieceEnds[p];
            while (pos < end) {
                while (b < boundCount && bounds[b] <= pos) {
                    key.boundary();
                    b++;
                }
                int to = b < boundCount ? Math.min(end, bounds[b]) : end;
                int n = to - pos;
                if (isWide) {
                    key.append(wide, wideAt, n);
                    wideAt += n;
                } else {
                    key.appendLatin1(lat, latAt, n);
                    latAt += n;
                }
                pos = to;
            }
        }
        while (b < boundCount) {
            key.boundary();
            b++;
        }
    }

    /** The characters as a String (small segments only: canonical JSON, attributes). */
    String text() {
        StringBuilder sb = new StringBuilder(length());
        replay(new Sink() {
            @Override
            public void append(char[] chars, int off, int len) {
                sb.append(chars, off, len);
            }

            @Override
            public void appendLatin1(byte[] bytes, int off, int len) {
                for (int i = 0; i < len; i++) {
                    sb.append((char) (bytes[off + i] & 0xFF));
                }
            }

            @Override
            public void boundary() {}
        });
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
