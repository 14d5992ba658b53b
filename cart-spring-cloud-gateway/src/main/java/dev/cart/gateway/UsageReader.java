package dev.cart.gateway;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Locale;

/**
 * Reads the prompt-cache usage a replica reports from the bytes of its answer while they pass to the client,
 * for {@code Lease.succeeded(ServedUsage)}. It only reads: the bytes it is given have been, or are about to be,
 * written unchanged.
 *
 * <p>How, by response kind: a {@code text/event-stream} is cut into lines and each {@code data:} line that
 * mentions {@code "usage"} is parsed once with Jackson's streaming parser (the usage chunk at the end of an
 * OpenAI stream, Anthropic's {@code message_start}/{@code message_delta}); a line longer than
 * {@link #MAX_LINE_BYTES} is skipped, not buffered. A JSON answer is copied up to {@link #MAX_JSON_BYTES} and
 * parsed once at its end; a larger one is given up on. Other content types and compressed bodies are not read
 * ({@link #create} returns null).
 *
 * <p>What is read: OpenAI-style prompt = {@code usage.prompt_tokens}, cached =
 * {@code usage.prompt_tokens_details.cached_tokens}; Anthropic ({@code /v1/messages}) counts only uncached input
 * in {@code input_tokens}, so prompt = {@code input_tokens + cache_read_input_tokens +
 * cache_creation_input_tokens} and cached = {@code cache_read_input_tokens}. A figure not reported stays
 * {@link ServedUsage#UNKNOWN}. (The standalone proxy reads the same fields, and the answer's text besides, in
 * its own observer.)
 *
 * <p>Not thread-safe: one instance per response, fed in order by the one subscriber writing it.
 */
final class UsageReader {

    static final int MAX_LINE_BYTES = 1024 * 1024;
    static final int MAX_JSON_BYTES = 1024 * 1024;

    private static final JsonFactory JSON = JsonFactory.builder().build();
    private static final byte[] USAGE = "\"usage\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private final boolean anthropic;
    private final boolean sse;
    private byte[] buf = new byte[512];
    private int len;
    private boolean skipping;

    private long promptTokens = ServedUsage.UNKNOWN;
    private long cachedTokens = ServedUsage.UNKNOWN;
    private long inputTokens = ServedUsage.UNKNOWN;
    private long cacheReadTokens = ServedUsage.UNKNOWN;
    private long cacheCreationTokens = ServedUsage.UNKNOWN;

    private UsageReader(Endpoint endpoint, boolean sse) {
        this.anthropic = endpoint == Endpoint.MESSAGES;
        this.sse = sse;
    }

    /** A reader for an answer to {@code endpoint}, or null when the answer cannot be read. */
    static UsageReader create(Endpoint endpoint, String contentType, String contentEncoding) {
        if (endpoint == null) {
            return null;
        }
        if (contentEncoding != null
                && !contentEncoding.isBlank()
                && !contentEncoding.trim().equalsIgnoreCase("identity")) {
            return null;
        }
        String ct = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
        if (ct.startsWith("text/event-stream")) {
            return new UsageReader(endpoint, true);
        }
        if (ct.startsWith("application/json") || ct.isEmpty()) {
            return new UsageReader(endpoint, false);
        }
        return null;
    }

    /** The next bytes of the answer (read from the buffer's position to its limit; the buffer is not moved). */
    void accept(ByteBuffer b) {
        if (!b.hasArray()) {
            byte[] copy = new byte[b.remaining()];
            b.duplicate().get(copy);
            accept(copy, 0, copy.length);
        } else {
            accept(b.array(), b.arrayOffset() + b.position(), b.remaining());
        }
    }

