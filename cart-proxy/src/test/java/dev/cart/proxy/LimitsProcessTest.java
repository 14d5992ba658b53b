package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The connection limits of {@code server.*} on the Netty front. Each test runs the real command ({@link Main}) in
 * a child JVM on loopback, as an operator would.
 */
class LimitsProcessTest {

    @TempDir
    Path dir;

    private static final Pattern LISTENING = Pattern.compile("CART listening on [^:]+:(\\d+)");

    /** A proxy in a child JVM with the lines it printed so far; closing it destroys the process. */
    private record Child(Process process, int port, List<String> output, Path config) implements AutoCloseable {

        /** Waits, bounded, until the child has printed a line containing {@code text}. */
        boolean printed(String text) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                if (output.stream().anyMatch(line -> line.contains(text))) {
                    return true;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000); // bounded poll interval
            }
            return false;
        }

        @Override
        public void close() {
            process.destroy();
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private Child start(String serverYaml, ScriptedReplica replica) throws Exception {
        return start(serverYaml, "", replica);
    }

    private Child start(String serverYaml, String moreYaml, ScriptedReplica replica) throws Exception {
        Path cfg = dir.resolve("cfg-" + System.nanoTime() + ".yaml");
        Files.writeString(
                cfg,
                "server:\n  host: 127.0.0.1\n  port: 0\n" + serverYaml + "workers:\n  - url: " + replica.url()
                        + "\nhealth:\n  interval_secs: 3600\n" + moreYaml);
        String java = ProcessHandle.current().info().command().orElse("java");
        // env --default-signal=HUP: a build started under nohup ignores SIGHUP, and an ignored signal is
        // inherited by every child, where the JVM keeps it ignored and a reload could never be asked for
        List<String> cmd = new ArrayList<>(List.of(
                "env",
                "--default-signal=HUP",
                java,
                "-Xmx128m",
                "-cp",
                System.getProperty("java.class.path"),
                Main.class.getName(),
                "-c",
                cfg.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<Integer> port = new CompletableFuture<>();
        List<String> output = new java.util.concurrent.CopyOnWriteArrayList<>();
        Thread reader = new Thread(
                () -> {
                    try {
                        for (String line; (line = out.readLine()) != null; ) {
                            output.add(line);
                            Matcher m = LISTENING.matcher(line);
                            if (m.find()) {
                                port.complete(Integer.parseInt(m.group(1)));
                            }
                        }
                    } catch (IOException ignored) {
                        // the child ended
                    }
                    port.completeExceptionally(new IllegalStateException("the child ended before listening"));
                },
                "child-output");
        reader.setDaemon(true);
        reader.start();
        try {
            Child child = new Child(p, port.get(60, TimeUnit.SECONDS), output, cfg);
            awaitHealthy(child.port());
            return child;
        } catch (Exception e) {
            p.destroyForcibly();
            throw e;
        }
    }

    /**
     * Waits, bounded, until {@code /health} answers 200: its first probe of the replica has completed (before,
     * it answers 503 {@code starting}). Asks on a connection of its own that it closes, so the limits a test
     * then fills are all the test's.
     */
    private static void awaitHealthy(int port) {
        ProxyHarness.await("the first probe", () -> {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(5_000);
                s.getOutputStream()
                        .write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                                .getBytes(StandardCharsets.ISO_8859_1));
                return new String(s.getInputStream().readNBytes(12), StandardCharsets.ISO_8859_1)
                        .equals("HTTP/1.1 200");
            } catch (IOException e) {
                return false;
            }
        });
    }

    /** Waits, bounded, until the server closes {@code s}; sends {@code trickle} one byte per poll meanwhile. */
    private static boolean closedByServer(Socket s, byte[] trickle) throws IOException {
        s.setSoTimeout(100); // the poll interval of a bounded wait for the server's close
        OutputStream out = s.getOutputStream();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int i = 0;
        while (System.nanoTime() < deadline) {
            if (trickle != null) {
                try {
                    out.write(trickle[i++ % trickle.length]);
                    out.flush();
                } catch (IOException closed) {
                    return true;
                }
            }
            try {
                if (s.getInputStream().read() < 0) {
                    return true;
                }
            } catch (SocketTimeoutException stillOpen) {
                continue;
            } catch (IOException reset) {
                return true;
            }
        }
        return false;
    }

    private static int health(int port) throws Exception {
        HttpClient c =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        return c.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                                .build(),
                        HttpResponse.BodyHandlers.discarding())
                .statusCode();
    }

    @Test
    void clientsTricklingBytesOrStayingSilentCannotHoldAConnection() throws Exception {
        try (ScriptedReplica r = ScriptedReplica.start("r");
                Child child = start("  request_read_timeout_secs: 1\n  idle_timeout_secs: 1\n", r)) {
            try (Socket head = new Socket("127.0.0.1", child.port())) {
                head.getOutputStream()
                        .write("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                .getBytes(StandardCharsets.ISO_8859_1));
                assertTrue(
                        closedByServer(head, "X-Slow: a\r\n".getBytes(StandardCharsets.ISO_8859_1)),
                        "a head trickled byte by byte is cut off by request_read_timeout_secs");
            }
            try (Socket body = new Socket("127.0.0.1", child.port())) {
                body.getOutputStream()
                        .write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + "Content-Length: 100000\r\n\r\n{")
                                .getBytes(StandardCharsets.ISO_8859_1));
                assertTrue(
                        closedByServer(body, "\"a\":1,".getBytes(StandardCharsets.ISO_8859_1)),
                        "a body trickled byte by byte is cut off too");
            }
            try (Socket silent = new Socket("127.0.0.1", child.port())) {
                assertTrue(closedByServer(silent, null), "a connection that sends nothing is closed");
            }
            assertEquals(0, r.count(), "nothing reached the replica");
            assertEquals(200, health(child.port()), "the proxy still serves");
        }
    }

    /**
     * The idle and read deadlines are checked by timers armed lazily (one armed before a request is not cancelled
     * by it): a kept-alive connection that sends a request every half second stays open across several checks
     * of a 2-second idle time, and is closed once it stays silent. The loop runs until both five requests were
     * answered and five seconds have passed, however long a loaded machine takes to answer them.
     */
    @Test
    void aBusyKeptAliveConnectionOutlivesEarlierIdleChecks() throws Exception {
        try (ScriptedReplica r = ScriptedReplica.start("r");
                Child child = start("  request_read_timeout_secs: 2\n  idle_timeout_secs: 2\n", r)) {
            try (Socket s = new Socket("127.0.0.1", child.port())) {
                s.setSoTimeout(20_000);
                OutputStream out = s.getOutputStream();
                java.io.InputStream in = s.getInputStream();
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(5_000);
                int answered = 0;
                while (answered < 5 || System.nanoTime() < end) {
                    out.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    String answer = readAnswer(in);
                    assertTrue(answer.startsWith("HTTP/1.1 200"), "answered on the same connection: " + answer);
                    answered++;
                    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
                }
                assertTrue(closedByServer(s, null), "then silent, the connection is closed");
            }
        }
    }

    /** Reads one answer with a Content-Length body from {@code in}: its head and body, as text. */
    private static String readAnswer(java.io.InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                return head.toString();
            }
            head.append((char) b);
        }
        int length = 0;
        for (String line : head.toString().split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        return head + new String(in.readNBytes(length), StandardCharsets.ISO_8859_1);
    }

    private static double inProgress(int port) throws Exception {
        HttpClient c =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        String text = c.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        return PromText.parse(text).value("cart_requests_in_progress");
    }

    @Test
    void aClientThatStopsReadingIsCutOffAfterTheRequestTimeout() throws Exception {
        try (ScriptedReplica r = ScriptedReplica.start("r");
                Child child = start("", "proxy:\n  request_timeout_secs: 3\n", r)) {
            r.streamChunks = 2_000_000; // far more than the socket buffers hold
            String body = "{\"model\":\"fake\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}";
            try (Socket s = new Socket("127.0.0.1", child.port())) {
                s.getOutputStream()
                        .write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length()
                                        + "\r\n\r\n" + body)
                                .getBytes(StandardCharsets.ISO_8859_1));
                s.setSoTimeout(20_000);
                assertTrue(s.getInputStream().read(new byte[64]) > 0, "the stream started");
                // the client reads nothing more; the handler blocked writing to it must still be freed.
                // (No check that it is in progress now: under load the 1 s deadline may already have
                // passed. The decision log below says why it ended.)
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (inProgress(child.port()) != 0) {
                    if (System.nanoTime() > deadline) {
                        fail("the request is still being handled long after request_timeout_secs");
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(20_000_000); // bounded poll interval
                }
                assertTrue(
                        child.printed("result=timeout_mid_body"),
                        "the stream was cut by the deadline, not finished: " + child.output());
            }
            assertEquals(200, health(child.port()));
        }
    }

    @Test
    void connectionsBeyondMaxConnectionsAreClosedAtOnce() throws Exception {
        try (ScriptedReplica r = ScriptedReplica.start("r");
                Child child = start(
                        "  max_connections: 3\n  idle_timeout_secs: 600\n" + "  request_read_timeout_secs: 600\n", r)) {
            List<Socket> held = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    Socket s = new Socket("127.0.0.1", child.port());
                    s.getOutputStream()
                            .write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    s.setSoTimeout(20_000);
                    BufferedReader in =
                            new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
                    assertTrue(in.readLine().startsWith("HTTP/1.1 200"), "kept-alive connection " + i);
                    held.add(s);
                }
                try (Socket extra = new Socket("127.0.0.1", child.port())) {
                    assertTrue(closedByServer(extra, null), "the fourth connection is closed");
                }
            } finally {
                for (Socket s : held) {
                    s.close();
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (true) { // the held connections are gone: new ones are served again
                try {
                    if (health(child.port()) == 200) {
                        break;
                    }
                } catch (IOException closedWhileTheSlotsFree) {
                    // the server has not noticed the closes yet
                }
                if (System.nanoTime() > deadline) {
                    fail("the proxy did not serve again after the connections closed");
                }
            }
        }
    }

    /** An operator's reload: the file gains a worker, SIGHUP goes to the process, the new list is applied. */
    @Test
    void sighupReloadsTheWorkerList() throws Exception {
        try (ScriptedReplica a = ScriptedReplica.start("a");
                ScriptedReplica b = ScriptedReplica.start("b");
                Child child = start("", a)) {
            String yaml = Files.readString(child.config());
            String one = "workers:\n  - url: " + a.url() + "\n";
            assertTrue(yaml.contains(one), yaml);
            Files.writeString(child.config(), yaml.replace(one, one + "  - url: " + b.url() + "\n"));
            Process kill = new ProcessBuilder(
                            "kill", "-HUP", Long.toString(child.process().pid()))
                    .redirectErrorStream(true)
                    .start();
            assertEquals(0, kill.waitFor(), "kill -HUP");
            assertTrue(child.printed("applied: workers 1 -> 2"), "the reload was applied: " + child.output());
        }
    }
}
