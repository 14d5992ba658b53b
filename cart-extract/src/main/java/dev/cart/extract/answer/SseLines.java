package dev.cart.extract.answer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
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

    /**
     * Bytes of the stream, in order, cut anywhere. A line that lies whole in {@code b} (the usual case: a replica
     * writes an event as one chunk) is handed over from {@code b} itself; only a line cut across calls is copied.
     */
    void accept(byte[] b, int off, int len) {
        int end = off + len;
        int start = off;
        while (start < end) {
            int nl = newline(b, start, end);
            if (nl < 0) {
                append(b, start, end - start);
                return;
            }
            if (lineLength == 0 && !skippingLine) {
                if (nl - start > MAX_LINE_BYTES) {
                    consumer.lineSkipped();
                } else {
                    line(b, start, nl - start);
                }
            } else {
                append(b, start, nl - start);
                if (!skippingLine) {
                    line(line, 0, lineLength);
                }
            }
            lineLength = 0;
            skippingLine = false;
            start = nl + 1;
        }
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;

    /** The index of the first {@code '\n'} in {@code b[from, to)}, or -1. */
    static int newline(byte[] b, int from, int to) {
        return indexOf(b, from, to, (byte) '\n');
    }

    /**
     * The index of the first {@code x} in {@code b[from, to)}, or -1: eight bytes at a time (a byte equal to
     * {@code x} is a zero byte of {@code word ^ (ONES * x)}, found with the usual carry trick), then the rest one
     * by one.
     */
    static int indexOf(byte[] b, int from, int to, byte x) {
        long pattern = ONES * (x & 0xff);
        int i = from;
        for (; i + Long.BYTES <= to; i += Long.BYTES) {
            long w = (long) LONGS.get(b, i) ^ pattern;
            long found = (w - ONES) & ~w & HIGHS;
            if (found != 0) {
                return i + (Long.numberOfTrailingZeros(found) >>> 3);
            }
        }
        for (; i < to; i++) {
            if (b[i] == x) {
                return i;
            }
        }
        return -1;
    }

    /** The stream ended: a last line without its newline is still a line. */
    void finish() {
        if (lineLength > 0 && !skippingLine) {
            line(line, 0, lineLength);
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

    /** One complete line, {@code b[off, off + len)} without its newline. Only {@code data:} lines carry JSON. */
    private void line(byte[] b, int off, int len) {
        if (len > 0 && b[off + len - 1] == '\r') {
            len--;
        }
        if (len >= 5
                && b[off] == 'd'
                && b[off + 1] == 'a'
                && b[off + 2] == 't'
                && b[off + 3] == 'a'
                && b[off + 4] == ':') {
            int start = 5;
            if (start < len && b[off + start] == ' ') {
                start++;
            }
            if (start < len && b[off + start] == '{') {
                consumer.data(b, off + start, len - start);
            }
        }
        if (line.length > 64 * 1024) {
            line = new byte[256]; // do not keep a large buffer for the rest of a long stream
        }
    }
}