    void accept(byte[] b, int off, int n) {
        if (!sse) {
            if (skipping) {
                return;
            }
            if ((long) len + n > MAX_JSON_BYTES) {
                skipping = true;
                buf = null;
                return;
            }
            append(b, off, n);
            return;
        }
        int start = off;
        int end = off + n;
        for (int i = off; i < end; i++) {
            if (b[i] == '\n') {
                appendLine(b, start, i - start);
                if (!skipping) {
                    line();
                }
                len = 0;
                skipping = false;
                start = i + 1;
            }
        }
        appendLine(b, start, end - start);
    }

    /** The answer ended normally: parses what is pending; returns what the replica reported. */
    ServedUsage finish() {
        if (sse) {
            if (len > 0 && !skipping) {
                line();
            }
        } else if (!skipping && buf != null) {
            parse(buf, 0, len);
        }
        len = 0;
        buf = null;
        if (!anthropic) {
            return new ServedUsage(promptTokens, cachedTokens);
        }
        if (inputTokens < 0) {
            return new ServedUsage(ServedUsage.UNKNOWN, cacheReadTokens);
        }
        return new ServedUsage(
                inputTokens + Math.max(0, cacheReadTokens) + Math.max(0, cacheCreationTokens), cacheReadTokens);
    }

    private void appendLine(byte[] b, int off, int n) {
        if (skipping || n == 0) {
            return;
        }
        if ((long) len + n > MAX_LINE_BYTES) {
            skipping = true;
            len = 0;
            return;
        }
        append(b, off, n);
    }

    private void append(byte[] b, int off, int n) {
        if (len + n > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(len + n, buf.length * 2));
        }
        System.arraycopy(b, off, buf, len, n);
        len += n;
    }

    /** One complete SSE line in {@code buf[0, len)}: a {@code data:} line that mentions usage is parsed. */
    private void line() {
        int n = len;
        if (n > 0 && buf[n - 1] == '\r') {
            n--;
        }
        if (n < 6 || buf[0] != 'd' || buf[1] != 'a' || buf[2] != 't' || buf[3] != 'a' || buf[4] != ':') {
            return;
        }
        int start = buf[5] == ' ' ? 6 : 5;
        if (start < n && buf[start] == '{' && contains(buf, start, n, USAGE)) {
            parse(buf, start, n - start);
        }
        if (buf.length > 64 * 1024) {
            buf = new byte[512]; // do not keep a large buffer for the rest of a long stream
        }
    }

    private static boolean contains(byte[] b, int from, int to, byte[] needle) {
        outer:
        for (int i = from; i <= to - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (b[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /** Parses one JSON object: {@code usage} at its top level, or inside {@code message} (message_start). */
    private void parse(byte[] b, int off, int n) {
        try (JsonParser p = JSON.createParser(b, off, n)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                if ("usage".equals(name) && t == JsonToken.START_OBJECT) {
                    usage(p);
                } else if ("message".equals(name) && t == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String inner = p.currentName();
                        JsonToken v = p.nextToken();
                        if ("usage".equals(inner) && v == JsonToken.START_OBJECT) {
                            usage(p);
                        } else {
                            p.skipChildren();
                        }
                    }
                } else {
                    p.skipChildren();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not JSON this reader understands: the client got it unchanged; nothing to learn from it
        }
    }

    private void usage(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            if ("prompt_tokens_details".equals(name) && t == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String n = p.currentName();
                    if (p.nextToken() == JsonToken.VALUE_NUMBER_INT && "cached_tokens".equals(n)) {
                        cachedTokens = p.getLongValue();
                    } else {
                        p.skipChildren();
                    }
                }
            } else if (t == JsonToken.VALUE_NUMBER_INT) {
                switch (name) {
                    case "prompt_tokens" -> promptTokens = p.getLongValue();
                    case "input_tokens" -> inputTokens = p.getLongValue();
                    case "cache_read_input_tokens" -> cacheReadTokens = p.getLongValue();
                    case "cache_creation_input_tokens" -> cacheCreationTokens = p.getLongValue();
                    default -> {
                        // output and total tokens: not about the prompt cache
                    }
                }
            } else {
                p.skipChildren();
            }
        }
    }
}
