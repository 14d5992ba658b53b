package dev.cart.bench;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Reference pass-through proxies with no routing logic, to tell the cost of the HTTP plumbing from the
 * cost of CART's own work: both on the JDK {@link HttpServer} as the CART proxy is (with
 * {@code sun.net.httpserver.nodelay} as given on the command line), round-robin over the replicas.
 *
 * <ul>
 *   <li>{@code jdk}: upstream through {@link HttpClient} (HTTP/1.1, {@code ofInputStream}), as the CART
 *       proxy forwards;</li>
 *   <li>{@code socket}: upstream through a pool of kept-alive blocking sockets used by the handling thread
 *       itself (no hand-off to another thread between the request and its answer).</li>
 * </ul>
 * Run: {@code java -cp cart-bench.jar dev.cart.bench.RefProxy jdk|socket PORT REPLICA_PORT,...}.
 * Request threads: virtual threads on Java 21+, else a pool of 512.
 */
@SuppressWarnings("AssignmentExpression") // the read-a-line-until-empty loop idiom
public final class RefProxy {

    private static final Set<String> HOP = Set.of(
            "connection",
            "keep-alive",
            "proxy-connection",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "host",
            "content-length",
            "expect");

    private RefProxy() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int port = Integer.parseInt(args[1]);
        List<Integer> replicas = new ArrayList<>();
        for (String s : args[2].split(",")) {
            replicas.add(Integer.parseInt(s));
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 1024);
        server.setExecutor(executor());
        AtomicInteger rr = new AtomicInteger();
        if (mode.equals("jdk")) {
            HttpClient client =
                    HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            server.createContext("/", ex -> {
                try (ex) {
                    byte[] body = ex.getRequestBody().readAllBytes();
                    int r = replicas.get(Math.floorMod(rr.getAndIncrement(), replicas.size()));
                    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(
                            "http://127.0.0.1:" + r + ex.getRequestURI().getRawPath()));
                    for (Map.Entry<String, List<String>> h :
                            ex.getRequestHeaders().entrySet()) {
                        if (!HOP.contains(h.getKey().toLowerCase(Locale.ROOT))) {
                            for (String v : h.getValue()) {
                                b.header(h.getKey(), v);
                            }
                        }
                    }
                    b.method(
                            ex.getRequestMethod(),
                            body.length == 0
                                    ? HttpRequest.BodyPublishers.noBody()
                                    : HttpRequest.BodyPublishers.ofByteArray(body));
                    HttpResponse<InputStream> resp = client.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
                    resp.headers().map().forEach((k, v) -> {
                        if (!HOP.contains(k.toLowerCase(Locale.ROOT))) {
                            ex.getResponseHeaders().put(k, v);
                        }
                    });
                    long len = resp.headers().firstValueAsLong("content-length").orElse(-1);
                    relay(ex, resp.statusCode(), len, resp.body());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        } else {
            List<ConcurrentLinkedDeque<Upstream>> pools = new ArrayList<>();
            for (int i = 0; i < replicas.size(); i++) {
                pools.add(new ConcurrentLinkedDeque<>());
            }
            server.createContext("/", ex -> {
                try (ex) {
                    byte[] body = ex.getRequestBody().readAllBytes();
                    int idx = Math.floorMod(rr.getAndIncrement(), replicas.size());
                    Upstream u = pools.get(idx).pollFirst();
                    if (u == null) {
                        u = new Upstream(replicas.get(idx));
                    }
                    StringBuilder head = new StringBuilder(ex.getRequestMethod())
                            .append(' ')
                            .append(ex.getRequestURI().getRawPath())
                            .append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                    for (Map.Entry<String, List<String>> h :
                            ex.getRequestHeaders().entrySet()) {
                        if (!HOP.contains(h.getKey().toLowerCase(Locale.ROOT))) {
                            for (String v : h.getValue()) {
                                head.append(h.getKey()).append(": ").append(v).append("\r\n");
                            }
                        }
                    }
                    head.append("Content-Length: ").append(body.length).append("\r\n\r\n");
                    u.send(head.toString().getBytes(StandardCharsets.ISO_8859_1), body);
                    u.readHead(ex.getResponseHeaders());
                    relay(ex, u.status, u.chunked ? -1 : u.length, u.body());
                    if (u.reusable()) {
                        pools.get(idx).addFirst(u);
                    } else {
                        u.close();
                    }
                }
            });
        }
        server.start();
        System.out.println("LISTENING " + port);
    }

    private static void relay(HttpExchange ex, int status, long length, InputStream body) throws IOException {
        ex.sendResponseHeaders(status, length == 0 ? -1 : length < 0 ? 0 : length);
        OutputStream out = ex.getResponseBody();
        byte[] buf = new byte[16 * 1024];
        for (int n; (n = body.read(buf)) >= 0; ) {
            out.write(buf, 0, n);
            if (length < 0) {
                out.flush();
            }
        }
        body.close();
        out.close();
    }

    private static ExecutorService executor() {
        try {
            return (ExecutorService)
                    Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (ReflectiveOperationException e) {
            return Executors.newFixedThreadPool(512);
        }
    }

    /** One kept-alive upstream connection: writes a request, reads the head, gives the body as a stream. */
    private static final class Upstream {
        final Socket socket;
        final InputStream in;
        final OutputStream out;
        final byte[] buf = new byte[16 * 1024];
        int pos;
        int lim;
        int status;
        boolean chunked;
        long length;
        boolean close;
        boolean done;

        Upstream(int port) throws IOException {
            socket = new Socket("127.0.0.1", port);
            socket.setTcpNoDelay(true);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }

        void send(byte[] head, byte[] body) throws IOException {
            byte[] all = new byte[head.length + body.length];
            System.arraycopy(head, 0, all, 0, head.length);
            System.arraycopy(body, 0, all, head.length, body.length);
            out.write(all);
            out.flush();
        }

        void readHead(Headers into) throws IOException {
            String sl = line();
            status = Integer.parseInt(sl.substring(9, 12));
            chunked = false;
            length = -1;
            close = false;
            done = false;
            for (String l; !(l = line()).isEmpty(); ) {
                int c = l.indexOf(':');
                String k = l.substring(0, c).trim();
                String v = l.substring(c + 1).trim();
                String lk = k.toLowerCase(Locale.ROOT);
                switch (lk) {
                    case "content-length" -> length = Long.parseLong(v);
                    case "transfer-encoding" ->
                        chunked = v.toLowerCase(Locale.ROOT).contains("chunked");
                    case "connection" -> close = v.equalsIgnoreCase("close");
                    default -> {}
                }
                if (!HOP.contains(lk)) {
                    into.add(k, v);
                }
            }
        }

        boolean reusable() {
            return done && !close;
        }

        InputStream body() {
            return new InputStream() {
                long left = chunked ? 0 : length;

                @Override
                public int read() throws IOException {
                    byte[] one = new byte[1];
                    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    if (done) {
                        return -1;
                    }
                    if (chunked && left == 0) {
                        String size = line();
                        if (size.isEmpty()) {
                            size = line();
                        }
                        int semi = size.indexOf(';');
                        left = Long.parseLong((semi < 0 ? size : size.substring(0, semi)).trim(), 16);
                        if (left == 0) {
                            while (!line().isEmpty()) {
                                // trailers
                            }
                            done = true;
                            return -1;
                        }
                    }
                    if (!chunked && left <= 0) {
                        done = true;
                        return -1;
                    }
                    if (pos == lim && !fill()) {
                        throw new IOException("upstream closed mid-body");
                    }
                    int n = (int) Math.min(Math.min(len, lim - pos), left);
                    System.arraycopy(buf, pos, b, off, n);
                    pos += n;
                    left -= n;
                    if (!chunked && left == 0) {
                        done = true;
                    }
                    return n;
                }
            };
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
            lim += n;
            return true;
        }

        private String line() throws IOException {
            while (true) {
                for (int i = pos; i < lim; i++) {
                    if (buf[i] == '\n') {
                        int end = i > pos && buf[i - 1] == '\r' ? i - 1 : i;
                        String s = new String(buf, pos, end - pos, StandardCharsets.ISO_8859_1);
                        pos = i + 1;
                        return s;
                    }
                }
                if (!fill()) {
                    throw new IOException("upstream closed");
                }
            }
        }

        void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
