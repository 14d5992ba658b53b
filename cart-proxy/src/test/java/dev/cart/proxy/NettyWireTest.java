package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigLoader;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The Netty front's heads byte for byte, in both directions: what a replica receives (the client's end-to-end
 * headers in their order and spelling, then Host and Content-Length) and what the client receives (the replica's
 * end-to-end headers, then {@code x-routed-peer}, the framing and {@code connection: close}), for a JSON answer,
 * a chunked one, a HEAD's, a 204, a 304 and an HTTP/1.0 answer; and a client header that is not valid HTTP is
 * refused before anything reaches a replica. Pins what goes on the wire however the front builds its messages.
 */
class NettyWireTest {

    private static final String BODY = "{\"id\":\"x\",\"choices\":[]}";

    /** The replica answers every request with {@code answer}; the client sends {@code request}: both heads. */
    private record Seen(String upstreamHead, String client, int port) {}

    private static Seen exchange(String answer, String request) throws Exception {
        try (BadUpstreamAnswerTest.RawReplica raw = new BadUpstreamAnswerTest.RawReplica(answer)) {
            ProxyHarness h = new ProxyHarness();
            h.proxy = h.startProxy(
                    ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: " + raw.url()
                            + "\nproxy:\n  max_retries: 0\n  add_routed_peer_header: true\n"),
                    h.options());
            try (h;
                    Socket s = new Socket(InetAddress.getLoopbackAddress(), h.proxy.port())) {
                OutputStream out = s.getOutputStream();
                out.write(request.getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                InputStream in = s.getInputStream();
                String client = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
                String upstream;
                synchronized (raw.heads) {
                    upstream = raw.heads.isEmpty() ? null : raw.heads.get(0);
                }
                return new Seen(upstream, client, raw.socket.getLocalPort());
            }
        }
    }

    private static String json(String status, String extra) {
        return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + extra + "Content-Length: "
                + BODY.length() + "\r\n\r\n" + BODY;
    }

    @Test
    void theRequestHeadUpstreamAndTheAnswerHeadDownstream() throws Exception {
        String request = "POST /v1/other?q=1 HTTP/1.1\r\n"
                + "Host: proxy.example\r\n"
                + "Connection: close, X-Hop\r\n"
                + "X-Hop: per-connection\r\n"
                + "Keep-Alive: timeout=5\r\n"
                + "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
                + "TE: trailers\r\n"
                + "Authorization: Bearer k\r\n"
                + "X-Multi: one\r\n"
                + "content-type: application/json\r\n"
                + "X-Multi: two\r\n"
                + "Content-Length: 2\r\n"
                + "User-Agent: wire/1\r\n\r\n{}";
        String answer = json(
                "200 OK",
                "Connection: keep-alive, X-Per-Hop\r\nX-Per-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
                        + "Date: Thu, 03 Dec 2026 06:00:00 GMT\r\nX-Routed-Peer: forged\r\nSet-Cookie: a=1\r\n"
                        + "Proxy-Authenticate: Basic\r\nSet-Cookie: b=2\r\nX-Request-Id: r-1\r\n");
        Seen seen = exchange(answer, request);
        int port = seen.port();
        assertEquals(
                "POST /v1/other?q=1 HTTP/1.1\r\n"
                        + "Authorization: Bearer k\r\n"
                        + "X-Multi: one\r\n"
                        + "content-type: application/json\r\n"
                        + "X-Multi: two\r\n"
                        + "User-Agent: wire/1\r\n"
                        + "host: 127.0.0.1:" + port + "\r\n"
                        + "content-length: 2\r\n\r\n",
                seen.upstreamHead());
        assertEquals(
                "HTTP/1.1 200 OK\r\n"
                        + "Content-Type: application/json\r\n"
                        + "Set-Cookie: a=1\r\n"
                        + "Set-Cookie: b=2\r\n"
                        + "X-Request-Id: r-1\r\n"
                        + "x-routed-peer: http://127.0.0.1:" + port + "\r\n"
                        + "content-length: " + BODY.length() + "\r\n"
                        + "connection: close\r\n\r\n"
                        + BODY,
                seen.client());
    }

    @Test
    void aChunkedAnswerGoesChunkedAndAGetWithoutBodyHasNoLength() throws Exception {
        String answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + Integer.toHexString(BODY.length()) + "\r\n" + BODY + "\r\n0\r\n\r\n";
        Seen seen = exchange(answer, "GET /v1/other HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nConnection: close\r\n\r\n");
        int port = seen.port();
        assertEquals(
                "GET /v1/other HTTP/1.1\r\nAccept: */*\r\nhost: 127.0.0.1:" + port + "\r\n\r\n", seen.upstreamHead());
        assertEquals(
                "HTTP/1.1 200 OK\r\n"
                        + "Content-Type: application/json\r\n"
                        + "x-routed-peer: http://127.0.0.1:" + port + "\r\n"
                        + "transfer-encoding: chunked\r\n"
                        + "connection: close\r\n\r\n"
                        + Integer.toHexString(BODY.length()) + "\r\n" + BODY + "\r\n0\r\n\r\n",
                seen.client());
    }

    @Test
    void aHeadsAnswerSaysItsLengthAnd204And304SayNone() throws Exception {
        String headAnswer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 77\r\n\r\n";
        Seen head = exchange(headAnswer, "HEAD /v1/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertTrue(head.upstreamHead().startsWith("HEAD /v1/other HTTP/1.1\r\n"), head.upstreamHead());
        assertEquals(
                List.of("HTTP/1.1 200 OK", "Content-Type: application/json", "content-length: 77", "connection: close"),
                lines(head.client()));
        for (String status : List.of("204 No Content", "304 Not Modified")) {
            Seen none = exchange(
                    "HTTP/1.1 " + status + "\r\nETag: \"e\"\r\nContent-Length: 0\r\n\r\n",
                    "GET /v1/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            assertEquals(List.of("HTTP/1.1 " + status, "ETag: \"e\"", "connection: close"), lines(none.client()));
        }
    }

    @Test
    void anHttp10AnswerReachesTheClientAsHttp11WithTheStandardReason() throws Exception {
        Seen seen = exchange(
                "HTTP/1.0 200 Fine\r\nContent-Type: application/json\r\nContent-Length: " + BODY.length() + "\r\n\r\n"
                        + BODY,
                "GET /v1/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertEquals(
                List.of(
                        "HTTP/1.1 200 OK",
                        "Content-Type: application/json",
                        "content-length: " + BODY.length(),
                        "connection: close"),
                lines(seen.client()));
    }

    @Test
    void aClientHeaderThatIsNotValidHttpIsRefusedBeforeAnyReplica() throws Exception {
        for (String bad : List.of("X-Bad: a\u0001b\r\n", "X Bad: a\r\n", "X-Bad\u00e9: a\r\n", "X-Bad: a\u007fb\r\n")) {
            Seen seen = exchange(json("200 OK", ""), "GET /v1/other HTTP/1.1\r\nHost: x\r\n" + bad + "\r\n");
            assertTrue(seen.client().startsWith("HTTP/1.1 400 "), bad + " -> " + seen.client());
            assertEquals(null, seen.upstreamHead(), bad);
        }
    }

    /** The head's lines without the {@code x-routed-peer} one (whose value has the replica's port), up to the body. */
    private static List<String> lines(String message) {
        String head = message.substring(0, message.indexOf("\r\n\r\n"));
        return head.lines().filter(l -> !l.startsWith("x-routed-peer: ")).toList();
    }
}
