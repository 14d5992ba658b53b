package dev.cart.extract;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The model markers made recently, by model, {@code cache_salt} and {@code lora_path}: every request names
 * its model, a deployment serves a handful, and making a marker (joining the parts, their UTF-8, the
 * digest, the hex digits) cost as much as a tenth of routing a 4 KB body. A marker is a function of those
 * three strings alone ({@link Extraction#modelMarker(String, String, String)}), so a cached one is exact.
 *
 * <p>How: a direct-mapped table of {@value #SLOTS} entries indexed by the parts' hash codes; an entry is
 * used only when all three parts are equal to the request's. The marker is kept as the bytes the key
 * builder takes (it is ASCII: {@code NUL}, {@code model:} or {@code model;}, 16 hex digits, {@code NUL}).
 * Thread-safe without locks: an entry is immutable (final fields, so a reader that sees the reference sees
 * its contents) and a slot is replaced whole; racing writers lose an entry at worst. The same holds for the
 * last model name read ({@link #name}), kept so that a request naming the same model as the one before gets
 * the same String without Jackson decoding one.
 */
final class ModelMarkers {

    static final int SLOTS = 16;

    private static final class Entry {
        final @Nullable String model;
        final @Nullable String cacheSalt;
        final @Nullable String loraPath;
        final byte[] marker;

        Entry(@Nullable String model, @Nullable String cacheSalt, @Nullable String loraPath, byte[] marker) {
            this.model = model;
            this.cacheSalt = cacheSalt;
            this.loraPath = loraPath;
            this.marker = marker;
        }
    }

    private final Entry[] slots = new Entry[SLOTS];

    /** The last model name read from its bytes: its ASCII bytes and the String (both never modified). */
    private static final class Name {
        final byte[] ascii;
        final String name;

        Name(byte[] ascii, String name) {
            this.ascii = ascii;
            this.name = name;
        }
    }

    private @Nullable Name lastName;

    /**
     * The model name whose ASCII bytes are {@code b[from, to)}, as the last such name read (the same String,
     * whose hash code is then known, so its marker is found by identity), or null when it is another.
     */
    @Nullable
    String name(byte[] b, int from, int to) {
        Name n = lastName;
        return n != null && Arrays.equals(n.ascii, 0, n.ascii.length, b, from, to) ? n.name : null;
    }

    /** Remembers {@code name}, read from the ASCII bytes {@code b[from, to)}, for {@link #name}. */
    void rememberName(String name, byte[] b, int from, int to) {
        lastName = new Name(Arrays.copyOfRange(b, from, to), name);
    }

    /**
     * The marker of these parts as ASCII bytes, the same as {@link Extraction#modelMarker(String, String,
     * String)}'s characters. The array is shared: callers must not modify it.
     */
    byte[] marker(@Nullable String model, @Nullable String cacheSalt, @Nullable String loraPath) {
        int slot = (Objects.hashCode(model) * 31 + Objects.hashCode(cacheSalt)) * 31 + Objects.hashCode(loraPath);
        slot = (slot ^ (slot >>> 16)) & (SLOTS - 1);
        Entry e = slots[slot];
        if (e != null
                && Objects.equals(e.model, model)
                && Objects.equals(e.cacheSalt, cacheSalt)
                && Objects.equals(e.loraPath, loraPath)) {
            return e.marker;
        }
        byte[] m = Extraction.modelMarker(model, cacheSalt, loraPath).getBytes(StandardCharsets.US_ASCII);
        slots[slot] = new Entry(model, cacheSalt, loraPath, m);
        return m;
    }
}
