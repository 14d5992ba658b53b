package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigLoader;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Replica answers that are not valid HTTP must reach the client as a clean 502, counted as failures. */
class BadUpstreamAnswerTest {

    /** A replica on a raw socket that answers every request with {@code answer}, then closes. */
    static final class RawReplica implements AutoCloseable {
        final ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final List<String> heads = new ArrayList<>();
        private final Thread thread;

        RawReplica(String answer) throws Exception {
            thread = new Thread(
                    () -> {
                        while (!socket.isClosed()) {
                            try (Socket s = socket.accept()) {
                                InputStream in = s.getInputStream();
                                String head = readHead(in);
                                synchronized (heads) {
                                    heads.add(head);
                                }
                                int length = 0;
                                for (String line : head.split("\r\n")) {
                                    if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                                        length = Integer.parseInt(
                                                line.substring(15).trim());
                                    }
                                }
                                in.readNBytes(length);
                                OutputStream out = s.getOutputStream();
                                out.write(answer.getBytes(StandardCharsets.ISO_8859_1));
                                out.flush();
                            } catch (Exception e) {
                                // closed
                            }
                        }
                    },
                    "raw-replica");
            thread.setDaemon(true);
            thread.start();
        }

        private static String readHead(InputStream in) throws Exception {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) != -1) {
                b.write(c);
                String s = b.toString(StandardCharsets.ISO_8859_1);
                if (s.endsWith("\r\n\r\n")) {
                    return s;
                }
            }
            return b.toString(StandardCharsets.ISO_8859_1);
        }

        String url() {
            return "http://127.0.0.1:" + socket.getLocalPort();
        }

        @Override
        public void close() throws Exception {
            socket.close();
            thread.join(10_000);
        }
    }

    private static double failures(ProxyHarness h, String replica) {
        try {
            return PromText.parse(h.get("/metrics").body())
                    .sum("cart_upstream_requests_total", "replica", replica, "outcome", "failure");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static final String BODY = "{\"id\":\"x\",\"choices\":[]}";

    /**
     * A request that makes every replica read it and drop the connection (an engine that crashes on the
     * prompt) is sent once per allowed attempt: the stale-connection resend is for reused connections only.
     * Before, it was sent twice to each of the three replicas (6 sends).
     */
    @Test
    void aPoisonRequestIsSentOncePerAttempt() throws Exception {
        try (RawReplica a = new RawReplica("");
                RawReplica b = new RawReplica("");
                RawReplica c = new RawReplica("")) {
            ProxyHarness h = new ProxyHarness();
            h.proxy = h.startProxy(
                    ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: " + a.url()
                            + "\n  - url: " + b.url() + "\n  - url: " + c.url() + "\nproxy:\n  max_retries: 2\n"),
                    h.options());
            try (h) {
                HttpResponse<String> r = h.post("/v1/chat/completions", ProxyHarness.chat("poison", false));
                assertEquals(502, r.statusCode(), r.body());
                int sends = 0;
                for (RawReplica x : List.of(a, b, c)) {
                    synchronized (x.heads) {
                        sends += x.heads.size();
                    }
                }
                assertEquals(3, sends, "one send per attempt (max_retries: 2), no resend on a fresh connection");
                assertEquals(2, h.sleeps.size(), "two retries");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"chunked-and-length", "status-999", "status-600"})
    void aBrokenAnswerBecomesA502AndCountsAsTheReplicasFailure(String kind) throws Exception {
        String answer = switch (kind) {
            case "chunked-and-length" ->
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
                        + Integer.toHexString(BODY.length()) + "\r\n" + BODY + "\r\n0\r\n\r\n";
            case "status-999" ->
                "HTTP/1.1 999 Odd\r\nContent-Type: application/json\r\nContent-Length: " + BODY.length()
                        + "\r\nConnection: close\r\n\r\n" + BODY;
            default ->
                "HTTP/1.1 600 Odd\r\nContent-Type: application/json\r\nContent-Length: " + BODY.length()
                        + "\r\nConnection: close\r\n\r\n" + BODY;
        };
        try (RawReplica raw = new RawReplica(answer)) {
            ProxyHarness h = new ProxyHarness();
            h.proxy = h.startProxy(
                    ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n" + "  - url: " + raw.url()
                            + "\nproxy:\n  max_retries: 0\n"),
                    h.options());
            h.seenSets.add(h.proxy.routing().replicas);
            try (h) {
                HttpResponse<String> r = h.post("/v1/chat/completions", chat("hello", false));
                assertEquals(
                        502,
                        r.statusCode(),
                        kind + ": " + r.statusCode() + " " + r.headers().map() + " " + r.body());
                assertTrue(r.body().contains("\"error\""), r.body());
                ProxyHarness.await("the failure counted", () -> failures(h, raw.url()) >= 1);
            }
        }
    }
}
