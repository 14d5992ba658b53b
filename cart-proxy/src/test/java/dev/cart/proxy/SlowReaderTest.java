package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.upstream.Relay;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * A client that stops reading a complete answer does not hold the replica's slot, on either front: the
 * answer (up to {@link Relay#BUFFER_BYTES}) is read from the replica at the replica's speed and the lease
 * closed when it is complete. Before, the JDK front read the replica only as fast as the client read: its
 * {@code in_flight} stayed 1 for as long as the client did not read (10 s here, 39 s in the issue report).
 */
class SlowReaderTest {

    /** A 6 MiB answer: more than the kernel's socket buffers hold (4 MiB at most here), less than the front's. */
    static final int SLOW_READER_ANSWER = 6 * 1024 * 1024;

    @Test
    void aClientThatStopsReadingDoesNotHoldTheReplicasSlot() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            h.replica(0).reply = "x".repeat(SLOW_READER_ANSWER); // written by the replica at once
            String body = chat("a long answer please", false);
            try (Socket s = new Socket()) {
                s.setReceiveBufferSize(4096); // before connecting: the client's window stays small
                s.connect(new InetSocketAddress("127.0.0.1", h.proxy.port()));
                s.setSoTimeout(20_000);
                long start = System.nanoTime();
                s.getOutputStream()
                        .write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                        + "Content-Length: " + body.length() + "\r\n\r\n" + body)
                                .getBytes(StandardCharsets.ISO_8859_1));
                InputStream in = s.getInputStream();
                assertTrue(in.read(new byte[16]) > 0, "the answer started");
                // the client reads nothing more; the replica's answer is complete, so its slot should be free
                long deadline = start + Duration.ofSeconds(10).toNanos();
                while (h.member(0).inFlight() != 0 && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(5_000_000); // bounded poll interval
                }
                int inFlight = h.member(0).inFlight();
                long releasedMillis = (System.nanoTime() - start) / 1_000_000;
                System.out.printf(
                        "slow reader: in_flight %d, %d ms after the request was sent%n", inFlight, releasedMillis);
                assertEquals(0, inFlight, "the replica's slot, with the client not reading");
                assertEquals(1, h.replica(0).count());
                // the client still gets the whole answer when it reads again
                long got = 0;
                byte[] buf = new byte[64 * 1024];
                for (int n; got < SLOW_READER_ANSWER && (n = in.read(buf)) > 0; ) {
                    for (int i = 0; i < n; i++) {
                        if (buf[i] == 'x') {
                            got++;
                        }
                    }
                }
                assertTrue(got >= SLOW_READER_ANSWER, "the answer arrives whole: " + got);
            }
        }
    }
}
