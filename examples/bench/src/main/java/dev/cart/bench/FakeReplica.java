package dev.cart.bench;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * A fast fake OpenAI-compatible replica: one thread ({@value #THREAD}), non-blocking sockets, canned answers, no work per
 * request beyond reading it. It listens on several loopback ports (one "replica" each) so that a proxy can
 * be given a pool; all ports are served by the same thread.
 *
 * <p>What it answers, chosen by the request header {@code x-bench-response} (forwarded untouched by the
 * CART proxy and by nginx):
 * <ul>
 *   <li>{@code json} (or no header) on a POST: a chat completion of about 600 bytes with its length;</li>
 *   <li>{@code sse}: the same answer as a chunked {@code text/event-stream} of 34 events (32 content
 *       deltas, a usage event, {@code [DONE]}), all written at once: a replica that generates instantly;</li>
 *   <li>{@code hold}: the head and the first event of a stream, then nothing: an idle stream that stays open
 *       until the client (or the proxy) closes the connection;</li>
 *   <li>{@code GET /health}, {@code GET /v1/models}: small JSON answers.</li>
 * </ul>
 * The usage it reports has no {@code prompt_tokens_details}, so a proxy reading it has no cached-token
 * count to compare with its prediction (no feedback writes into the tree).
 *
 * <p>Request bodies must have a {@code Content-Length} (the load generator, the JDK client of the CART
 * proxy, and nginx with request buffering all send one). Keep-alive; several requests on a connection are
 * answered in order.
 *
 * <p>Run: {@code java -cp cart-bench.jar dev.cart.bench.FakeReplica [ports]}; prints
 * {@code PORTS p1,p2,...} on one line when listening, and exits when its standard input closes (so it
 * never outlives the load generator that started it).
 */
public final class FakeReplica {

    static final String HEADER = "x-bench-response";
    /** The name of the thread that serves every port. */
    static final String THREAD = "replica-loop";

    private static final int MAX_HEAD = 64 * 1024;

    private static final byte[] JSON;
    private static final byte[] SSE;
    private static final byte[] HOLD;
    private static final byte[] HEALTH = answer("application/json", "{\"status\":\"ok\"}");
    private static final byte[] MODELS = answer(
            "application/json",
            "{\"object\":\"list\",\"data\":[{\"id\":\"bench\",\"object\":\"model\",\"owned_by\":\"bench\"}]}");
    private static final byte[] NOT_FOUND =
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    static {
        String[] words = "the order was sent on the second of the month to the old address and it".split(" ");
        StringBuilder content = new StringBuilder();
        for (int i = 0; i < 32; i++) {
            content.append(words[i % words.length]).append(' ');
        }
        String usage = "\"usage\":{\"prompt_tokens\":250,\"completion_tokens\":32,\"total_tokens\":282}";
        JSON = answer(
                "application/json",
                "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\","
                        + "\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                        + "\"assistant\",\"content\":\"" + content
                        + "\"},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
                        + usage + "}");
        String head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n";
        StringBuilder sse = new StringBuilder(head);
        for (int i = 0; i < 32; i++) {
            chunk(sse, event("{\"role\":\"assistant\",\"content\":\"" + words[i % words.length] + " \"}", "null", ""));
        }
        chunk(sse, event("{}", "\"stop\"", ""));
        chunk(
                sse,
                "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                        + "\"model\":\"bench\",\"choices\":[]," + usage + "}\n\n");
        chunk(sse, "data: [DONE]\n\n");
        sse.append("0\r\n\r\n");
        SSE = sse.toString().getBytes(StandardCharsets.UTF_8);
        StringBuilder hold = new StringBuilder(head);
        chunk(hold, event("{\"role\":\"assistant\",\"content\":\"\"}", "null", ""));
        HOLD = hold.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String event(String delta, String finish, String extra) {
        return "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                + "\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,"
                + "\"finish_reason\":" + finish + "}]" + extra + "}\n\n";
    }

    private static void chunk(StringBuilder sb, String data) {
        sb.append(Integer.toHexString(data.getBytes(StandardCharsets.UTF_8).length))
                .append("\r\n")
                .append(data)
                .append("\r\n");
    }

    private static byte[] answer(String type, String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        byte[] h = ("HTTP/1.1 200 OK\r\nContent-Type: " + type + "\r\nContent-Length: " + b.length + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[h.length + b.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(b, 0, all, h.length, b.length);
        return all;
    }

    /** Sizes of the canned answers, for the report. */
    static String describe() {
        return "json " + JSON.length + " B, sse " + SSE.length + " B (34 events, chunked)";
    }

    /** One client connection's state. */
    private static final class Conn {
        byte[] buf = new byte[16 * 1024];
        int start;
        int end;
        long bodyLeft = -1; // -1: reading a head
        boolean close;
        byte[] pendingAnswer;
        final ArrayDeque<ByteBuffer> out = new ArrayDeque<>();
    }

    private final Selector selector;
    private final List<ServerSocketChannel> servers = new ArrayList<>();

    FakeReplica(int ports) throws IOException {
        selector = Selector.open();
        for (int i = 0; i < ports; i++) {
            ServerSocketChannel s = ServerSocketChannel.open();
            s.bind(new InetSocketAddress("127.0.0.1", 0), 4096);
            s.configureBlocking(false);
            s.register(selector, SelectionKey.OP_ACCEPT);
            servers.add(s);
        }
    }

    List<Integer> ports() {
        List<Integer> p = new ArrayList<>();
        for (ServerSocketChannel s : servers) {
            p.add(((InetSocketAddress) s.socket().getLocalSocketAddress()).getPort());
        }
        return p;
    }

    public static void main(String[] args) throws IOException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        FakeReplica r = new FakeReplica(n);
        StringBuilder line = new StringBuilder("PORTS ");
        List<Integer> ports = r.ports();
        for (int i = 0; i < ports.size(); i++) {
            line.append(i == 0 ? "" : ",").append(ports.get(i));
        }
        System.out.println(line);
        System.out.flush();
        Thread watch = new Thread(
                () -> {
                    try (InputStream in = System.in) {
                        while (in.read() >= 0) {
                            // nothing: wait for the parent to go away
                        }
                    } catch (IOException ignored) {
                        // parent gone
                    }
                    System.exit(0);
                },
                "stdin-watch");
        watch.setDaemon(true);
        watch.start();
        // on a thread of its own name: the benchmark's split of CPU by thread kind (ThreadCpu) finds it by
        // name, which the main thread's, the process's own, cannot take
        Thread loop = new Thread(
                () -> {
                    try {
                        r.run();
                    } catch (IOException e) {
                        e.printStackTrace();
                        System.exit(1);
                    }
                },
                THREAD);
        loop.start();
    }

    void run() throws IOException {
        ByteBuffer scratch = ByteBuffer.allocateDirect(256 * 1024);
        while (true) {
            selector.select();
            Iterator<SelectionKey> it = selector.selectedKeys().iterator();
            while (it.hasNext()) {
                SelectionKey k = it.next();
                it.remove();
                try {
                    if (!k.isValid()) {
                        continue;
                    }
                    if (k.isAcceptable()) {
                        accept((ServerSocketChannel) k.channel());
                        continue;
                    }
                    if (k.isWritable()) {
                        flush(k);
                    }
                    if (k.isValid() && k.isReadable()) {
                        read(k, scratch);
                    }
                } catch (IOException | RuntimeException e) {
                    close(k);
                }
            }
        }
    }

    private void accept(ServerSocketChannel server) throws IOException {
        SocketChannel c;
        while ((c = server.accept()) != null) {
            c.configureBlocking(false);
            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
            c.register(selector, SelectionKey.OP_READ, new Conn());
        }
    }

    private static void close(SelectionKey k) {
        k.cancel();
        try {
            k.channel().close();
        } catch (IOException ignored) {
            // closing
        }
    }

    private void read(SelectionKey k, ByteBuffer scratch) throws IOException {
        SocketChannel ch = (SocketChannel) k.channel();
        Conn c = (Conn) k.attachment();
        while (true) {
            scratch.clear();
            int n = ch.read(scratch);
            if (n < 0) {
                close(k);
                return;
            }
            if (n == 0) {
                break;
            }
            scratch.flip();
            consume(c, scratch);
        }
        if (!c.out.isEmpty()) {
            flush(k);
        }
    }

    /** Feeds bytes read to the request parser; queues an answer for every complete request. */
    private void consume(Conn c, ByteBuffer in) {
        while (in.hasRemaining()) {
            if (c.bodyLeft > 0) {
                int skip = (int) Math.min(c.bodyLeft, in.remaining());
                in.position(in.position() + skip);
                c.bodyLeft -= skip;
                if (c.bodyLeft == 0) {
                    c.bodyLeft = -1;
                    respond(c);
                }
                continue;
            }
            // reading a head: append a piece to the buffer and look for its end
            int n = Math.min(in.remaining(), 8192);
            if (c.end + n > c.buf.length) {
                if (c.start > 0) {
                    System.arraycopy(c.buf, c.start, c.buf, 0, c.end - c.start);
                    c.end -= c.start;
                    c.start = 0;
                }
                if (c.end + n > c.buf.length) {
                    if (c.end + n > MAX_HEAD) {
                        throw new IllegalStateException("head too large");
                    }
                    c.buf = java.util.Arrays.copyOf(c.buf, Math.max(c.end + n, c.buf.length * 2));
                }
            }
            int from = Math.max(c.start, c.end - 3);
            in.get(c.buf, c.end, n);
            c.end += n;
            int headEnd = find(c.buf, from, c.end);
            if (headEnd < 0) {
                continue;
            }
            head(c, new String(c.buf, c.start, headEnd - c.start, StandardCharsets.ISO_8859_1));
            c.start = headEnd + 4;
            // bytes after the head are body bytes (or the next request): feed them again
            int rest = c.end - c.start;
            ByteBuffer again = ByteBuffer.wrap(java.util.Arrays.copyOfRange(c.buf, c.start, c.end));
            c.start = 0;
            c.end = 0;
            if (c.bodyLeft == 0) {
                c.bodyLeft = -1;
                respond(c);
            }
            if (rest > 0) {
                consume(c, again);
            }
        }
    }

    private static int find(byte[] b, int from, int to) {
        for (int i = Math.max(0, from); i + 3 < to; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
                return i;
            }
        }
        return -1;
    }

    private void head(Conn c, String head) {
        String[] lines = head.split("\r\n");
        String[] rl = lines[0].split(" ");
        String method = rl[0];
        String path = rl.length > 1 ? rl[1] : "/";
        String kind = "json";
        long length = 0;
        for (int i = 1; i < lines.length; i++) {
            String l = lines[i];
            int colon = l.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = l.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = l.substring(colon + 1).trim();
            switch (name) {
                case "content-length" -> length = Long.parseLong(value);
                case HEADER -> kind = value;
                case "connection" -> c.close = value.equalsIgnoreCase("close");
                case "transfer-encoding" -> throw new IllegalStateException("chunked request bodies not supported");
                default -> {}
            }
        }
        c.bodyLeft = length;
        // the answer is queued when the body has been read (respond)
        c.pendingAnswer = choose(method, path, kind);
    }

    private static byte[] choose(String method, String path, String kind) {
        if (method.equals("GET")) {
            if (path.startsWith("/health")) {
                return HEALTH;
            }
            if (path.startsWith("/v1/models")) {
                return MODELS;
            }
            return NOT_FOUND;
        }
        return switch (kind) {
            case "sse" -> SSE;
            case "hold" -> HOLD;
            default -> JSON;
        };
    }

    private void respond(Conn c) {
        c.out.add(ByteBuffer.wrap(c.pendingAnswer));
    }

    private void flush(SelectionKey k) throws IOException {
        SocketChannel ch = (SocketChannel) k.channel();
        Conn c = (Conn) k.attachment();
        while (!c.out.isEmpty()) {
            ByteBuffer b = c.out.peek();
            ch.write(b);
            if (b.hasRemaining()) {
                k.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                return;
            }
            c.out.poll();
        }
        k.interestOps(SelectionKey.OP_READ);
        if (c.close) {
            close(k);
        }
    }
}
