package dev.cart.bench;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A minimal HTTP/1.1 client connection for the load generator: blocking socket, keep-alive, one request at
 * a time, the whole answer read and discarded (length-delimited, chunked, or up to the close). Cheap on
 * purpose, so the generator spends little of the machine's CPU. Not thread-safe: one per worker thread.
 */
@SuppressWarnings("AssignmentExpression") // the read-a-line-until-empty loop idiom
final class HttpConn implements Closeable {

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final byte[] buf = new byte[64 * 1024];
    private int pos;
    private int lim;
    private boolean open = true;
    /** {@link System#nanoTime()} when the first bytes of the last answer arrived. */
    long firstByte;

    HttpConn(InetSocketAddress address) throws IOException {
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.connect(address, 5_000);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    boolean isOpen() {
        return open;
    }

    void send(byte[] request) throws IOException {
        firstByte = 0;
        out.write(request);
        out.flush();
    }

    /** Sends {@code request} and reads the whole answer; returns its status. */
    int exchange(byte[] request) throws IOException {
        send(request);
        Head h = head();
        if (h.chunked) {
            while (true) {
                int size = chunkSize();
                if (size == 0) {
                    while (!readLine().isEmpty()) {
                        // trailers
                    }
                    break;
                }
                skip(size);
                readLine();
            }
        } else if (h.length >= 0) {
            skip(h.length);
        } else {
            while (fill()) {
                pos = lim;
            }
            open = false;
        }
        if (h.close) {
            close();
        }
        return h.status;
    }

    /** Sends {@code request} and reads the head and the first chunk of a streamed answer; returns the status. */
    int startStream(byte[] request) throws IOException {
        send(request);
        Head h = head();
        if (h.status == 200 && h.chunked) {
            int size = chunkSize();
            skip(size);
            readLine();
        }
        return h.status;
    }

    private record Head(int status, boolean chunked, long length, boolean close) {}

    private Head head() throws IOException {
        String status = readLine();
        int sp = status.indexOf(' ');
        int code = Integer.parseInt(status.substring(sp + 1, sp + 4));
        boolean chunked = false;
        boolean close = false;
        long length = -1;
        for (String line; !(line = readLine()).isEmpty(); ) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = line.substring(0, colon).trim();
            String value = line.substring(colon + 1).trim();
            if (name.equalsIgnoreCase("content-length")) {
                length = Long.parseLong(value);
            } else if (name.equalsIgnoreCase("transfer-encoding")) {
                chunked = value.toLowerCase(java.util.Locale.ROOT).contains("chunked");
            } else if (name.equalsIgnoreCase("connection")) {
                close = value.equalsIgnoreCase("close");
            }
        }
        if (code == 204 || code == 304 || code < 200) {
            length = 0;
        }
        return new Head(code, chunked, chunked ? -1 : length, close);
    }

    private int chunkSize() throws IOException {
        String line = readLine();
        int semi = line.indexOf(';');
        return Integer.parseInt((semi < 0 ? line : line.substring(0, semi)).trim(), 16);
    }

    private boolean fill() throws IOException {
        if (pos == lim) {
            pos = 0;
            lim = 0;
        } else if (lim == buf.length) {
            System.arraycopy(buf, pos, buf, 0, lim - pos);
            lim -= pos;
            pos = 0;
        }
        int n = in.read(buf, lim, buf.length - lim);
        if (n < 0) {
            return false;
        }
        if (firstByte == 0) {
            firstByte = System.nanoTime();
        }
        lim += n;
        return true;
    }

    private String readLine() throws IOException {
        while (true) {
            for (int i = pos; i < lim; i++) {
                if (buf[i] == '\n') {
                    int end = i > pos && buf[i - 1] == '\r' ? i - 1 : i;
                    String s = new String(buf, pos, end - pos, StandardCharsets.ISO_8859_1);
                    pos = i + 1;
                    return s;
                }
            }
            if (lim - pos == buf.length) {
                throw new IOException("line too long");
            }
            if (!fill()) {
                throw new EOFException("connection closed by the server");
            }
        }
    }

    private void skip(long n) throws IOException {
        while (n > 0) {
            if (pos == lim && !fill()) {
                throw new EOFException("connection closed mid-body");
            }
            int k = (int) Math.min(n, lim - pos);
            pos += k;
            n -= k;
        }
    }

    @Override
    public void close() {
        open = false;
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing
        }
    }
}
