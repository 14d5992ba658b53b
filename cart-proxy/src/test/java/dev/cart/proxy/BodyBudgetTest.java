package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.http.Responses;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code server.max_buffered_body_bytes} bounds the request bodies buffered at once across connections: a
 * body that would take the total over it is refused with 503 {@code overloaded} in the OpenAI error shape,
 * and the bytes come back when the request holding them ends.
 */
class BodyBudgetTest {

    @Test
    void bodiesBeyondTheTotalAreRefusedAndTheBudgetComesBack() throws Exception {
        String yaml = "server:\n  max_buffered_body_bytes: 100000\nproxy:\n  max_body_bytes: 80000\n";
        try (ProxyHarness h = ProxyHarness.start(1, yaml)) {
            String padded = chat("pad " + "p".repeat(69_000), false);
            byte[] head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            + "Content-Length: " + padded.length() + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1);
            byte[] bytes = padded.getBytes(StandardCharsets.ISO_8859_1);
            try (Socket holder = h.raw(new byte[0], false)) {
                OutputStream out = holder.getOutputStream();
                out.write(head);
                out.write(bytes, 0, bytes.length - 10); // all but the end: the proxy holds ~70 kB of it
                out.flush();
                ProxyHarness.await(
                        "the first body is buffered", () -> h.proxy.bodyBudget().held() > 60_000);
                HttpResponse<String> refused = h.post("/v1/chat/completions", chat("q" + "q".repeat(40_000), false));
                assertEquals(503, refused.statusCode(), refused.body());
                JsonNode err = Responses.JSON.readTree(refused.body()).get("error");
                assertEquals("overloaded", err.get("code").asText());
                assertTrue(err.get("message").asText().contains("server.max_buffered_body_bytes"));
                out.write(bytes, bytes.length - 10, 10);
                out.flush();
                String answer = new String(holder.getInputStream().readNBytes(12), StandardCharsets.ISO_8859_1);
                assertTrue(answer.startsWith("HTTP/1.1 200"), answer);
            }
            ProxyHarness.await(
                    "the budget comes back", () -> h.proxy.bodyBudget().held() == 0);
            HttpResponse<String> ok = h.post("/v1/chat/completions", chat("q" + "q".repeat(40_000), false));
            assertEquals(200, ok.statusCode(), ok.body());
            assertEquals(2, h.replica(0).count(), "the refused body never reached the replica");
        }
    }
}
