package dev.cart.proxy.core;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.Responses;
import java.io.IOException;
import java.util.Set;

/**
 * {@code proxy.remote_media_url_policy} for the requests the proxy passes through without routing by prompt
 * ({@code /invocations}, {@code /v1/responses}, {@code /v1/embeddings}, {@code /pooling}, SGLang's
 * {@code /generate}, and any other path). A replica may treat such a body as a prompt (vLLM hands an
 * {@code /invocations} body with {@code messages} to its chat handler; embeddings, pooling, score and rerank
 * accept chat messages with media parts; the Responses API has {@code input_image} and {@code input_file}),
 * so the policy must hold there too, whatever the path: the rule is about the body, not the endpoint.
 *
 * <p>How: any body that starts like JSON (after an optional BOM and white space, a brace or a bracket, or
 * a UTF-16/32 encoding, which Python's {@code json.loads} also accepts) is read with Jackson's streaming
 * parser, and every value under a media key, at any depth, is checked as the routed extraction checks its
 * media positions:
 *
 * <ul>
 *   <li>URL positions, {@code image_url}, {@code audio_url}, {@code video_url}, {@code file_url} (a string, an
 *       array of them, or an object's {@code url}) and the {@code url} of a {@code source} object (Anthropic):
 *       only inline data ({@code data:}) is allowed;
 *   <li>data positions, {@code image_data}, {@code audio_data}, {@code video_data} (SGLang), {@code file_data}:
 *       refused when the value has a URI scheme other than {@code data:} (base64 and paths pass).
 * </ul>
 *
 * A body that starts like JSON but cannot be read is refused with 400 (it cannot be checked, and a parser
 * on the replica that reads it differently would let a reference through); NaN and Infinity, which Python
 * reads, are accepted. A body that does not start like JSON (a multipart upload) is not a JSON prompt and
 * passes. The policy off (null), nothing is read. Stateless and thread-safe.
 */
public final class PassThroughMedia {

    private static final Set<String> URL_KEYS = Set.of("image_url", "audio_url", "video_url", "file_url");
    private static final Set<String> DATA_KEYS = Set.of("image_data", "audio_data", "video_data", "file_data");

    /** Nesting beyond this is refused as unreadable (Python's own recursion limit is about 1,000). */
    static final int MAX_DEPTH = 1000;

