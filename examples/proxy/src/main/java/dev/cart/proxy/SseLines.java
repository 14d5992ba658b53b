package dev.cart.proxy;

import java.util.Arrays;

/**
 * Server-sent-events framing for {@link ResponseObserver}: cuts the bytes of a {@code text/event-stream}
 * into lines as they arrive in chunks of any size, and hands the payload of each complete {@code data:}
 * line that holds a JSON object ({@code data: {...}}) to a consumer. Other lines ({@code event:},
 * comments, {@code data: [DONE]}) are dropped. A line longer than {@link #MAX_LINE_BYTES} is skipped, not
 * buffered, and reported once per line ({@link Consumer#lineSkipped()}).
 *
 * <p>Not thread-safe: one instance per response, used by the thread relaying it.
 */
final class SseLines {

    /** Longest line parsed; longer lines are skipped. */
    static final int MAX_LINE_BYTES = 1024 * 1024;

    /** Receives the JSON payloads of {@code data:} lines, in order. */
    interface Consumer {
        /** {@code b[off, off + len)} is one JSON payload; the array is reused after the call. */
        void data(byte[] b, int off, int len);

        /** A line was longer than {@link #MAX_LINE_BYTES} and skipped (an event may have been lost). */
        void lineSkipped();
    }

    private final Consumer consumer;
    private byte[] line = new byte[256];
    private int lineLength;
    private boolean skippingLine;

    SseLines(Consumer consumer) {
        this.consumer = consumer;
    }

    /** Bytes of the stream, in order, cut anywhere. */
    void accept(byte[] b, int off, int len) {
        int end = off + len;
        int start = off;
        for (int i = off; i < end; i++) {
            if (b[i] == '\n') {
                append(b, start, i - start);
                if (!skippingLine) {
                    line(line, lineLength);
                }
                lineLength = 0;
                skippingLine = false;
                start = i + 1;
            }
        }
        append(b, start, end - start);
    }

    /** The stream ended: a last line without its newline is still a line. */
    void finish() {
        if (lineLength > 0 && !skippingLine) {
            line(line, lineLength);
        }
        lineLength = 0;
    }

    private void append(byte[] b, int off, int len) {
        if (skippingLine || len == 0) {
            return;
        }
        if ((long) lineLength + len > MAX_LINE_BYTES) {
            skippingLine = true;
            lineLength = 0;
            consumer.lineSkipped();
            return;
        }
        if (lineLength + len > line.length) {
            line = Arrays.copyOf(line, Math.min(MAX_LINE_BYTES, Math.max(lineLength + len, line.length * 2)));
        }
        System.arraycopy(b, off, line, lineLength, len);
        lineLength += len;
    }

    /** One complete line (without its newline). Only {@code data:} lines carry JSON. */
    private void line(byte[] b, int len) {
        if (len > 0 && b[len - 1] == '\r') {
            len--;
        }
        if (len >= 5 && b[0] == 'd' && b[1] == 'a' && b[2] == 't' && b[3] == 'a' && b[4] == ':') {
            int start = 5;
            if (start < len && b[start] == ' ') {
                start++;
            }
            if (start < len && b[start] == '{') {
                consumer.data(b, start, len - start);
            }
        }
        if (line.length > 64 * 1024) {
            line = new byte[256]; // do not keep a large buffer for the rest of a long stream
        }
    }
}
