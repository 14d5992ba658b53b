package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.extract.Tokenizer;
import dev.cart.proxy.config.ConfigLoader;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * On the Netty front, a request's tokenization does not keep its event loop's other connections waiting:
 * with a tokenizer that blocks until the test lets it go, {@code /health} asked on fresh connections (which
 * land on every loop in turn, the blocked one included) still answers, and the blocked request is answered
 * once its tokenization ends. Before, token-mode extraction ran on the loop and the probes on that loop
 * waited for it.
 */
class ExtractionOffLoopTest {

    @Test
    void aSlowTokenizationDoesNotStallHealthOnItsLoop() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Tokenizer blocking = new Tokenizer() {
            @Override
            public int[] encode(String text) {
                if (text.contains("SLOW")) {
                    entered.countDown();
                    try {
                        release.await(30, TimeUnit.SECONDS); // bounded: a test that fails still ends
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return text.chars().toArray();
            }

            @Override
            public String name() {
                return "blocking";
            }
        };
        ProxyHarness h = new ProxyHarness();
        h.replicas.add(ScriptedReplica.start("r0"));
        h.startProxy(
                ConfigLoader.parse(h.yaml("cache:\n  tokenizer: cl100k_base\n")),
                h.options().tokenizer(blocking));
        h.seenSets.add(h.proxy.routing().replicas);
        try (h) {
            h.probe(); // /health is 503 until the first probe
            String body = chat("SLOW to tokenize", false);
            try (Socket slow =
                    h.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            + "Content-Length: " + body.length() + "\r\n\r\n" + body)) {
                assertTrue(entered.await(20, TimeUnit.SECONDS), "the tokenizer was called");
                try {
                    int probes = 2 * Runtime.getRuntime().availableProcessors(); // every loop, twice
                    for (int i = 0; i < probes; i++) {
                        try (Socket s = h.raw("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) {
                            s.setSoTimeout(5_000); // a probe on a blocked loop would wait for the tokenizer
                            String head = new String(s.getInputStream().readNBytes(12), StandardCharsets.ISO_8859_1);
                            assertEquals("HTTP/1.1 200", head, "probe " + i);
                        }
                    }
                } finally {
                    release.countDown();
                }
                InputStream in = slow.getInputStream();
                String answer = new String(in.readNBytes(12), StandardCharsets.ISO_8859_1);
                assertEquals("HTTP/1.1 200", answer, "the slow request is answered once tokenized");
            }
            assertEquals(1, h.replica(0).count());
        }
    }
}
