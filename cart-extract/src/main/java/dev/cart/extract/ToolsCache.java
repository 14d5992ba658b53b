package dev.cart.extract;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The key text of tool lists seen recently, by their exact bytes: an agent sends the same {@code tools}
 * array on every turn of a conversation, and its canonical JSON (tokenized by Jackson, members sorted,
 * strings re-escaped) cost as much as the rest of a 4 KB body. A list whose bytes equal a cached list's is
 * not parsed again: the parser is moved past it and the cached text is used.
 *
 * <p>Why it is exact: the key text of a tool list is a function of its bytes alone (given the list's
 * label and canonical-JSON options, which are part of the entry): the list is a top-level member, so it
 * is always parsed at the same depth, with the same limits, and no media reference or remote-media policy
 * applies inside it. An entry is stored only after its list was read without error; the body's UTF-8 is
 * still checked over the skipped bytes (they are not marked as checked).
 *
 * <p>How: a direct-mapped table of {@value #SLOTS} entries, indexed by a hash of the list's first
 * {@value #PROBE_BYTES} bytes (which lie inside the list: shorter lists are not cached), each holding a
 * copy of the list's bytes and its key text; a hit compares the whole list (a vectorized array
 * comparison). The key text is kept in the key's byte form, so a hit adds it to the key by reference (no
 * copy), and only lists of strict UTF-8 are kept, so a hit's bytes are marked as checked. Lists longer than {@value #MAX_BYTES} bytes are not cached, so the table holds at most a
 * few MiB. Thread-safe without locks: an entry is immutable (final
 * fields, so a reader that sees the reference sees its contents) and a slot is replaced whole; racing
 * writers lose an entry at worst.
 */
final class ToolsCache {

    static final int SLOTS = 32;
    static final int MAX_BYTES = 64 * 1024;
    /** The bytes the slot is chosen by; shorter lists (cheap to read anyway) are not cached. */
    static final int PROBE_BYTES = 128;

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /**
     * One list: its bytes from {@code [} to {@code ]} (strict UTF-8), the key text it writes in the key's byte
     * form (CESU-8, see {@link Cesu8}) and its length in units, and its line breaks as Jackson counts them (LF,
     * CR, CR LF), for the positions of later errors.
     */
    private static final class Entry {
        final String label;
        final Object options;
        final byte[] raw;
        final byte[] text;
        final int units;
        final int lines;
        /** Offset in {@link #raw} just after the last line break. */
        final int lastLineStart;

        Entry(String label, Object options, byte[] raw, byte[] text) {
            this.label = label;
            this.options = options;
            this.raw = raw;
            this.text = text;
            this.units = text.length - Cesu8.continuations(text, 0, text.length);
            int n = 0;
            int last = 0;
            for (int i = 0; i < raw.length; i++) {
                if (raw[i] == '\n' || raw[i] == '\r') {
                    if (raw[i] == '\r' && i + 1 < raw.length && raw[i + 1] == '\n') {
                        i++;
                    }
                    n++;
                    last = i + 1;
                }
            }
            this.lines = n;
            this.lastLineStart = last;
        }
    }

    private final Entry[] slots = new Entry[SLOTS];

    /**
     * The key text of the list whose {@code [} is {@code body[start]} in a body that ends at {@code body[end]}
     * (exclusive), or null when it is not cached.
     */
    @Nullable
    Hit find(byte[] body, int start, int end, String label, Object options) {
        if (end - start < PROBE_BYTES) {
            return null;
        }
        Entry e = slots[slot(body, start)];
        if (e == null || !e.label.equals(label) || e.options != options) {
            return null;
        }
        int n = e.raw.length;
        if (start + n > end || !Arrays.equals(body, start, start + n, e.raw, 0, n)) {
            return null;
        }
        return new Hit(n, e.text, e.units, e.lines, start + e.lastLineStart);
    }

    /**
     * What {@link #find} found: the list's length in the body (bytes that are strict UTF-8, as the entry's
     * are), its key text as CESU-8 holding {@code units} units (shared: never modified, so a segment may refer
     * to it), its line breaks and the offset in the body just after the last of them.
     */
    record Hit(int rawLength, byte[] text, int units, int lines, int lastLineStart) {}

    /**
     * Remembers the list {@code body[start, end)} and its key text {@code text[0, textLength)} (UTF-8 as
     * {@link Utf8Builder} writes it); a list whose bytes are not strict UTF-8 is not remembered (its body is
     * rejected anyway), so that the bytes of a hit need no check of their own.
     */
    void put(byte[] body, int start, int end, String label, Object options, byte[] text, int textLength) {
        if (end - start > MAX_BYTES || end - start < PROBE_BYTES || !Utf8.isValid(body, start, end)) {
            return;
        }
        slots[slot(body, start)] =
                new Entry(label, options, Arrays.copyOfRange(body, start, end), Cesu8.fromUtf8(text, 0, textLength));
    }

    /**
     * The slot of the list starting at {@code b[start]}: a hash of its first {@link #PROBE_BYTES} bytes in four
     * independent lanes (a word each in turn), so that the multiplies of one lane overlap those of the others,
     * mixed at the end.
     */
    private static int slot(byte[] b, int start) {
        long h1 = 0;
        long h2 = 0;
        long h3 = 0;
        long h4 = 0;
        for (int i = start, end = start + PROBE_BYTES; i < end; i += 32) {
            h1 = (h1 ^ (long) LONGS.get(b, i)) * 0x9E3779B97F4A7C15L;
            h2 = (h2 ^ (long) LONGS.get(b, i + 8)) * 0xC2B2AE3D27D4EB4FL;
            h3 = (h3 ^ (long) LONGS.get(b, i + 16)) * 0x165667B19E3779F9L;
            h4 = (h4 ^ (long) LONGS.get(b, i + 24)) * 0x85EBCA77C2B2AE63L;
        }
        long h = h1 ^ Long.rotateLeft(h2, 16) ^ Long.rotateLeft(h3, 32) ^ Long.rotateLeft(h4, 48);
        h ^= h >>> 29;
        h *= 0x9E3779B97F4A7C15L;
        h ^= h >>> 32;
        return (int) h & (SLOTS - 1);
    }
}
