package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.http.Responses;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A seeded fuzzer through the proxy: valid requests mutated at the JSON level (sent by a real HTTP client)
 * and at the HTTP level (raw bytes on a socket), a fixed number of each. Every answer must be a
 * well-formed HTTP response with a 2xx, 4xx or 503 status (501 is allowed only where the JDK server
 * refuses a transfer coding or version it does not implement); every error the proxy writes itself must
 * be its OpenAI-style JSON error ({@code error.message}, {@code error.type} matching the status class,
 * {@code error.code}); afterwards the proxy is alive and nothing is lost (in-flight 0, tree recount equal,
 * checked by the harness on close). The seed is printed with every failure and can be set with
 * {@code -Dcart.fuzz.seed=N} to replay a run.
 */
class FuzzTest {

    private static final long SEED = Long.getLong("cart.fuzz.seed", 20251129L);
    private static final int JSON_CASES = 150;
    private static final int HTTP_CASES = 250;
    private static final Pattern STATUS_LINE = Pattern.compile("^HTTP/1\\.1 (\\d{3}) [^\\r\\n]*\\r\\n");

    private static final String[] VALID = {
        chat("Summarise the plot of Hamlet in two sentences.", false),
        chat("stream me a haiku", true),
        "{\"model\":\"fake\",\"prompt\":\"Once upon a time\",\"max_tokens\":5}",
        "{\"model\":\"fake\",\"max_tokens\":10,\"system\":\"Be brief\",\"messages\":[{\"role\":\"user\",\"content\":"
                + "[{\"type\":\"text\",\"text\":\"hi\"}]}]}",
    };
    private static final String PUNCTUATION = "{}[]\",:0n\\";
    private static final String[] PATHS = {
        "/v1/chat/completions", "/v1/chat/completions", "/v1/completions", "/v1/messages"
    };

