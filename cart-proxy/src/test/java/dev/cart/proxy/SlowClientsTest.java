package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hundreds of slow clients cannot stop {@code /health} or a chat, on either front (raw sockets, as an attacker
 * would): heads trickled a byte at a time, heads with bare-LF line endings (which the JDK server does not
 * take for the end of a head and waits on), and bodies trickled a byte at a time. Before, on Java 17 the JDK
 * front gave each a thread of a pool of {@code max_threads} + 16 and {@code /health} timed out; and on both
 * fronts a slow body took one of the {@code max_concurrent_requests} slots, so more slow bodies than slots
 * turned every chat into 503 {@code overloaded} (1,100 slow bodies on Java 25 in the issue report; 200 over
 * 100 slots here).
 */
class SlowClientsTest {

    /** Slow clients per kind: heads, bare-LF heads, bodies (600 in all). */
    static final int SLOW_PER_KIND = 200;

    /**
     * The issue's own figure can be replayed: {@code -Dcart.slow.bodies=1100 -Dcart.slow.max_concurrent=1024}
     * (the default of {@code max_concurrent_requests}).
     */
    static final int SLOW_BODIES = Integer.getInteger("cart.slow.bodies", SLOW_PER_KIND);

    static final int MAX_CONCURRENT = Integer.getInteger("cart.slow.max_concurrent", 100);

    @Test
    void hundredsOfSlowClientsDoNotStopHealthOrAChat() throws Exception {
        String yaml = "server:\n  max_threads: 8\n  max_concurrent_requests: " + MAX_CONCURRENT + "\n"
                + "  request_read_timeout_secs: 600\n  idle_timeout_secs: 600\n";
        try (ProxyHarness h = ProxyHarness.start(1, yaml)) {
            h.probe(); // /health is 503 until the first probe
            assertEquals(200, h.get("/health").statusCode());
            long threadsBefore = threads();
            long rssBefore = rssKib();
            List<Socket> slow = new ArrayList<>();
            int closedByProxy = 0;
            try {
                for (int i = 0; i < SLOW_PER_KIND; i++) {
                    slow.add(h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: a"));
                    slow.add(h.raw("POST /v1/chat/completions HTTP/1.1\nHost: x\nContent-Length: 10\n\n"));
                }
                for (int i = 0; i < SLOW_BODIES; i++) {
                    slow.add(h.raw(
                            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a\":"));
                }
                for (int round = 0; round < 3; round++) {
                    for (java.util.Iterator<Socket> it = slow.iterator(); it.hasNext(); ) {
                        Socket s = it.next();
                        try { // one more byte each: they are all still trickling
                            OutputStream out = s.getOutputStream();
                            out.write('1');
                            out.flush();
                        } catch (java.io.IOException refused) {
                            closedByProxy++; // a head the front refused (Netty: bare LF is not HTTP/1.1)
                            s.close();
                            it.remove();
                        }
                    }
                    long t0 = System.nanoTime();
                    HttpResponse<String> health = h.http.send(
                            HttpRequest.newBuilder(h.uri("/health"))
                                    .timeout(Duration.ofSeconds(20))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, health.statusCode(), health.body());
                    long t1 = System.nanoTime();
                    HttpResponse<String> answer = h.http.send(
                            HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                    .timeout(Duration.ofSeconds(20))
                                    .header("Content-Type", "application/json")
                                    .POST(HttpRequest.BodyPublishers.ofString(chat("still here " + round, false)))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, answer.statusCode(), answer.body());
                    System.out.printf(
                            "slow clients, round %d: /health %d ms, chat %d ms%n",
                            round, (t1 - t0) / 1_000_000, (System.nanoTime() - t1) / 1_000_000);
                }
                System.out.printf(
                        "slow clients, Java %d: %d connections held, %d closed by the proxy; threads %d -> %d;"
                                + " RSS %d -> %d MiB%n",
                        Runtime.version().feature(),
                        slow.size(),
                        closedByProxy,
                        threadsBefore,
                        threads(),
                        rssBefore / 1024,
                        rssKib() / 1024);
                assertEquals(3, h.replica(0).count(), "only the complete chats reached the replica");
            } finally {
                for (Socket s : slow) {
                    s.close();
                }
            }
        }
    }

    /** Live threads of this JVM (the test, its fake replica and the proxy). */
    static long threads() {
        return ManagementFactory.getThreadMXBean().getThreadCount();
    }

    /** This process's resident memory in KiB (Linux), or -1. */
    static long rssKib() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux: no figure
        }
        return -1;
    }
}
