package dev.cart.extract;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Media references in a request: how an image, audio, file or document string enters the key, and the
 * remote-media policy.
 *
 * <p>Inline media must not be decoded: a 5 MB base64 string is hashed straight from the body bytes. The
 * parser only marks where the string starts, {@link JsonCursor#rawRange()} finds its end, this class
 * digests the bytes ({@link MediaDigest}), and the parser then skips the string (validating UTF-8)
 * without building a String. Strings with escapes take a slower path that decodes them first; both hash
 * the same UTF-8 bytes, so both give the same digest. Not thread-safe: one per extraction.
 */
final class MediaRefs {

    /** What a media string holds, which decides how it enters the key. */
    enum Kind {
        /** A URL position: a data URI, or a reference the replica would fetch. */
        URL,
        /** Base64 data, always digested. */
        BASE64,
        /** A file's data: base64, a data URI, or a URL. */
        FILE_DATA
    }

    /** Media references (URLs) longer than this many UTF-8 bytes enter the key as a digest. */
    static final int MAX_REF_BYTES = 2048;
    /** Longest data-URI header ({@code image/png;base64}) looked for before the comma. */
    private static final int MAX_DATA_HEADER = 256;

    private final JsonCursor in;
    private final ExtractOptions opts;

    MediaRefs(JsonCursor in, ExtractOptions opts) {
        this.in = in;
        this.opts = opts;
    }

    /**
     * The key text for the media string that is the current token, without decoding it when it has no
     * escapes: {@code data:<header>,#<digest>} for a data URI; {@code #<digest>} for base64
     * ({@link Kind#BASE64}, and {@link Kind#FILE_DATA} without a scheme); otherwise the reference itself
     * (a digest beyond {@link #MAX_REF_BYTES}), which is remote media when it has a URI scheme.
     */
    String ref(Kind kind) throws IOException, ExtractionException {
        if (in.rawRange()) {
            if (in.rawEnd() - in.rawStart() > opts.maxStringLength()) {
                throw Errors.valueTooLong(in.path(), opts.maxStringLength());
            }
            return ref(in.body(), in.rawStart(), in.rawEnd(), kind);
        }
        byte[] b = in.string().getBytes(StandardCharsets.UTF_8);
        return ref(b, 0, b.length, kind);
    }

    private String ref(byte[] b, int s, int e, Kind kind) throws ExtractionException {
        if (kind == Kind.BASE64) {
            return MediaDigest.of(b, s, e);
        }
        // Python's URL parsing (and so vLLM's) strips leading C0 controls and spaces: so do we, before
        // deciding what the reference is.
        int t = s;
        while (t < e && (b[t] & 0xFF) <= 0x20) {
            t++;
        }
        if (startsWithIgnoreCase(b, t, e, "data:")) {
            int from = t + 5;
            int limit = Math.min(e, from + MAX_DATA_HEADER);
            for (int i = from; i < limit; i++) {
                if (b[i] == ',') {
                    return "data:" + new String(b, from, i - from, StandardCharsets.UTF_8) + ","
                            + MediaDigest.of(b, i + 1, e);
                }
            }
            return "data:," + MediaDigest.of(b, from, e);
        }
        boolean scheme = hasScheme(b, t, e);
        if (!scheme && kind == Kind.FILE_DATA) {
            return MediaDigest.of(b, s, e);
        }
        // With the policy set, a URL position may hold only inline data: anything else (any scheme, a
        // bare path, a string the replica might resolve some other way) is refused.
        Integer rejectWith = opts.remoteMediaUrlPolicy();
        if (rejectWith != null && (scheme || kind == Kind.URL)) {
            String path = in.path();
            throw new ExtractionException(
                    rejectWith,
                    "remote_media_rejected",
                    path,
                    path + " refers to remote media by URL, which this server does not allow;"
                            + " send the media inline (base64 or a data: URI) instead");
        }
        if (e - s > MAX_REF_BYTES) {
            return MediaDigest.of(b, s, e);
        }
        return new String(b, s, e - s, StandardCharsets.UTF_8);
    }

    private static boolean startsWithIgnoreCase(byte[] b, int s, int e, String prefix) {
        int n = prefix.length();
        if (e - s < n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            int c = b[s + i];
            if (c >= 'A' && c <= 'Z') {
                c += 'a' - 'A';
            }
            if (c != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** RFC 3986: {@code ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"}, looked for in the first 32 bytes. */
    static boolean hasScheme(byte[] b, int s, int e) {
        if (s >= e || !isAlpha(b[s])) {
            return false;
        }
        int limit = Math.min(e, s + 32);
        for (int i = s + 1; i < limit; i++) {
            byte c = b[i];
            if (c == ':') {
                return true;
            }
            if (!isAlpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') {
                return false;
            }
        }
        return false;
    }

    private static boolean isAlpha(byte c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z';
    }
}
