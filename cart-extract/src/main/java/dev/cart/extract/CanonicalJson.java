package dev.cart.extract;

import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Canonical JSON of values that enter a key whole (tools, tool calls, tool inputs, parts and blocks of
 * unknown type): members sorted by name at every level, no whitespace, strings re-escaped minimally (only
 * {@code "}, {@code \} and control characters), numbers as written, so that member order and formatting
 * never change a key. Written from the parser's tokens in one pass, as UTF-8 into a {@link Utf8Builder}
 * (which a {@link Segment} takes in ASCII runs); a string that is plain ASCII in the body (no escape) is
 * its own canonical form and is copied from the body bytes without being decoded
 * ({@link JsonCursor#plainAscii}). An object whose members did not come sorted is reordered once it ends.
 * The member names and offsets of the objects being written (one pair of arrays per nesting depth) and the
 * buffers a reordering copies through are kept from one object to the next, so that an extraction with many
 * small objects (an agent's tool calls) makes them once. Not thread-safe: one per extraction.
 */
final class CanonicalJson {

    /** How an object is written. */
    enum Option {
        /** Strings longer than {@link #MAX_GENERIC_STRING_BYTES} become digests (here and below). */
        DIGEST_LONG,
        /** {@code cache_control} is left out (moving a cache breakpoint does not change the prompt). */
        DROP_CACHE_CONTROL,
        /** A {@code url} member is a media reference. */
        URL_IS_MEDIA,
        /** A {@code source} object is an Anthropic source (written as the key writes sources). */
        SOURCE_IS_MEDIA
    }

    /** The key text of the Anthropic source object that is the current token. */
    interface SourceReader {
        String read() throws IOException, ExtractionException;
    }

    /** In parts of unknown type, strings longer than this many UTF-8 bytes enter the key as a digest. */
    static final int MAX_GENERIC_STRING_BYTES = 1024;

    static final Set<Option> NONE = EnumSet.noneOf(Option.class);
    private static final Set<Option> DIGEST = EnumSet.of(Option.DIGEST_LONG);
    private static final Set<Option> URL_MEDIA = EnumSet.of(Option.URL_IS_MEDIA);
    private static final Set<Option> DIGEST_URL_MEDIA = EnumSet.of(Option.DIGEST_LONG, Option.URL_IS_MEDIA);

    private final JsonCursor in;
    private final MediaRefs media;
    private @Nullable SourceReader sources;

    /** Per nesting depth of the objects being written: their member names and where each member starts. */
    private String[][] namesAt = new String[0][];

    private int[][] startsAt = new int[0][];
    private int depth;
    /** What a reordering copies the members through, and the order it writes them in; made on first use. */
    private @Nullable Utf8Builder members;

    private int[] order = new int[0];

    CanonicalJson(JsonCursor in, MediaRefs media) {
        this.in = in;
        this.media = media;
    }

    /** Where {@link Option#SOURCE_IS_MEDIA} sends {@code source} objects. */
    void sources(SourceReader reader) {
        this.sources = reader;
    }

    /**
     * Canonical JSON of the rest of the current object (from its START_OBJECT or from any field on). Skips
     * the member {@code skip}. {@code mediaKey} names a member that is a media reference (a URL string or
     * an object whose {@code url} is one).
     */
    void fields(Utf8Builder sb, Set<Option> options, @Nullable String skip, @Nullable String mediaKey)
            throws IOException, ExtractionException {
        int d = depth++;
        try {
            object(sb, options, skip, mediaKey, d);
        } finally {
            depth = d;
        }
    }

    /** {@link #fields} of the object at nesting depth {@code d}, with that depth's arrays. */
    private void object(Utf8Builder sb, Set<Option> options, @Nullable String skip, @Nullable String mediaKey, int d)
            throws IOException, ExtractionException {
        if (d == namesAt.length) {
            namesAt = Arrays.copyOf(namesAt, d + 4);
            startsAt = Arrays.copyOf(startsAt, d + 4);
        }
        String[] names = namesAt[d];
        int[] starts = startsAt[d];
        if (names == null || starts == null) {
            names = new String[8];
            starts = new int[8];
            namesAt[d] = names;
            startsAt[d] = starts;
        }
        int open = sb.length();
        sb.ascii('{');
        int n = 0;
        boolean sorted = true;
        boolean digest = options.contains(Option.DIGEST_LONG);
        Set<Option> inner = digest ? DIGEST : NONE;
        boolean dropCacheControl = options.contains(Option.DROP_CACHE_CONTROL);
        boolean urlIsMedia = options.contains(Option.URL_IS_MEDIA);
        boolean sourceIsMedia = options.contains(Option.SOURCE_IS_MEDIA);
        while (in.next() == JsonToken.FIELD_NAME) {
            String name = in.name();
            JsonToken v = in.next();
            if (name.equals(skip) || dropCacheControl && name.equals("cache_control")) {
                in.skip();
                continue;
            }
            if (n == names.length) {
                names = Arrays.copyOf(names, n * 2);
                starts = Arrays.copyOf(starts, n * 2);
                namesAt[d] = names;
                startsAt[d] = starts;
            }
            if (n > 0) {
                sorted &= names[n - 1].compareTo(name) < 0;
                sb.ascii(',');
            }
            names[n] = name;
            starts[n] = sb.length();
            n++;
            sb.quoted(name).ascii(':');
            if (v == JsonToken.VALUE_STRING && (name.equals(mediaKey) || urlIsMedia && name.equals("url"))) {
                sb.quoted(media.ref(MediaRefs.Kind.URL));
            } else if (v == JsonToken.START_OBJECT && name.equals(mediaKey)) {
                fields(sb, digest ? DIGEST_URL_MEDIA : URL_MEDIA, null, null);
            } else if (v == JsonToken.START_OBJECT && sourceIsMedia && name.equals("source")) {
                SourceReader reader = sources;
                if (reader == null) {
                    throw new IllegalStateException("sources read as media with no source reader set");
                }
                sb.quoted(reader.read());
            } else {
                value(sb, inner);
            }
        }
        if (!sorted) {
            int end = sb.length();
            Utf8Builder copy = members;
            if (copy == null) {
                copy = new Utf8Builder(Math.max(64, end - open));
                members = copy;
            }
            copy.setLength(0);
            copy.raw(sb, open + 1, end);
            // insertion sort of member indices by name: objects are small, and names are distinct
            if (order.length < n) {
                order = new int[Math.max(8, n)];
            }
            int[] sortedAt = order;
            for (int i = 0; i < n; i++) {
                int k = i;
                while (k > 0 && names[sortedAt[k - 1]].compareTo(names[i]) > 0) {
                    sortedAt[k] = sortedAt[k - 1];
                    k--;
                }
                sortedAt[k] = i;
            }
            sb.setLength(open + 1);
            for (int k = 0; k < n; k++) {
                int i = sortedAt[k];
                int from = starts[i] - open - 1;
                int to = i + 1 < n ? starts[i + 1] - open - 2 : end - open - 1;
                if (k > 0) {
                    sb.ascii(',');
                }
                sb.raw(copy, from, to);
            }
        }
        sb.ascii('}');
    }

    /** Canonical JSON of the value that is the current token. */
    void value(Utf8Builder sb, Set<Option> options) throws IOException, ExtractionException {
        boolean digest = options.contains(Option.DIGEST_LONG);
        switch (in.token()) {
            case START_OBJECT -> fields(sb, digest ? DIGEST : NONE, null, null);
            case START_ARRAY -> {
                sb.ascii('[');
                boolean first = true;
                while (in.next() != JsonToken.END_ARRAY) {
                    if (!first) {
                        sb.ascii(',');
                    }
                    first = false;
                    value(sb, options);
                }
                sb.ascii(']');
            }
            case VALUE_STRING -> {
                if (!digest) {
                    if (!in.plainAscii(sb)) {
                        sb.quoted(in.string());
                    }
                } else if (in.rawRange()) {
                    if (in.rawEnd() - in.rawStart() > MAX_GENERIC_STRING_BYTES) {
                        sb.string(MediaDigest.of(in.body(), in.rawStart(), in.rawEnd()));
                    } else if (!in.plainAscii(sb)) {
                        sb.quoted(in.string());
                    }
                } else {
                    String s = in.string();
                    byte[] b = s.getBytes(StandardCharsets.UTF_8);
                    if (b.length > MAX_GENERIC_STRING_BYTES) {
                        sb.string(MediaDigest.of(b, 0, b.length));
                    } else {
                        sb.quoted(s);
                    }
                }
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> sb.string(in.string());
            case VALUE_TRUE -> sb.string("true");
            case VALUE_FALSE -> sb.string("false");
            case VALUE_NULL -> sb.string("null");
            default -> throw new IllegalStateException("unexpected token " + in.token());
        }
    }

    /** Canonical JSON of an optional value that must have the given start token (or be null). */
    @Nullable
    Utf8Builder optional(JsonToken v, JsonToken expected, String what) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return null;
        }
        if (v != expected) {
            throw Errors.invalidType(in.path(), what);
        }
        Utf8Builder sb = new Utf8Builder(64);
        value(sb, NONE);
        return sb;
    }
}
