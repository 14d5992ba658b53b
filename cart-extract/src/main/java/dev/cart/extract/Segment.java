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
 * segments are replayed into the {@link PromptKey.Builder} at the end, in long
 * {@code append(char[], off, len)} runs. The extra cost is one copy of the key's characters.
 *
 * <p>It is a {@link Writer} so that {@code JsonParser.getText(Writer)} can stream a long string value
 * into it segment by segment, without first joining Jackson's buffers into one array or String.
 * Not thread-safe; owned by one extraction.
 */
final class Segment extends Writer {

    private char[] buf;
    private int len;
    private int[] bounds = new int[8];
    private int boundCount;

    Segment(int initialCapacity) {
        buf = new char[Math.max(16, initialCapacity)];
    }

    int length() {
        return len;
    }

    boolean isEmpty() {
        return len == 0;
    }

    void clear() {
        len = 0;
        boundCount = 0;
    }

    private void ensure(int extra) {
        int need = len + extra;
        if (need < 0) {
            throw new OutOfMemoryError("key segment too large");
        }
        if (need > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(need, buf.length + (buf.length >> 1)));
        }
    }

    Segment add(char c) {
        if (len == buf.length) {
            ensure(1);
        }
        buf[len++] = c;
        return this;
    }

    Segment add(String s) {
        int n = s.length();
        ensure(n);
        s.getChars(0, n, buf, len);
        len += n;
        return this;
    }

    Segment add(StringBuilder sb) {
        int n = sb.length();
        ensure(n);
        sb.getChars(0, n, buf, len);
        len += n;
        return this;
    }

    Segment add(char[] chars, int off, int n) {
        ensure(n);
        System.arraycopy(chars, off, buf, len, n);
        len += n;
        return this;
    }

    /** Appends another segment, boundaries included. */
    Segment add(Segment other) {
        int base = len;
        add(other.buf, 0, other.len);
        for (int i = 0; i < other.boundCount; i++) {
            markAt(base + other.bounds[i]);
        }
        return this;
    }

    /**
     * Marks a message boundary at the current length. A repeated mark at one offset counts once, and a
     * mark at offset 0 is dropped: a boundary needs text before it (and one right after the model marker
     * would shrink the key's anchor to the marker alone).
     */
    void boundary() {
        markAt(len);
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

    /** Where assembled key characters go: the key builder, or a String for tests. */
    interface Sink {
        void append(char[] chars, int off, int len);

        void boundary();

        static Sink of(PromptKey.Builder key) {
            return new Sink() {
                @Override
                public void append(char[] chars, int off, int len) {
                    key.append(chars, off, len);
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
        int from = 0;
        for (int i = 0; i < boundCount; i++) {
            int to = bounds[i];
            if (to > from) {
                key.append(buf, from, to - from);
            }
            key.boundary();
            from = to;
        }
        if (len > from) {
            key.append(buf, from, len - from);
        }
    }

    /** The characters as a String (small segments only: canonical JSON, attributes). */
    String text() {
        return new String(buf, 0, len);
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
        ensure(n);
        str.getChars(off, off + n, buf, len);
        len += n;
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
    }
}
