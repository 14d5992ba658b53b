package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A graceful stop ({@link ProxyServer#drain}, what SIGTERM runs): streams in flight finish, new connections
 * are refused, requests on open connections and {@code /health} get 503 with {@code Connection: close}, and
 * a stream that outlasts {@code server.drain_timeout_ms} is cut with an error event and {@code drain_cut}.
 */
class DrainTest {

    @TempDir
    Path dir;

    private static final String CHAT_STREAM = ProxyHarness.chat("tell me a long story", true);

    @Test
    void aStreamInFlightFinishesWhileNewWorkIsTurnedAway() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "");
                LogCapture log = new LogCapture(ProxyServer.class.getName())) {
            h.replica(0).gate = new CountDownLatch(1);
            CompletableFuture<HttpResponse<String>> stream = h.http.sendAsync(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(CHAT_STREAM))
                            .header("Content-Type", "application/json")
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertTrue(h.replica(0).firstChunkSent.await(20, TimeUnit.SECONDS));
            // connections opened (and served) before the drain stay open through it
            try (Socket health = kept(h);
                    Socket chat = kept(h);
                    Socket messages = kept(h)) {
                // the kept connections' answers have been read, but each counts as in progress until its last
                // write completes on the loop: wait for that, so the drain begins with the stream alone
                ProxyHarness.await("only the stream in progress", () -> h.proxy.requestsInProgress() == 1);
                CompletableFuture<ProxyServer.DrainReport> drain =
                        CompletableFuture.supplyAsync(() -> h.proxy.drain(Duration.ofSeconds(60)));
                int port = h.proxy.port();
                ProxyHarness.await("new connections refused", () -> refused(port));
                // the drain counts what is in flight just after it stops accepting: wait for its line, so the
                // requests sent below on the kept connections are not counted as in flight when it began
                ProxyHarness.await(
                        "the drain's first line", () -> log.lines().stream().anyMatch(l -> l.startsWith("draining:")));

                String healthAnswer = exchange(health, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
                assertTrue(healthAnswer.startsWith("HTTP/1.1 503 "), healthAnswer);
                assertTrue(healthAnswer.contains("\"status\":\"draining\""), healthAnswer);
                assertTrue(lower(healthAnswer).contains("connection: close"), healthAnswer);

                String chatAnswer = exchange(chat, post("/v1/chat/completions", ProxyHarness.chat("hi", false)));
                assertTrue(chatAnswer.startsWith("HTTP/1.1 503 "), chatAnswer);
                assertTrue(lower(chatAnswer).contains("connection: close"), chatAnswer);
                assertTrue(
                        chatAnswer.contains("\"error\":{") && chatAnswer.contains("\"code\":\"draining\""), chatAnswer);

                String messagesAnswer = exchange(
                        messages,
                        post(
                                "/v1/messages",
                                "{\"model\":\"fake\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
                assertTrue(messagesAnswer.startsWith("HTTP/1.1 503 "), messagesAnswer);
                assertTrue(
                        messagesAnswer.contains("\"type\":\"error\"") && messagesAnswer.contains("\"api_error\""),
                        messagesAnswer);
                assertEquals(-1, health.getInputStream().read(), "the connection is closed after the 503");
                // the two requests turned away never reached the replica, and the stream was sent to it once
                assertTrue(
                        h.replica(0).requests.stream()
                                .noneMatch(q -> q.path().equals("/v1/messages")
                                        || q.bodyText().contains("\"content\":\"hi\"")),
                        () -> "nothing new reached the replica: " + seen(h.replica(0)));
                assertEquals(
                        1,
                        h.replica(0).requests.stream()
                                .filter(q -> q.bodyText().contains("tell me a long story"))
                                .count(),
                        () -> "the stream was sent once: " + seen(h.replica(0)));
                assertFalse(drain.isDone(), "the drain waits for the stream");

                h.replica(0).gate.countDown();
                HttpResponse<String> done = stream.get(30, TimeUnit.SECONDS);
                assertEquals(200, done.statusCode());
                assertTrue(done.body().contains("finish_reason\":\"stop\""), done.body());
                assertTrue(done.body().trim().endsWith("data: [DONE]"), done.body());

                ProxyServer.DrainReport report = drain.get(30, TimeUnit.SECONDS);
                assertEquals(1, report.inFlight());
                assertEquals(1, report.finished());
                assertEquals(0, report.cut());
                assertTrue(refused(port), "the proxy is stopped");
            }
            List<String> lines = log.lines();
            assertTrue(
                    lines.stream().anyMatch(l -> l.startsWith("draining:") && l.contains("1 request(s) in flight")),
                    lines.toString());
            assertTrue(
                    lines.stream()
                            .anyMatch(l -> l.startsWith("drained in") && l.contains("1 request(s) finished, 0 cut")),
                    lines.toString());
        }
    }

    @Test
    void aStreamThatOutlastsTheDrainTimeoutIsCutWithAnErrorEvent() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "");
                LogCapture decisions = new LogCapture("cart.decision")) {
            h.replica(0).gate = new CountDownLatch(1); // never let go: the stream outlasts the drain
            try (Socket s = h.raw(post("/v1/chat/completions", CHAT_STREAM))) {
                assertTrue(h.replica(0).firstChunkSent.await(20, TimeUnit.SECONDS));
                ProxyServer.DrainReport report = h.proxy.drain(Duration.ofMillis(200));
                assertEquals(1, report.cut());
                assertEquals(0, report.finished());
                String raw = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(raw.startsWith("HTTP/1.1 200 "), raw);
                assertTrue(raw.contains("\"role\":\"assistant\""), "the first event arrived: " + raw);
                assertTrue(
                        raw.contains("data: {\"error\":{\"message\":\"the proxy is shutting down")
                                && raw.contains("\"type\":\"server_error\",\"code\":\"drain_cut\"}}\n\n"),
                        raw);
                assertFalse(raw.contains("[DONE]"), raw);
                assertFalse(raw.endsWith("0\r\n\r\n"), "the chunked body is not ended as if complete: " + raw);
            }
            ProxyHarness.await(
                    "the decision line",
                    () -> decisions.lines().stream().anyMatch(l -> l.contains("result=drain_cut")));
            assertTrue(decisions.lines().stream().noneMatch(l -> l.contains("result=client_closed")));
        }
    }

    @Test
    void sigtermDrainsTheProcessThenItExits() throws Exception {
        try (ScriptedReplica replica = ScriptedReplica.start("r0")) {
            replica.gate = new CountDownLatch(1);
            Path cfg = dir.resolve("drain.yaml");
            Files.writeString(
                    cfg,
                    "server:\n  host: 127.0.0.1\n  port: 0\n  drain_timeout_ms: 60000\nworkers:\n  - url: "
                            + replica.url() + "\nhealth:\n  interval_secs: 3600\n");
            String java = ProcessHandle.current().info().command().orElse("java");
            // env --default-signal=TERM: a signal ignored by the build's process would be ignored here too
            Process p = new ProcessBuilder(List.of(
                            "env",
                            "--default-signal=TERM",
                            java,
                            "-Xmx128m",
                            "-cp",
                            System.getProperty("java.class.path"),
                            Main.class.getName(),
                            "-c",
                            cfg.toString()))
                    .redirectErrorStream(true)
                    .start();
            List<String> output = new CopyOnWriteArrayList<>();
            CompletableFuture<Integer> port = new CompletableFuture<>();
            Pattern listening = Pattern.compile("CART listening on [^:]+:(\\d+)");
            Thread reader = new Thread(() -> {
                try (BufferedReader in =
                        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        output.add(line);
                        Matcher m = listening.matcher(line);
                        if (m.find()) {
                            port.complete(Integer.parseInt(m.group(1)));
                        }
                    }
                } catch (IOException ended) {
                    // the child ended
                }
                port.completeExceptionally(new IllegalStateException("the child ended: " + output));
            });
            reader.setDaemon(true);
            reader.start();
            try {
                int proxyPort = port.get(60, TimeUnit.SECONDS);
                try (Socket s = new Socket("127.0.0.1", proxyPort)) {
                    s.setSoTimeout(30_000);
                    s.getOutputStream()
                            .write(post("/v1/chat/completions", CHAT_STREAM).getBytes(StandardCharsets.UTF_8));
                    assertTrue(replica.firstChunkSent.await(30, TimeUnit.SECONDS));
                    // SIGTERM; through the handle, since Process.destroy also closes the child's output to us
                    assertTrue(p.toHandle().destroy());
                    printed(output, "draining:", p);
                    assertTrue(p.isAlive(), "the process waits for the stream");
                    ProxyHarness.await("new connections refused", () -> refused(proxyPort));
                    replica.gate.countDown();
                    String raw = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    assertTrue(raw.contains("data: [DONE]"), raw);
                    assertTrue(raw.endsWith("0\r\n\r\n"), "the stream ended whole: " + raw);
                }
                assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the process exits after the drain");
                printed(output, "1 request(s) finished, 0 cut", p);
            } finally {
                p.destroyForcibly();
            }
        }
    }

    /** Waits, bounded, until the child printed a line containing {@code text}; fails with its output. */
    private static void printed(List<String> output, String text, Process p) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (output.stream().noneMatch(l -> l.contains(text))) {
            assertTrue(
                    System.nanoTime() < deadline,
                    "no line with '" + text + "' (alive " + p.isAlive() + ") in " + String.join("\n", output));
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000); // bounded poll interval
        }
    }

    /** A connection to the proxy on which one request was answered, so the proxy holds it open. */
    private static Socket kept(ProxyHarness h) throws IOException {
        Socket s = h.raw("");
        String first = exchange(s, "GET /workers HTTP/1.1\r\nHost: x\r\n\r\n");
        assertTrue(first.startsWith("HTTP/1.1 200 "), first);
        return s;
    }

    /** The replica's recorded requests, by method, path, user agent and body length (never the body). */
    private static String seen(ScriptedReplica r) {
        return r.requests.stream()
                .map(q -> q.method() + " " + q.path() + " ua=" + q.headers().getFirst("User-Agent") + " bytes="
                        + q.body().length)
                .toList()
                .toString();
    }

    private static boolean refused(int port) {
        try (Socket s = new Socket("127.0.0.1", port)) {
            return false;
        } catch (ConnectException e) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static String post(String path, String json) {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                + body.length + "\r\n\r\n" + json;
    }

    private static String lower(String s) {
        return s.toLowerCase(Locale.ROOT);
    }

    /** Sends {@code request} on {@code s} and reads one answer framed by Content-Length (head and body). */
    private static String exchange(Socket s, String request) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
        InputStream in = s.getInputStream();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("closed before a whole head: " + head);
            }
            head.write(c);
        }
        String h = head.toString(StandardCharsets.ISO_8859_1);
        Matcher m = Pattern.compile("(?i)content-length: *(\\d+)").matcher(h);
        assertTrue(m.find(), h);
        return h + new String(in.readNBytes(Integer.parseInt(m.group(1))), StandardCharsets.UTF_8);
    }

    @Test
    void drainingTwiceIsHarmless() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            int port = h.proxy.port();
            ProxyServer.DrainReport report = h.proxy.drain(Duration.ZERO);
            assertEquals(0, report.inFlight());
            h.proxy.close();
            assertThrows(ConnectException.class, () -> new Socket("127.0.0.1", port).close());
        }
    }
}
