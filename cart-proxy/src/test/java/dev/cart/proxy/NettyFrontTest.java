package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.netty.NettyFront;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the Netty front settles by construction, tried as an unlucky client would (raw sockets): a client that
 * leaves before its answer's head frees the replica at once. (Slow clients are {@link SlowClientsTest} and a
 * slow reader of a complete answer {@link SlowReaderTest}, both on both fronts.)
 */
class NettyFrontTest {

    @Test
    void aClientThatLeavesBeforeTheAnswerFreesTheReplicasSlot() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            h.replica(0).hangBeforeHeaders = true; // the replica computes for as long as request_timeout_secs
            String body = chat("never mind", false);
            try (Socket s = h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body)) {
                ProxyHarness.await(
                        "the request reached the replica", () -> h.replica(0).count() == 1);
                assertEquals(1, h.member(0).inFlight());
            } // the client leaves
            ProxyHarness.await(
                    "the slot released when the client left", () -> h.member(0).inFlight() == 0);
            h.replica(0).release.countDown();
        }
    }

    /**
     * A replica that writes a stream's events as many small chunks at once: the client gets the same bytes in
     * fewer chunks (those of one read from the replica gathered into one), never fewer bytes or others.
     */
    @Test
    void theSmallChunksOfOneReadReachTheClientAsOneChunk() throws Exception {
        int events = 40;
        StringBuilder answer = new StringBuilder("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        StringBuilder data = new StringBuilder();
        for (int i = 0; i < events; i++) {
            String event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w" + i + " \"}}]}\n\n";
            data.append(event);
            answer.append(Integer.toHexString(event.length()))
                    .append("\r\n")
                    .append(event)
                    .append("\r\n");
        }
        answer.append("0\r\n\r\n");
        try (BadUpstreamAnswerTest.RawReplica raw = new BadUpstreamAnswerTest.RawReplica(answer.toString())) {
            ProxyHarness h = new ProxyHarness();
            h.proxy = h.startProxy(
                    ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: " + raw.url()
                            + "\nproxy:\n  max_retries: 0\n"),
                    h.options());
            try (h) {
                String body = chat("tell me", true);
                try (Socket s = h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)) {
                    InputStream in = s.getInputStream();
                    String head = line(in);
                    assertTrue(head.startsWith("HTTP/1.1 200"), head);
                    boolean chunked = false;
                    for (String l; !(l = line(in)).isEmpty(); ) {
                        chunked |= l.equalsIgnoreCase("transfer-encoding: chunked");
                    }
                    assertTrue(chunked, "relayed chunked");
                    ByteArrayOutputStream got = new ByteArrayOutputStream();
                    int chunks = 0;
                    for (int n; (n = Integer.parseInt(line(in).trim(), 16)) > 0; ) {
                        got.write(in.readNBytes(n));
                        assertEquals("", line(in));
                        chunks++;
                    }
                    assertEquals(data.toString(), got.toString(StandardCharsets.ISO_8859_1));
                    assertTrue(
                            chunks < events,
                            chunks + " chunks to the client for " + events + " written at once by the replica");
                }
            }
        }
    }

    /**
     * A body that arrives in many pieces (a chunked request written piece by piece: more than the client
     * buffers the front keeps as they are) or in one write with its Content-Length (a few of the client's
     * buffers, kept as they are) reaches the replica byte for byte, on the first send and on the retry after a
     * replica refused it (the first send from the client's buffers, the retry from the core's copy); routed,
     * and passed through. Each request's buffers are released when it ends (the leak detector, paranoid for
     * the whole suite once, says so).
     */
    @Test
    void aBodyInManyPiecesReachesTheReplicaWholeOnTheFirstSendAndTheRetry() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "proxy:\n  max_retries: 1\n")) {
            StringBuilder text = new StringBuilder();
            for (int i = 0; text.length() < 48 * 1024; i++) {
                text.append("word").append(i).append(' ');
            }
            byte[] body = chat(text.toString(), false).getBytes(StandardCharsets.UTF_8);
            for (int framing = 0; framing < 4; framing++) {
                sendTwice(h, body, framing % 2 == 0 ? 3 * NettyFront.BODY_PIECES : 1, framing < 2);
            }
        }
    }

    /**
     * Sends {@code body} in {@code pieces} (chunked; 1: one write with its Content-Length) to a routed
     * endpoint or a pass-through path, once answered and once refused by every replica (a retry).
     */
    private static void sendTwice(ProxyHarness h, byte[] body, int pieces, boolean routed) throws Exception {
        String path = routed ? "/v1/chat/completions" : "/v1/other";
        for (int refused = 0; refused < 2; refused++) {
            for (ScriptedReplica r : List.of(h.replica(0), h.replica(1))) {
                r.requests.clear();
            }
            h.replica(0).forcedStatus = refused == 1 ? 503 : 0;
            h.replica(1).forcedStatus = refused == 1 ? 503 : 0;
            int before = h.replica(0).count() + h.replica(1).count();
            String framing = pieces == 1 ? "Content-Length: " + body.length : "Transfer-Encoding: chunked";
            try (Socket s = h.raw("POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    + "Content-Type: application/json\r\n" + framing + "\r\n\r\n")) {
                java.io.OutputStream out = s.getOutputStream();
                if (pieces == 1) {
                    out.write(body);
                } else {
                    int step = (body.length + pieces - 1) / pieces;
                    for (int from = 0; from < body.length; from += step) {
                        int n = Math.min(step, body.length - from);
                        out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                        out.write(body, from, n);
                        out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
                        out.flush();
                    }
                    out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                }
                out.flush();
                String head = line(s.getInputStream());
                assertTrue(head.startsWith(refused == 1 ? "HTTP/1.1 503" : "HTTP/1.1 200"), head);
            }
            int sends = h.replica(0).count() + h.replica(1).count() - before;
            assertEquals(refused == 1 ? 2 : 1, sends, "sends");
            for (ScriptedReplica r : List.of(h.replica(0), h.replica(1))) {
                for (ScriptedReplica.Recorded got : r.requests) {
                    assertTrue(
                            java.util.Arrays.equals(body, got.body()),
                            "the body as the client sent it (" + pieces + " pieces, " + path + ")");
                }
            }
        }
    }

    private static String line(InputStream in) throws Exception {
        StringBuilder b = new StringBuilder();
        for (int c; (c = in.read()) >= 0 && c != '\n'; ) {
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }
}
