package dev.cart.gateway;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Locale;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.NettyDataBuffer;

/**
 * Reads the prompt-cache usage a replica reports from the bytes of its answer while they pass to the client,
 * for {@code Lease.succeeded(ServedUsage)}. It only reads: the bytes it is given have been, or are about to be,
 * written unchanged.
 *
 * <p>How: usage sits at the ends of an answer, so only the ends are kept and only when the answer is over is
 * anything parsed. While the body passes, each buffer costs one or two bulk copies and no allocation: its first
 * {@link #HEAD_BYTES} bytes go to a head array, and the last {@link #TAIL_BYTES} to a ring. At the end, a JSON
 * answer's last {@code "usage"} key (outside a string: not escaped) is found in what was kept (the whole answer
 * when it fits, its tail otherwise) and only the object after it is parsed with Jackson's streaming parser; in a
 * {@code text/event-stream}, each complete {@code data:} line of the head and of the tail that mentions
 * {@code "usage"} is parsed, in order (the usage chunk at the end of an OpenAI stream; Anthropic's
 * {@code message_start} at its head, {@code message_delta} at its tail); a later report of a figure replaces an
 * earlier one. Other content types and compressed bodies are not read ({@link #create} returns null).
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

    /** Bytes kept from the start of an answer. */
    static final int HEAD_BYTES = 2048;
    /** Bytes kept from the end of an answer. */
    static final int TAIL_BYTES = 4096;

    private static final JsonFactory JSON = JsonFactory.builder().build();
    private static final byte[] USAGE = "\"usage\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private final boolean anthropic;
    private final boolean sse;
    private final byte[] head = new byte[HEAD_BYTES];
    private byte[] tail; // a ring, allocated when the answer outgrows the head
    private long total; // bytes seen

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

    /** The next bytes of the answer: the buffer's readable bytes (the buffer is not moved). */
    void accept(DataBuffer buffer) {
        if (buffer instanceof NettyDataBuffer n) {
            ByteBuf b = n.getNativeBuffer();
            keep(b, b.readerIndex(), b.readableBytes());
        } else {
            try (DataBuffer.ByteBufferIterator it = buffer.readableByteBuffers()) {
                while (it.hasNext()) {
                    accept(it.next());
                }
            }
        }
    }

    /** The next bytes of the answer: from the buffer's position to its limit (the buffer is not moved). */
    void accept(ByteBuffer b) {
        keep(b, b.position(), b.remaining());
    }

    /** Keeps what falls in the head or the tail of {@code n} bytes of {@code src} from {@code from}. */
    private void keep(Object src, int from, int n) {
        int end = from + n;
        if (total < HEAD_BYTES) {
            int h = (int) Math.min(n, HEAD_BYTES - total);
            copy(src, from, head, (int) total, h);
            total += h;
            from += h;
        }
        int rest = end - from;
        if (rest == 0) {
            return;
        }
        if (tail == null) {
            tail = new byte[TAIL_BYTES];
        }
        if (rest > TAIL_BYTES) { // only the last TAIL_BYTES matter
            total += rest - TAIL_BYTES;
            from = end - TAIL_BYTES;
            rest = TAIL_BYTES;
        }
        int at = (int) ((total - HEAD_BYTES) % TAIL_BYTES);
        int first = Math.min(rest, TAIL_BYTES - at);
        copy(src, from, tail, at, first);
        if (rest > first) {
            copy(src, from + first, tail, 0, rest - first);
        }
        total += rest;
    }

    private static void copy(Object src, int from, byte[] dst, int at, int n) {
        if (src instanceof ByteBuf b) {
            b.getBytes(from, dst, at, n);
        } else {
            ((ByteBuffer) src).get(from, dst, at, n);
        }
    }

    /** The answer ended normally: parses what was kept; returns what the replica reported. */
    ServedUsage finish() {
        int headLen = (int) Math.min(total, HEAD_BYTES);
        long tailBytes = total - headLen;
        int tailLen = (int) Math.min(tailBytes, TAIL_BYTES);
        boolean gap = tailBytes > TAIL_BYTES; // bytes between the head and the tail were not kept
        byte[] kept = head; // the head, then the tail in order from headLen
        if (tailLen > 0) {
            kept = Arrays.copyOf(head, headLen + tailLen);
            if (tailBytes < TAIL_BYTES) {
                System.arraycopy(tail, 0, kept, headLen, tailLen);
            } else {
                int at = (int) ((total - HEAD_BYTES) % TAIL_BYTES); // the full ring's oldest byte
                System.arraycopy(tail, at, kept, headLen, TAIL_BYTES - at);
                System.arraycopy(tail, 0, kept, headLen + TAIL_BYTES - at, at);
            }
        }
        int keptLen = headLen + tailLen;
        if (sse) {
            if (gap) {
                lines(kept, 0, lastNewline(kept, 0, headLen) + 1); // the head's complete lines
                // the tail's first line may have started before it: skipped
                int cut = indexOf(kept, (byte) '\n', headLen, keptLen);
                if (cut >= 0) {
                    lines(kept, cut + 1, keptLen);
                }
            } else {
                lines(kept, 0, keptLen);
            }
        } else {
            jsonUsage(kept, gap ? headLen : 0, keptLen);
        }
        tail = null;
        if (!anthropic) {
            return new ServedUsage(promptTokens, cachedTokens);
        }
        if (inputTokens < 0) {
            return new ServedUsage(ServedUsage.UNKNOWN, cacheReadTokens);
        }
        return new ServedUsage(
                inputTokens + Math.max(0, cacheReadTokens) + Math.max(0, cacheCreationTokens), cacheReadTokens);
    }

    /** The lines of {@code b[from, to)}, the last one ended by the end of the body: each data line is looked at. */
    private void lines(byte[] b, int from, int to) {
        int start = from;
        for (int i = from; i < to; i++) {
            if (b[i] == '\n') {
                line(b, start, i);
                start = i + 1;
            }
        }
        if (start < to) {
            line(b, start, to);
        }
    }

    /** One SSE line {@code b[from, to)}: a {@code data:} line holding a JSON object that mentions usage is parsed. */
    private void line(byte[] b, int from, int to) {
        if (to > from && b[to - 1] == '\r') {
            to--;
        }
        if (to - from < 6
                || b[from] != 'd'
                || b[from + 1] != 'a'
                || b[from + 2] != 't'
                || b[from + 3] != 'a'
                || b[from + 4] != ':') {
            return;
        }
        int start = b[from + 5] == ' ' ? from + 6 : from + 5;
        if (start < to && b[start] == '{' && lastUsage(b, start, to) >= 0) {
            parse(b, start, to - start);
        }
    }

    /** A JSON answer: the object after its last {@code "usage":} key in {@code b[from, to)}. */
    private void jsonUsage(byte[] b, int from, int to) {
        int key = lastUsage(b, from, to);
        if (key < 0) {
            return;
        }
        int i = skipSpace(b, key + USAGE.length, to);
        if (i >= to || b[i] != ':') {
            return;
        }
        i = skipSpace(b, i + 1, to);
        if (i >= to || b[i] != '{') {
            return;
        }
        try (JsonParser p = JSON.createParser(b, i, to - i)) {
            if (p.nextToken() == JsonToken.START_OBJECT) {
                usage(p);
            }
        } catch (IOException | RuntimeException e) {
            // not JSON this reader understands: the client got it unchanged; nothing to learn from it
        }
    }

    /** Where the last {@code "usage"} not inside a string (not preceded by a backslash) starts, or -1. */
    private static int lastUsage(byte[] b, int from, int to) {
        outer:
        for (int i = to - USAGE.length; i >= from; i--) {
            for (int j = 0; j < USAGE.length; j++) {
                if (b[i + j] != USAGE[j]) {
                    continue outer;
                }
            }
            if (i > from && b[i - 1] == '\\') {
                continue;
            }
            return i;
        }
        return -1;
    }

    private static int skipSpace(byte[] b, int i, int to) {
        while (i < to && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
            i++;
        }
        return i;
    }

    private static int lastNewline(byte[] b, int from, int to) {
        for (int i = to - 1; i >= from; i--) {
            if (b[i] == '\n') {
                return i;
            }
        }
        return from - 1;
    }

    private static int indexOf(byte[] b, byte x, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] == x) {
                return i;
            }
        }
        return -1;
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
