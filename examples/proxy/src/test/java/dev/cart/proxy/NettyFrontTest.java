package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the Netty front settles by construction, each tried as an attacker or an unlucky client would (raw
 * sockets): slow clients hold no thread, so hundreds of them cannot stop {@code /health} or a chat; a client
 * that stops reading a complete answer does not hold the replica's slot. (The JDK front has neither property
 * on Java 17-20: a slow client holds a request thread, and the answer is read upstream only as fast as the
 * client reads it.)
 */
class NettyFrontTest {

    /** Slow clients per kind: heads that never end, and bodies that never end. */
    static final int SLOW_PER_KIND = 150;

    @Test
    void hundredsOfSlowClientsDoNotStopHealthOrAChat() throws Exception {
        // a small thread budget, which the JDK front on Java 17 would give to the first slow clients
        String yaml = "server:\n  max_threads: 8\n  request_read_timeout_secs: 600\n  idle_timeout_secs: 600\n";
        try (ProxyHarness h = ProxyHarness.start(ProxyConfig.Server.Engine.NETTY, 1, yaml)) {
            List<Socket> slow = new ArrayList<>();
            try {
                for (int i = 0; i < SLOW_PER_KIND; i++) {
                    // a head that never ends
                    slow.add(h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: a"));
                    // a complete head and a body that never ends
                    slow.add(h.raw(
                            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a\":"));
                }
                for (int round = 0; round < 3; round++) {
                    for (Socket s : slow) { // one more byte each: they are all still trickling
                        OutputStream out = s.getOutputStream();
                        out.write('1');
                        out.flush();
                    }
                    HttpResponse<String> health = h.http.send(
                            HttpRequest.newBuilder(h.uri("/health"))
                                    .timeout(Duration.ofSeconds(20))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, health.statusCode(), health.body());
                    HttpResponse<String> answer = h.http.send(
                            HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                    .timeout(Duration.ofSeconds(20))
                                    .header("Content-Type", "application/json")
                                    .POST(HttpRequest.BodyPublishers.ofString(chat("still here " + round, false)))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, answer.statusCode(), answer.body());
                }
                assertEquals(3, h.replica(0).count(), "only the complete chats reached the replica");
            } finally {
                for (Socket s : slow) {
                    s.close();
                }
            }
        }
    }

    @Test
    void aClientThatStopsReadingDoesNotHoldTheReplicasSlot() throws Exception {
        assertEquals(0, stopsReading(ProxyConfig.Server.Engine.NETTY, SLOW_READER_ANSWER), "in flight");
    }

    @Test
    void aClientThatLeavesBeforeTheAnswerFreesTheReplicasSlot() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(ProxyConfig.Server.Engine.NETTY, 1, "")) {
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

    /** A 6 MiB answer: more than the kernel's socket buffers hold (4 MiB at most here), less than the front's. */
    static final int SLOW_READER_ANSWER = 6 * 1024 * 1024;

    /**
     * A client asks for an answer of {@code size} characters, reads its first bytes and then nothing; returns
     * the replica's in-flight count once it is 0, or after 10 s (what a slow reader holds).
     */
    static int stopsReading(ProxyConfig.Server.Engine engine, int size) throws Exception {
        try (ProxyHarness h = ProxyHarness.start(engine, 1, "")) {
            h.replica(0).reply = "x".repeat(size); // written by the replica at once
            String body = chat("a long answer please", false);
            try (Socket s = new Socket()) {
                s.setReceiveBufferSize(4096); // before connecting: the client's window stays small
                s.connect(new java.net.InetSocketAddress("127.0.0.1", h.proxy.port()));
                s.setSoTimeout(20_000);
                s.getOutputStream()
                        .write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                        + "Content-Length: " + body.length() + "\r\n\r\n" + body)
                                .getBytes(StandardCharsets.ISO_8859_1));
                InputStream in = s.getInputStream();
                assertTrue(in.read(new byte[16]) > 0, "the answer started");
                // the client reads nothing more; the replica's answer is complete, so its slot should be free
                long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (h.member(0).inFlight() != 0 && System.nanoTime() < deadline) {
                    java.util.concurrent.locks.LockSupport.parkNanos(5_000_000); // bounded poll interval
                }
                int inFlight = h.member(0).inFlight();
                assertEquals(1, h.replica(0).count());
                return inFlight;
            }
        }
    }
}