    private static final JsonFactory JSON = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(MAX_DEPTH)
                    .maxNumberLength(Integer.MAX_VALUE)
                    .maxStringLength(Integer.MAX_VALUE)
                    .maxNameLength(Integer.MAX_VALUE)
                    .maxDocumentLength(-1)
                    .build())
            .build();

    /** What a value's position is. */
    private enum Position {
        /** Not media. */
        NONE,
        /** A URL position: inline {@code data:} only. */
        URL,
        /** A data position: no URI scheme but {@code data:}. */
        DATA,
        /** An Anthropic {@code source} object: its {@code url} is a URL position. */
        SOURCE
    }

    /** A reference refused: the JSON path of the value. */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;
        final String path;

        Refused(String path) {
            super(null, null, false, false);
            this.path = path;
        }
    }

    private PassThroughMedia() {}

    /**
     * The answer refusing {@code body} under the policy {@code status} (null: off), or null when it may be
     * forwarded.
     */
    public static Answer check(byte[] body, Integer status) {
        return check(body, 0, body.length, status);
    }

    /** {@link #check(byte[], Integer)} of the body {@code array[offset, offset + length)}. */
    public static Answer check(byte[] array, int offset, int length, Integer status) {
        if (status == null || length == 0 || !looksLikeJson(array, offset, length)) {
            return null;
        }
        try (JsonParser p = JSON.createParser(array, offset, length)) {
            if (p.nextToken() == null) {
                return null;
            }
            value(p, Position.NONE, "");
            if (p.nextToken() != null) {
                return unreadable();
            }
            return null;
        } catch (Refused r) {
            String path = r.path.isEmpty() ? "body" : r.path;
            return Answer.error(
                    status,
                    Responses.typeFor(status),
                    "remote_media_rejected",
                    path,
                    path + " refers to remote media by URL, which this server does not allow;"
                            + " send the media inline (base64 or a data: URI) instead");
        } catch (IOException | RuntimeException e) {
            return unreadable();
        }
    }

    private static Answer unreadable() {
        return Answer.error(
                400,
                "invalid_json",
                "the request body starts like JSON but is not valid JSON, so it cannot be checked for remote"
                        + " media (proxy.remote_media_url_policy)");
    }

    /** True if a JSON parser (Python's included) would take {@code b} for a JSON document. */
    static boolean looksLikeJson(byte[] b) {
        return looksLikeJson(b, 0, b.length);
    }

    /** {@link #looksLikeJson(byte[])} of {@code b[offset, offset + length)}. */
    static boolean looksLikeJson(byte[] b, int offset, int length) {
        int o = offset;
        int n = offset + length;
        if (length >= 2 && (b[o] == 0 || b[o + 1] == 0 || (b[o] & 0xFF) == 0xFE || (b[o] & 0xFF) == 0xFF)) {
            return true; // UTF-16 or UTF-32, with or without a BOM
        }
        int i = o;
        if (length >= 3 && (b[o] & 0xFF) == 0xEF && (b[o + 1] & 0xFF) == 0xBB && (b[o + 2] & 0xFF) == 0xBF) {
            i = o + 3;
        }
        while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) {
            i++;
        }
        return i < n && (b[i] == '{' || b[i] == '[');
    }

    /** Checks the value at the parser's current token, at {@code pos}. */
    private static void value(JsonParser p, Position pos, String path) throws IOException, Refused {
        JsonToken t = p.currentToken();
        if (t == JsonToken.START_OBJECT) {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                value(p, member(pos, name), path.isEmpty() ? name : path + "." + name);
            }
        } else if (t == JsonToken.START_ARRAY) {
            int i = 0;
            while (p.nextToken() != JsonToken.END_ARRAY) {
                // elements of a media array are media; an array in a plain position holds plain values
                value(p, pos == Position.SOURCE ? Position.NONE : pos, path + "[" + i++ + "]");
            }
        } else if (t == JsonToken.VALUE_STRING && (pos == Position.URL || pos == Position.DATA)) {
            if (refused(p.getText(), pos)) {
                throw new Refused(path);
            }
        }
    }

    /** The position of member {@code name} of an object at {@code pos}. */
    private static Position member(Position pos, String name) {
        if (URL_KEYS.contains(name)) {
            return Position.URL;
        }
        if (DATA_KEYS.contains(name)) {
            return Position.DATA;
        }
        if (name.equals("url") && (pos == Position.URL || pos == Position.SOURCE)) {
            return Position.URL;
        }
        if (name.equals("source")) {
            return Position.SOURCE;
        }
        return Position.NONE;
    }

    /** True if {@code v} at {@code pos} is remote media (leading controls and spaces skipped, as Python does). */
    private static boolean refused(String v, Position pos) {
        int s = 0;
        while (s < v.length() && v.charAt(s) <= 0x20) {
            s++;
        }
        if (v.regionMatches(true, s, "data:", 0, 5)) {
            return false;
        }
        return pos == Position.URL || hasScheme(v, s);
    }

    /** RFC 3986: {@code ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"}, in the first 32 characters. */
    private static boolean hasScheme(String v, int s) {
        if (s >= v.length() || !isAlpha(v.charAt(s))) {
            return false;
        }
        int limit = Math.min(v.length(), s + 32);
        for (int i = s + 1; i < limit; i++) {
            char c = v.charAt(i);
            if (c == ':') {
                return true;
            }
            if (!isAlpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') {
                return false;
            }
        }
        return false;
    }

    private static boolean isAlpha(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z';
    }
}
