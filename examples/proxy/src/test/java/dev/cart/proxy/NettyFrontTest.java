package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the Netty front settles by construction, each tried as an attacker or an unlucky client would (raw
 * sockets): slow clients hold no thread, so hundreds of them cannot stop {@code /health} or a chat; a client
 * that leaves before its answer's head frees the replica at once. (A slow reader of a complete answer is
 * {@link SlowReaderTest}, on both fronts.)
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
}
