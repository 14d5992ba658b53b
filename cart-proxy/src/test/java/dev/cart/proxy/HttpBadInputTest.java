package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.config.ConfigException;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Bad input gets the right 4xx (JSON from the proxy's handler; the JDK server's own short answer for the
 * framing errors it refuses before the handler), never a 500 and never a hang; no bad request reaches a
 * replica; credentials and prompts never reach a log or an error.
 */
class HttpBadInputTest {

    private static final Pattern STATUS = Pattern.compile("^HTTP/1\\.1 (\\d{3}) ");

    static int status(String rawResponse) {
        Matcher m = STATUS.matcher(rawResponse);
        assertTrue(m.find(), "not an HTTP response: " + rawResponse);
        return Integer.parseInt(m.group(1));
    }

    /** The JSON error body of a raw response: {"error": {message, type, code, param}}. */
    static JsonNode jsonError(String rawResponse) throws Exception {
        String body = rawResponse.substring(rawResponse.indexOf("\r\n\r\n") + 4);
        JsonNode err = Responses.JSON.readTree(body).get("error");
        assertTrue(
                err != null
                        && err.get("message").isTextual()
                        && err.get("type").isTextual()
                        && err.has("code")
                        && err.has("param"),
                rawResponse);
        return err;
    }

    private static void assertJsonError(HttpResponse<String> r, int status, String code) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
        JsonNode err = Responses.JSON.readTree(r.body()).get("error");
        assertEquals(code, err.get("code").asText(), r.body());
    }

    @Test
    void malformedJsonAndWrongTypesOnEachRoutedEndpoint() throws Exception {
        record Case(String path, String body) {}
        List<Case> cases = List.of(
                new Case(
                        "/v1/chat/completions",
                        "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}"),
                new Case("/v1/chat/completions", "{\"model\":\"fake\",\"messages\":\"hi\"}"),
                new Case("/v1/chat/completions", "{\"model\":\"fake\",\"messages\":[1,2]}"),
                new Case("/v1/chat/completions", "{\"model\":7,\"messages\":[]}"),
                new Case("/v1/chat/completions", "{\"model\":\"fake\",\"stream\":\"yes\",\"messages\":[]}"),
                new Case(
                        "/v1/chat/completions",
                        "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":5}]}"),
                new Case("/v1/chat/completions", "[]"),
                new Case("/v1/chat/completions", "null"),
                new Case("/v1/chat/completions", "\"just a string\""),
                new Case("/v1/chat/completions", "{}{}"),
                new Case("/v1/chat/completions", "{\"a\":" + "[".repeat(200) + "]".repeat(200) + "}"),
                new Case("/v1/completions", "{\"model\":\"fake\",\"prompt\":{\"a\":1}}"),
                new Case("/v1/completions", "{\"model\":\"fake\",\"prompt\":[{}]}"),
                new Case("/v1/completions", "{\"model\":\"fake\",\"prompt\":"),
                new Case("/v1/completions", "{\"model\":\"fake\",\"prompt\":\"x\",\"stream\":1}"),
                new Case("/v1/messages", "{\"model\":\"fake\",\"messages\":[\"x\"]}"),
                new Case("/v1/messages", "{\"model\":\"fake\",\"system\":5,\"messages\":[]}"),
                new Case("/v1/messages", "{\"model\":\"fake\",\"messages\":{}}"),
                new Case(
                        "/v1/messages",
                        "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":5}]}]}"),
                new Case("/v1/messages", "{,}"));
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            for (Case c : cases) {
                HttpResponse<String> r = h.post(c.path(), c.body());
                assertEquals(400, r.statusCode(), c + " -> " + r.body());
                JsonNode err = Responses.JSON.readTree(r.body()).get("error");
                assertEquals("invalid_request_error", err.get("type").asText(), r.body());
                assertTrue(err.get("code").isTextual(), r.body());
            }
            assertEquals(0, h.replica(0).count(), "no bad body reaches a replica");
        }
    }

    @Test
    void invalidUtf8IsA400() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            byte[] head = "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":\""
                    .getBytes(StandardCharsets.UTF_8);
            byte[][] bad = {
                {(byte) 0xC3, 0x28},
                {(byte) 0xC0, (byte) 0xAF},
                {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
                {(byte) 0xFF},
                {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}
            };
            for (byte[] b : bad) {
                ByteArrayOutputStream body = new ByteArrayOutputStream();
                body.write(head);
                body.write(b);
                body.write("\"}]}".getBytes(StandardCharsets.UTF_8));
                HttpResponse<String> r = h.http.send(
                        HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                                .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(400, r.statusCode(), r.body());
                assertEquals(
                        "invalid_request_error",
                        Responses.JSON
                                .readTree(r.body())
                                .get("error")
                                .get("type")
                                .asText());
            }
            assertEquals(0, h.replica(0).count());
        }
    }

    @Test
    void contentLengthThatLies() throws Exception {
        String body = chat("hello there", false);
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            // short: the body is cut at the declared length, which is not valid JSON
            String shortCl = h.rawExchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    + "Content-Length: " + (body.length() - 5) + "\r\n\r\n" + body);
            assertEquals(400, status(shortCl), shortCl);
            assertEquals("invalid_json", jsonError(shortCl).get("code").asText());
            // long: the client stops sending before the declared length
            String longCl = h.rawExchange(
                    ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + "Content-Length: " + (body.length() + 100)
                                    + "\r\n\r\n" + body)
                            .getBytes(StandardCharsets.ISO_8859_1),
                    true);
            assertEquals(400, status(longCl), longCl);
            assertEquals("invalid_body", jsonError(longCl).get("code").asText());
            // negative, not a number, two of them, with Transfer-Encoding: refused by the JDK server (400); a sign
            // (digits only, RFC 9110: a front proxy that reads "+75" differently could be desynchronised)
            for (String headers : List.of(
                    "Content-Length: -5\r\n",
                    "Content-Length: 12x\r\n",
                    "Content-Length: +" + body.length() + "\r\n",
                    "Content-Length: " + body.length() + "\r\nContent-Length: " + body.length() + "\r\n",
                    "Content-Length: " + body.length() + "\r\nTransfer-Encoding: chunked\r\n")) {
                String r = h.rawExchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n" + body);
                assertEquals(400, status(r), headers + " -> " + r);
            }
            assertEquals(0, h.replica(0).count());
        }
    }

    @Test
    void brokenChunkedEncoding() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            String badSize = h.rawExchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
            assertEquals(400, status(badSize), badSize);
            assertEquals("invalid_body", jsonError(badSize).get("code").asText());
            String truncated = h.rawExchange(
                    ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                    + "Transfer-Encoding: chunked\r\n\r\n40\r\n{\"model\":")
                            .getBytes(StandardCharsets.ISO_8859_1),
                    true);
            assertEquals(400, status(truncated), truncated);
            String noCrlf = h.rawExchange(
                    ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                    + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n")
                            .getBytes(StandardCharsets.ISO_8859_1),
                    true);
            assertEquals(400, status(noCrlf), noCrlf);
            String unsupported = h.rawExchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n");
            int s = status(unsupported);
            assertTrue(s == 400 || s == 501, "an unsupported transfer coding is refused by the JDK: " + unsupported);
            assertEquals(0, h.replica(0).count());
        }
    }

    @Test
    void targetsAndHostsNeverMakeTheProxyCallElsewhere() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "");
                ScriptedReplica elsewhere = ScriptedReplica.start("elsewhere")) {
            String other = "127.0.0.1:" + elsewhere.port();
            List<String> requests = List.of(
                    "GET http://" + other + "/v1/models?x=1 HTTP/1.1\r\nHost: " + other
                            + "\r\nConnection: close\r\n\r\n",
                    "GET https://" + other + "/a HTTP/1.1\r\nHost: " + other + "\r\nConnection: close\r\n\r\n",
                    "GET //" + other + "/b HTTP/1.1\r\nHost: " + other + "\r\nConnection: close\r\n\r\n",
                    "GET http://user:pw@" + other + "/c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    "CONNECT " + other + " HTTP/1.1\r\nHost: " + other + "\r\nConnection: close\r\n\r\n",
                    "GET /d HTTP/1.1\r\nHost: " + other + "\r\nX-Forwarded-Host: " + other
                            + "\r\nConnection: close\r\n\r\n",
                    "POST http://" + other + "/v1/chat/completions HTTP/1.1\r\nHost: " + other
                            + "\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
            for (String req : requests) {
                String r = h.rawExchange(req);
                int s = status(r);
                assertTrue(s == 200 || s == 400 || s == 405, req + " -> " + r);
            }
            assertEquals(0, elsewhere.count(), "nothing ever reached a host that is not a configured replica");
            for (ScriptedReplica.Recorded rec : h.replica(0).requests) {
                assertTrue(rec.path().startsWith("/"), rec.path());
            }
        }
    }

    @Test
    void routedPeerHeaderCannotBeForgedOrInjected() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  add_routed_peer_header: true\n")) {
            h.replica(0).extraResponseHeaders.add("x-routed-peer", "forged-by-replica");
            String r = h.rawExchange("GET /echo HTTP/1.1\r\nHost: x\r\nX-Routed-Peer: evil\r\n"
                    + "X-Foo: a\r\n b-folded: injected\r\nConnection: close\r\n\r\n");
            String head = r.substring(0, r.indexOf("\r\n\r\n")).toLowerCase();
            List<String> peers =
                    head.lines().filter(l -> l.startsWith("x-routed-peer:")).toList();
            assertEquals(List.of("x-routed-peer: " + h.replica(0).url().toLowerCase()), peers, head);
            assertFalse(head.contains("b-folded"), head);
        }
        // a worker URL cannot carry a line break into the header: refused by validation
        ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(
                ConfigException.class, () -> ConfigLoader.parse("workers:\n  - url: \"http://a:1\\r\\nX-Evil: 1\"\n"));
        assertTrue(e.getMessage().contains("workers[0].url"), e.getMessage());
    }

    @Test
    void headLimitsAnswer414And431WithJson() throws Exception {
        String yaml = "server:\n  max_request_line_bytes: 1024\n  max_headers: 20\n";
        try (ProxyHarness h = ProxyHarness.start(1, yaml)) {
            String longLine =
                    h.rawExchange("GET /" + "a".repeat(2000) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            assertEquals(414, status(longLine), longLine);
            assertEquals("uri_too_long", jsonError(longLine).get("code").asText());
            String many = h.rawExchange(
                    "GET /x HTTP/1.1\r\nHost: x\r\n" + "X-Same: 1\r\n".repeat(30) + "Connection: close\r\n\r\n");
            assertEquals(431, status(many), many);
            assertEquals(
                    "request_header_fields_too_large",
                    jsonError(many).get("code").asText());
            assertEquals(0, h.replica(0).count());
            assertEquals(200, h.get("/x").statusCode());
        }
    }

    @Test
    void aHeadOverMaxHeaderBytesAnswers431AndOneUnderItPasses() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "server:\n  max_header_bytes: 2048\n")) {
            String under = h.rawExchange(
                    "GET /x HTTP/1.1\r\nHost: x\r\nX-Pad: " + "p".repeat(1500) + "\r\nConnection: close\r\n\r\n");
            assertEquals(200, status(under), "a 1.5 KB header under the 2 KB limit reaches the replica: " + under);
            assertEquals(1, h.replica(0).count());
            String over = h.rawExchange(
                    "GET /x HTTP/1.1\r\nHost: x\r\nX-Pad: " + "p".repeat(3000) + "\r\nConnection: close\r\n\r\n");
            assertEquals(431, status(over), over);
            assertEquals(
                    "request_header_fields_too_large",
                    jsonError(over).get("code").asText());
            assertEquals(1, h.replica(0).count(), "the refused head never reached the replica");
            assertEquals(200, h.get("/x").statusCode(), "the proxy serves the next request");
        }
    }

    @Test
    void concurrencyLimitAnswers503WithRetryAfterAndKeepsHealthUp() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "server:\n  max_concurrent_requests: 1\n")) {
            CountDownLatch gate = new CountDownLatch(1);
            h.replica(0).gate = gate;
            HttpResponse<InputStream> stream = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("long", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, stream.statusCode());
            HttpResponse<String> refused = h.post("/v1/chat/completions", chat("second", false));
            assertJsonError(refused, 503, "overloaded");
            assertEquals("1", refused.headers().firstValue("retry-after").orElse(null));
            h.probe(); // /health is 503 until the first probe
            assertEquals(200, h.get("/health").statusCode(), "the proxy's own endpoints are not limited");
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(1, m.value("cart_requests_rejected_total", "cause", "concurrency"));
            assertEquals(1, m.value("cart_requests_in_progress"));
            gate.countDown();
            try (InputStream in = stream.body()) {
                assertTrue(new String(in.readAllBytes(), StandardCharsets.UTF_8).contains("[DONE]"));
            }
            await("slot released", () -> {
                try {
                    return h.post("/v1/chat/completions", chat("third", false)).statusCode() == 200;
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
        }
    }

    @Test
    void secretsAreForwardedButNeverLoggedOrEchoed() throws Exception {
        String key = "sk-live-0123456789abcdef";
        String anthropicKey = "ak-secret-9876543210";
        String prompt = "my medical history is private";
        try (LogCapture all = new LogCapture(org.slf4j.Logger.ROOT_LOGGER_NAME);
                ProxyHarness h = ProxyHarness.start(2, "proxy:\n  max_retries: 1\n")) {
            HttpRequest.Builder b = HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                    .header("Authorization", "Bearer " + key)
                    .header("x-api-key", anthropicKey);
            HttpResponse<String> ok = h.http.send(
                    b.copy()
                            .POST(HttpRequest.BodyPublishers.ofString(chat(prompt, false)))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, ok.statusCode());
            ScriptedReplica served = h.replica(0).count() == 1 ? h.replica(0) : h.replica(1);
            assertEquals("Bearer " + key, served.last().headers().getFirst("Authorization"));
            assertEquals(anthropicKey, served.last().headers().getFirst("X-api-key"));
            // errors of every kind, with the secrets present
            StringBuilder bodies = new StringBuilder();
            bodies.append(h.http.send(
                            b.copy()
                                    .POST(HttpRequest.BodyPublishers.ofString("{bad " + prompt))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body());
            h.replica(0).forcedStatus = 502;
            h.replica(1).forcedStatus = 502;
            bodies.append(h.http.send(
                            b.copy()
                                    .POST(HttpRequest.BodyPublishers.ofString(chat(prompt, true)))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body());
            bodies.append(h.rawExchange("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key
                    + "\r\nContent-Length: -1\r\n\r\n"));
            await(
                    "decision lines",
                    () -> all.lines().stream()
                                    .filter(l -> l.startsWith("decision "))
                                    .count()
                            >= 3);
            String logs = String.join("\n", all.lines());
            String answers = bodies.toString();
            for (String secret : List.of(key, anthropicKey, prompt, "medical")) {
                assertFalse(logs.contains(secret), "log output contains " + secret + ":\n" + logs);
                assertFalse(answers.contains(secret), "an answer echoes " + secret + ":\n" + answers);
            }
        }
    }
}