    private static byte[] mutateJson(byte[] in, SplittableRandom r) {
        List<Byte> b = new ArrayList<>();
        for (byte x : in) {
            b.add(x);
        }
        int ops = 1 + r.nextInt(4);
        for (int k = 0; k < ops && !b.isEmpty(); k++) {
            int at = r.nextInt(b.size());
            switch (r.nextInt(9)) {
                case 0 -> b.remove(at);
                case 1 -> b.add(at, (byte) r.nextInt(256));
                case 2 -> b.set(at, (byte) PUNCTUATION.charAt(r.nextInt(PUNCTUATION.length())));
                case 3 -> b.subList(at, b.size()).clear();
                case 4 -> {
                    for (byte x : "\"messages\":7,".getBytes(StandardCharsets.UTF_8)) {
                        b.add(Math.min(1, b.size()), x);
                    }
                }
                case 5 -> {
                    for (byte x : new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}) {
                        b.add(at, x);
                    }
                }
                case 6 -> {
                    for (int i = 0; i < 70; i++) {
                        b.add(at, (byte) '[');
                    }
                }
                case 7 -> {
                    for (byte x : "1e999999".getBytes(StandardCharsets.UTF_8)) {
                        b.add(at, x);
                    }
                }
                default -> {
                    int len = Math.min(b.size() - at, 1 + r.nextInt(20));
                    b.addAll(at, new ArrayList<>(b.subList(at, at + len)));
                }
            }
        }
        byte[] out = new byte[b.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = b.get(i);
        }
        return out;
    }

    /** A valid raw request, then one HTTP-level mutation. Returns the bytes and whether TE was tampered. */
    private static byte[] mutateHttp(SplittableRandom r, int choice) {
        String body = VALID[r.nextInt(VALID.length)];
        String path = PATHS[r.nextInt(PATHS.length)];
        String method = "POST";
        List<String> headers = new ArrayList<>(List.of(
                "Host: 127.0.0.1",
                "Content-Type: application/json",
                "Content-Length: " + body.length(),
                "Connection: close"));
        String version = "HTTP/1.1";
        String bodyPart = body;
        switch (choice) {
            case 0 -> headers.set(2, "Content-Length: " + (body.length() - 1 - r.nextInt(body.length())));
            case 1 -> headers.set(2, "Content-Length: -" + r.nextInt(100));
            case 2 -> headers.add("Content-Length: " + (body.length() + 1));
            case 3 -> headers.add("Transfer-Encoding: chunked");
            case 4 -> {
                headers.set(2, "Transfer-Encoding: chunked");
                bodyPart = Integer.toHexString(body.length() + r.nextInt(3) - 1) + "\r\n" + body + "\r\n0\r\n\r\n";
            }
            case 5 ->
                method = new String[] {"GET", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO", "G\u0001T"}[r.nextInt(7)];
            case 6 ->
                path = path
                        + new String[] {
                                    "?a=%zz", "/../../etc/passwd", "%00", "?x=" + "y".repeat(500), "#frag", "/%2e%2e/"
                                }
                                [r.nextInt(6)];
            case 7 -> headers.add("X-Fuzz: " + "v".repeat(r.nextInt(4000)));
            case 8 -> headers.add(r.nextBoolean() ? "Bad Header: x" : "NoColon");
            case 9 -> version = new String[] {"HTTP/1.0", "HTTP/2.0", "HTTP/1.1x", "FOO/1.1"}[r.nextInt(4)];
            case 10 -> path = "http://127.0.0.1:1" + path;
            case 11 -> {
                for (int i = 0; i < 40; i++) {
                    headers.add("X-Many-" + i + ": " + i);
                }
            }
            default ->
                headers.set(
                        0, "Host: " + new String[] {"", "evil.example:80", "127.0.0.1:1", "[::1]:99999"}[r.nextInt(4)]);
        }
        StringBuilder b = new StringBuilder(method)
                .append(' ')
                .append(path)
                .append(' ')
                .append(version)
                .append("\r\n");
        for (String h : headers) {
            b.append(h).append("\r\n");
        }
        b.append("\r\n").append(bodyPart);
        return b.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /** Reads what the proxy answers until it closes the connection (requests carry Connection: close). */
    private static String readAnswer(Socket s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[8192];
        try {
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no answer within the socket timeout (a hang): " + out, e);
        } catch (IOException reset) {
            // a reset after the answer (the JDK closing a connection with unread request bytes) is fine
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    /**
     * An error the proxy wrote: {@code {"error": {"message", "type", "code", "param"}}} with a non-empty
     * message and code, and {@code invalid_request_error} for a 4xx, {@code server_error} for a 503.
     */
    static void assertErrorShape(int status, String contentType, String body, String context) {
        assertTrue(contentType.startsWith("application/json"), "a JSON error, not " + contentType + ": " + context);
        JsonNode root;
        try {
            root = Responses.JSON.readTree(body);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + body + "\n" + context, e);
        }
        JsonNode err = root.path("error");
        assertTrue(
                err.path("message").isTextual() && !err.path("message").asText().isBlank(), body + "\n" + context);
        assertTrue(err.path("code").isTextual() && !err.path("code").asText().isBlank(), body + "\n" + context);
        assertTrue(err.has("param"), body + "\n" + context);
        assertEquals(Responses.typeFor(status), err.path("type").asText(), body + "\n" + context);
    }

    @Test
    void mutatedRequestsAlwaysGetAWellFormedAnswer() throws Exception {
        SplittableRandom r = new SplittableRandom(SEED);
        String replay = "seed " + SEED + " (replay: -Dcart.fuzz.seed=" + SEED + ")";
        TreeMap<Integer, Integer> byStatus = new TreeMap<>();
        TreeMap<Integer, Integer> jdkAnswers = new TreeMap<>();
        int noAnswer = 0;
        int proxyErrors = 0;
        long t0 = System.nanoTime();
        try (ProxyHarness h = ProxyHarness.start(2, "proxy:\n  max_body_bytes: 65536\n")) {
            for (int i = 0; i < JSON_CASES; i++) {
                int which = r.nextInt(VALID.length);
                byte[] body = mutateJson(VALID[which].getBytes(StandardCharsets.UTF_8), r);
                String path = which == 2 ? "/v1/completions" : which == 3 ? "/v1/messages" : "/v1/chat/completions";
                HttpResponse<String> resp = h.http.send(
                        HttpRequest.newBuilder(h.uri(path))
                                .timeout(Duration.ofSeconds(60))
                                .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                int s = resp.statusCode();
                byStatus.merge(s, 1, Integer::sum);
                String context = replay + ", JSON case " + i + ", " + path + " body "
                        + new String(body, StandardCharsets.ISO_8859_1);
                assertTrue(s / 100 == 2 || s / 100 == 4 || s == 503, "status " + s + ", " + context);
                if (s >= 400) {
                    assertErrorShape(
                            s, resp.headers().firstValue("content-type").orElse(""), resp.body(), context);
                    proxyErrors++;
                }
            }
            long jsonMillis = (System.nanoTime() - t0) / 1_000_000;
            for (int i = 0; i < HTTP_CASES; i++) {
                int choice = r.nextInt(13);
                byte[] req = mutateHttp(r, choice);
                String context = replay + ", HTTP case " + i + " (mutation " + choice + "):\n"
                        + new String(req, StandardCharsets.ISO_8859_1);
                String answer;
                try (Socket s = h.raw(req, false)) {
                    s.setSoTimeout(60_000);
                    answer = readAnswer(s);
                }
                if (answer.isEmpty()) {
                    noAnswer++; // every request gets an answer: a head over the limits gets 431 or 414
                    org.junit.jupiter.api.Assertions.fail("closed without an answer: " + context);
                }
                Matcher m = STATUS_LINE.matcher(answer);
                assertTrue(m.find(), "not a well-formed HTTP response: " + answer + "\n" + context);
                int s = Integer.parseInt(m.group(1));
                byStatus.merge(s, 1, Integer::sum);
                boolean ok = s / 100 == 2 || s / 100 == 4 || s == 503 || (s == 501 && (choice == 9 || choice == 3));
                assertTrue(ok, "status " + s + " ->\n" + answer + "\n" + context);
                int headEnd = answer.indexOf("\r\n\r\n");
                assertTrue(headEnd > 0, answer);
                if (s >= 400) {
                    String head = answer.substring(0, headEnd).toLowerCase(java.util.Locale.ROOT);
                    if (head.contains("\r\ncontent-type: application/json")) {
                        assertErrorShape(s, "application/json", dechunk(head, answer.substring(headEnd + 4)), context);
                        proxyErrors++;
                    } else {
                        // the JDK server's own short answer to a request it refuses before the proxy sees it
                        assertTrue(
                                JDK_REFUSED.contains(choice),
                                "an error that is not the proxy's JSON for a " + "request the JDK does not refuse:\n"
                                        + answer + "\n" + context);
                        jdkAnswers.merge(choice, 1, Integer::sum);
                    }
                }
            }
            h.probe(); // /health is 503 until the first probe
            assertEquals(200, h.get("/health").statusCode(), "the proxy is alive; " + replay);
            System.out.println("fuzz: " + replay + ", " + JSON_CASES + " JSON-level and " + HTTP_CASES
                    + " HTTP-level cases (JSON phase " + jsonMillis + " ms, all " + (System.nanoTime() - t0) / 1_000_000
                    + " ms); statuses " + byStatus + "; proxy JSON errors " + proxyErrors + "; JDK answers by mutation "
                    + jdkAnswers + "; closed without answer " + noAnswer);
        }
    }

    /**
     * Mutations whose request the JDK HTTP server may refuse itself (a short text answer, not the proxy's
     * JSON): broken Content-Length or Transfer-Encoding framing, methods and headers it cannot parse, HTTP
     * versions it does not speak, targets it cannot parse.
     */
    private static final java.util.Set<Integer> JDK_REFUSED = java.util.Set.of(1, 2, 3, 4, 5, 6, 8, 9, 10, 12);

    /** The body of a raw answer: de-chunked when its head says chunked. */
    private static String dechunk(String lowerHead, String body) {
        if (!lowerHead.contains("transfer-encoding: chunked")) {
            return body;
        }
        StringBuilder out = new StringBuilder();
        int at = 0;
        while (at < body.length()) {
            int eol = body.indexOf("\r\n", at);
            int n = Integer.parseInt(body.substring(at, eol).trim(), 16);
            if (n == 0) {
                break;
            }
            out.append(body, eol + 2, eol + 2 + n);
            at = eol + 2 + n + 2;
        }
        return out.toString();
    }
}
