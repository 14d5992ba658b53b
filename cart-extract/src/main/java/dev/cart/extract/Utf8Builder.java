package dev.cart.extract;

import java.util.Arrays;

/**
 * A growable run of UTF-8 bytes: where {@link CanonicalJson} writes, so that a tool definition's plain
 * ASCII strings are copied from the body as they are and the whole text enters a {@link Segment} through
 * {@link Segment#addUtf8} (ASCII eight bytes at a time) instead of char by char.
 *
 * <p>Chars are encoded one to one and back: a surrogate pair as its four-byte sequence, and a surrogate
 * that is not part of a pair (a JSON string may hold one as an escape) as the three bytes of its value
 * (the generalized UTF-8 that {@link Segment#addUtf8} decodes back to the same char), so writing a String
 * here and replaying the bytes gives exactly the String's chars. Not thread-safe.
 */
final class Utf8Builder {

    private byte[] bytes;
    private int length;

    Utf8Builder(int capacity) {
        bytes = new byte[Math.max(16, capacity)];
    }

    int length() {
        return length;
    }

    /** The buffer; its first {@link #length()} bytes are the text. */
    byte[] bytes() {
        return bytes;
    }

    void setLength(int n) {
        length = n;
    }

    private byte[] room(int extra) {
        int need = length + extra;
        if (need < 0) {
            throw new OutOfMemoryError("canonical JSON too large");
        }
        if (need > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(need, bytes.length << 1));
        }
        return bytes;
    }

    Utf8Builder ascii(char c) {
        room(1)[length++] = (byte) c;
        return this;
    }

    /** Appends {@code b[from, to)} as it is (UTF-8 the caller vouches for). */
    Utf8Builder raw(byte[] b, int from, int to) {
        int n = to - from;
        System.arraycopy(b, from, room(n), length, n);
        length += n;
        return this;
    }

    /** Appends {@code src[from, to)} of another builder (reordering members). */
    Utf8Builder raw(Utf8Builder src, int from, int to) {
        return raw(src.bytes, from, to);
    }

    /** Appends the chars of {@code s}, encoded as described above. */
    Utf8Builder string(String s) {
        int n = s.length();
        byte[] b = room(n * 3);
        int at = length;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                b[at++] = (byte) c;
            } else {
                at = encode(b, at, s, i, c);
                if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                }
            }
        }
        length = at;
        return this;
    }

    /**
     * {@code s} as a JSON string with minimal escaping: {@code "} and {@code \} escaped with a backslash,
     * control characters as {@code \}{@code u00XX}, everything else as it is.
     */
    Utf8Builder quoted(String s) {
        int n = s.length();
        byte[] b = room(n * 6 + 2);
        int at = length;
        b[at++] = '"';
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                b[at++] = (byte) c;
            } else if (c == '"' || c == '\\') {
                b[at++] = '\\';
                b[at++] = (byte) c;
            } else if (c < 0x20) {
                b[at++] = '\\';
                b[at++] = 'u';
                b[at++] = '0';
                b[at++] = '0';
                b[at++] = (byte) Character.forDigit(c >> 4, 16);
                b[at++] = (byte) Character.forDigit(c & 0xF, 16);
            } else {
                at = encode(b, at, s, i, c);
                if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                }
            }
        }
        b[at++] = '"';
        length = at;
        return this;
    }

    /** Encodes {@code c = s.charAt(i)}, at least U+0080 (with the next char when they form a pair). */
    private static int encode(byte[] b, int at, String s, int i, char c) {
        if (c < 0x800) {
            b[at++] = (byte) (0xC0 | c >> 6);
            b[at++] = (byte) (0x80 | c & 0x3F);
        } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
            int cp = Character.toCodePoint(c, s.charAt(i + 1));
            b[at++] = (byte) (0xF0 | cp >> 18);
            b[at++] = (byte) (0x80 | cp >> 12 & 0x3F);
            b[at++] = (byte) (0x80 | cp >> 6 & 0x3F);
            b[at++] = (byte) (0x80 | cp & 0x3F);
        } else {
            b[at++] = (byte) (0xE0 | c >> 12);
            b[at++] = (byte) (0x80 | c >> 6 & 0x3F);
            b[at++] = (byte) (0x80 | c & 0x3F);
        }
        return at;
    }

    /** The text, decoded as {@link Segment#addUtf8} decodes it (tests). */
    @Override
    public String toString() {
        return new Segment(length).addUtf8(bytes, 0, length).text();
    }
}
