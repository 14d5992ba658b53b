package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code server.max_buffered_answer_bytes} bounds the answer bytes held for clients across connections: each
 * connection may buffer up to 8 MiB, but with the total spent, a slow reader's answer is read from the
 * replica no further (its slot stays held, as beyond its own bound), while a client that reads keeps getting
 * its answers. Before, only the per-connection bound existed: each of three slow readers had its 6 MiB
 * answer read whole ({@link SlowReaderTest}), 18 MiB held in all.
 */
class AnswerBudgetTest {

    static final int ANSWER = 6 * 1024 * 1024;
    static final int LIMIT = 4 * 1024 * 1024;

    @Test
    void slowReadersTogetherHoldNoMoreThanTheTotal() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "server:\n  max_buffered_answer_bytes: " + LIMIT + "\n")) {
            h.replica(0).reply = "x".repeat(ANSWER);
            String body = chat("a long answer please", false);
            List<Socket> slow = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    Socket s = new Socket();
                    slow.add(s);
                    s.setReceiveBufferSize(4096);
                    s.connect(new InetSocketAddress("127.0.0.1", h.proxy.port()));
                    s.setSoTimeout(20_000);
                    s.getOutputStream()
                            .write(
                                    ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                                    + "Content-Length: " + body.length() + "\r\n\r\n" + body)
                                            .getBytes(StandardCharsets.ISO_8859_1));
                    assertTrue(s.getInputStream().read(new byte[16]) > 0, "the answer started");
                }
                ProxyHarness.await(
                        "the three answers reached the proxy",
                        () -> h.replica(0).count() == 3);
                // wait until the relays have stopped moving: the total held no longer grows
                long[] last = {-1};
                ProxyHarness.await("buffering settled", () -> {
                    long now = h.proxy.answerBudget().held();
                    boolean settled = now == last[0] && now > 0;
                    last[0] = now;
                    java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L); // sampled 5 times a second
                    return settled;
                });
                long held = h.proxy.answerBudget().held();
                System.out.printf(
                        "answer budget: %d bytes held by 3 slow readers of %d-byte answers (limit %d)%n",
                        held, ANSWER, LIMIT);
                assertTrue(held <= LIMIT + 3 * 1024 * 1024L, "held " + held + ", about the limit and a read each");
                assertTrue(
                        h.member(0).inFlight() >= 1,
                        "with the total spent, a slow reader's answer is not read whole: its slot is held");
                // a client that reads still gets its answer
                HttpResponse<String> fast = h.post("/v1/chat/completions", body);
                assertEquals(200, fast.statusCode());
                assertTrue(fast.body().chars().filter(c -> c == 'x').count() >= ANSWER, "the whole answer");
                // the slow readers read again: everything arrives, everything is given back
                for (Socket s : slow) {
                    InputStream in = s.getInputStream();
                    long got = 0;
                    byte[] buf = new byte[64 * 1024];
                    for (int n; got < ANSWER && (n = in.read(buf)) > 0; ) {
                        for (int i = 0; i < n; i++) {
                            if (buf[i] == 'x') {
                                got++;
                            }
                        }
                    }
                    assertTrue(got >= ANSWER, "the whole answer: " + got);
                }
            } finally {
                for (Socket s : slow) {
                    s.close();
                }
            }
            ProxyHarness.await(
                    "the budget comes back", () -> h.proxy.answerBudget().held() == 0);
        }
    }
}
