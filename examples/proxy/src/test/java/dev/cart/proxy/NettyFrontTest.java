package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.Socket;
import org.junit.jupiter.api.Test;

/**
 * What the Netty front settles by construction, tried as an unlucky client would (raw sockets): a client that
 * leaves before its answer's head frees the replica at once. (Slow clients are {@link SlowClientsTest} and a
 * slow reader of a complete answer {@link SlowReaderTest}, both on both fronts.)
 */
class NettyFrontTest {

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
