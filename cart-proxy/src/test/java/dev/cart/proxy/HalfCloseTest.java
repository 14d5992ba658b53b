package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.netty.NettyFront;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client that half-closes its connection (shuts its output: it has gone, as nginx reads it) while its answer
 * is produced, in a read of its own after the request's: the Netty front notices, cancels the upstream request
 * and closes the lease as cancelled, nothing left in flight. Both of its transports: epoll reports the peer's
 * FIN even to a channel that is not reading, NIO only to one that reads, so this is what proves the front reads
 * the client during an answer. (The JDK front cannot apply: its {@code HttpServer} reads nothing of a
 * connection while its exchange is handled, so it notices a client gone only when a write to it fails.)
 */
@ValueSource(booleans = {true, false})
class HalfCloseTest {

    @Parameter
    boolean nativeTransport;

    private ProxyHarness start() throws Exception {
        return ProxyHarness.start(nativeTransport, 1, "");
    }

    private static String post(String body) {
        return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    private static double cancelled(ProxyHarness h) {
        try {
            return PromText.parse(h.get("/metrics").body()).sum("cart_upstream_requests_total", "outcome", "cancelled");
        } catch (java.io.IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aHalfCloseDuringAStreamedAnswerCancelsIt() throws Exception {
        try (ProxyHarness h = start()) {
            ScriptedReplica r = h.replica(0);
            r.hangAfterFirstChunk = true; // the stream's first event, then the replica computes on
            try (Socket s = h.raw(post(chat("a long story", true)))) {
                InputStream in = s.getInputStream();
                byte[] head = new byte[64];
                assertTrue(in.read(head) > 0, "the answer started");
                assertEquals(1, h.member(0).inFlight());
                s.shutdownOutput(); // the client's FIN, in a read of its own after the request's
                await("the lease is closed as cancelled", () -> cancelled(h) == 1);
                await("the replica's slot is free", () -> h.member(0).inFlight() == 0);
                r.release.countDown();
                await("the upstream request is cancelled", () -> r.writeFailed);
            }
        }
    }

    @Test
    void aHalfCloseBeforeTheAnswerCancelsIt() throws Exception {
        try (ProxyHarness h = start()) {
            ScriptedReplica r = h.replica(0);
            r.hangBeforeHeaders = true; // the replica computes; no byte of the answer yet
            try (Socket s = h.raw(post(chat("never mind", false)))) {
                await("the request reached the replica", () -> r.count() == 1);
                assertEquals(1, h.member(0).inFlight());
                s.shutdownOutput();
                await("the lease is closed as cancelled", () -> cancelled(h) == 1);
                await("the replica's slot is free", () -> h.member(0).inFlight() == 0);
                r.release.countDown();
            }
        }
    }

    /**
     * Pipelined requests sent while an answer is produced, more than the front queues during it: each is answered,
     * in order, once the answers before it are complete.
     */
    @Test
    void pipelinedRequestsBeyondTheQueueAreAnsweredInOrder() throws Exception {
        try (ProxyHarness h = start()) {
            ScriptedReplica r = h.replica(0);
            h.probe(); // /health is 503 until the first probe
            java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
            r.gate = gate; // the stream's first event, then the replica waits for the gate
            int probes = NettyFront.PIPELINED_MESSAGES + 4;
            StringBuilder next = new StringBuilder();
            for (int i = 1; i <= probes; i++) {
                next.append("GET /health?n=")
                        .append(i)
                        .append(" HTTP/1.1\r\nHost: x\r\n")
                        .append(i == probes ? "Connection: close\r\n" : "")
                        .append("\r\n");
            }
            try (Socket s = h.raw(post(chat("first", true)))) {
                await("the first answer started", () -> r.firstChunkSent.getCount() == 0);
                s.getOutputStream().write(next.toString().getBytes(StandardCharsets.ISO_8859_1));
                s.getOutputStream().flush();
                gate.countDown();
                String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                int answers = all.split("HTTP/1\\.1 200", -1).length - 1;
                assertEquals(probes + 1, answers, all);
                assertTrue(all.indexOf("[DONE]") < all.indexOf("\"healthy\""), "the streamed answer first: " + all);
            }
        }
    }
}
