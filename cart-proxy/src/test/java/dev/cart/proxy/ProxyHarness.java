package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A proxy over fake replicas, all on loopback, with an injected clock and a sleeper that records the
 * backoff instead of sleeping. Health checks do not run on their own: tests call {@link #probe()}.
 * {@link #close()} checks that no in-flight count leaked on any replica set the proxy ever used.
 */
final class ProxyHarness implements AutoCloseable {

    final List<ScriptedReplica> replicas = new ArrayList<>();
    final ManualClock clock = new ManualClock();
    final List<Duration> sleeps = new CopyOnWriteArrayList<>();
    final List<ManagedReplicaSet> seenSets = new CopyOnWriteArrayList<>();
    final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    ProxyServer proxy;
    /** The front the proxy runs on; the default comes from {@code -Dcart.test.engine}, else the config's default. */
    final ProxyConfig.Server.Engine engine;
    /** False to run the Netty front on NIO even where epoll loads. */
    boolean nativeTransport = true;

    ProxyHarness() {
        this(defaultEngine());
    }

    ProxyHarness(ProxyConfig.Server.Engine engine) {
        this.engine = engine;
    }

    /** The engine of tests that do not name one: {@code -Dcart.test.engine=jdk|netty}, else the config default. */
    static ProxyConfig.Server.Engine defaultEngine() {
        String e = System.getProperty("cart.test.engine");
        return e == null || e.isBlank()
                ? ProxyConfig.Server.defaults().engine()
                : ProxyConfig.Server.Engine.valueOf(e.trim().toUpperCase(java.util.Locale.ROOT));
    }

    /**
     * Starts {@code n} fake replicas and a proxy whose config is {@code yaml} plus a workers list of the
     * fakes (the yaml must not list workers); {@code {i}} in {@code workerExtra} is the fake's index.
     */
    static ProxyHarness start(int n, String yaml, String... perWorkerExtra) throws Exception {
        return start(defaultEngine(), n, yaml, perWorkerExtra);
    }

    /** {@link #start(int, String, String...)} on the given front. */
    static ProxyHarness start(ProxyConfig.Server.Engine engine, int n, String yaml, String... perWorkerExtra)
            throws Exception {
        return start(engine, true, n, yaml, perWorkerExtra);
    }

    /** {@link #start(int, String, String...)} on the given front, the Netty one on NIO unless {@code nativeTransport}. */
    static ProxyHarness start(
            ProxyConfig.Server.Engine engine, boolean nativeTransport, int n, String yaml, String... perWorkerExtra)
            throws Exception {
        ProxyHarness h = new ProxyHarness(engine);
        h.nativeTransport = nativeTransport;
        try {
            for (int i = 0; i < n; i++) {
                h.replicas.add(ScriptedReplica.start("r" + i));
            }
            h.startProxy(ConfigLoader.parse(h.yaml(yaml, perWorkerExtra)), h.options());
            h.seenSets.add(h.proxy.routing().replicas);
        } catch (Exception | Error e) {
            h.closeQuietly();
            throw e;
        }
        return h;
    }

    /** Starts the proxy of this harness on its engine (also for configurations read again on reload). */
    ProxyServer startProxy(ProxyConfig config, ProxyServer.Options options) throws IOException {
        proxy = startOn(engine, config, options);
        return proxy;
    }

    /** Starts a proxy for {@code config} on {@code engine}; a reload source's configurations get it too. */
    static ProxyServer startOn(ProxyConfig.Server.Engine engine, ProxyConfig config, ProxyServer.Options options)
            throws IOException {
        if (options.configSource != null) {
            java.util.concurrent.Callable<ProxyConfig> source = options.configSource;
            options.configSource(() -> onEngine(engine, source.call()));
        }
        return ProxyServer.start(onEngine(engine, config), options);
    }

    static ProxyConfig onEngine(ProxyConfig.Server.Engine engine, ProxyConfig config) {
        return config.withServer(config.server().withEngine(engine));
    }

    ProxyServer.Options options() {
        return new ProxyServer.Options()
                .clock(clock)
                .sleeper(sleeps::add)
                .healthChecks(false)
                .nativeTransport(nativeTransport);
    }

    String yaml(String base, String... perWorkerExtra) {
        String given = base == null ? "" : base;
        String server = "server:\n  host: 127.0.0.1\n  port: 0\n"
                + (given.contains("engine:") ? "" : "  engine: " + engine.label() + "\n");
        StringBuilder b;
        if (given.startsWith("server:\n") || given.contains("\nserver:\n")) {
            b = new StringBuilder(given.replace("server:\n", server));
            b.append('\n');
        } else {
            b = new StringBuilder(given).append('\n').append(server);
        }
        b.append("workers:\n");
        for (int i = 0; i < replicas.size(); i++) {
            b.append("  - url: \"").append(replicas.get(i).url()).append("\"\n");
            if (i < perWorkerExtra.length && !perWorkerExtra[i].isEmpty()) {
                b.append("    ").append(perWorkerExtra[i]).append('\n');
            }
        }
        return b.toString();
    }

    ScriptedReplica replica(int i) {
        return replicas.get(i);
    }

    URI uri(String path) {
        return proxy.baseUri().resolve(path);
    }

    HttpResponse<String> post(String path, String body) throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(uri(path))
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .header("Content-Type", "application/json")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    static String chat(String content, boolean stream) {
        return "{\"model\":\"fake\",\"stream\":" + stream + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + content
                + "\"}]}";
    }

    void probe() throws Exception {
        proxy.routing().health.probeAll().get();
    }

    ManagedReplicaSet.Member member(int i) {
        return proxy.routing().replicas.member(replica(i).url()).orElseThrow();
    }

    /** Sends raw bytes on a new connection and returns the socket (the caller reads and closes it). */
    Socket raw(String request) throws IOException {
        return raw(request.getBytes(StandardCharsets.ISO_8859_1), false);
    }

    /** Sends raw bytes, then half-closes the connection when {@code shutdownOutput}. */
    Socket raw(byte[] request, boolean shutdownOutput) throws IOException {
        Socket s = new Socket("127.0.0.1", proxy.port());
        s.setSoTimeout(20_000);
        OutputStream out = s.getOutputStream();
        out.write(request);
        out.flush();
        if (shutdownOutput) {
            s.shutdownOutput();
        }
        return s;
    }

    /**
     * Sends a raw request and returns the response (head and body, the body de-chunked) as text. The
     * body is framed by Content-Length, chunked encoding, or the end of the connection.
     */
    String rawExchange(String request) throws IOException {
        return rawExchange(request.getBytes(StandardCharsets.ISO_8859_1), false);
    }

    /** {@link #rawExchange(String)} with bytes, optionally half-closing after sending. */
    String rawExchange(byte[] request, boolean shutdownOutput) throws IOException {
        try (Socket s = raw(request, shutdownOutput)) {
            InputStream in = new java.io.BufferedInputStream(s.getInputStream());
            StringBuilder head = new StringBuilder();
            while (!head.toString().endsWith("\r\n\r\n")) {
                int c = in.read();
                if (c < 0) {
                    return head.toString();
                }
                head.append((char) c);
            }
            String lower = head.toString().toLowerCase(java.util.Locale.ROOT);
            java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream();
            java.util.regex.Matcher m =
                    java.util.regex.Pattern.compile("content-length: *(\\d+)").matcher(lower);
            if (m.find()) {
                body.write(in.readNBytes(Integer.parseInt(m.group(1))));
            } else if (lower.contains("transfer-encoding: chunked")) {
                while (true) {
                    String size = readLine(in);
                    int n = Integer.parseInt(size.trim(), 16);
                    if (n == 0) {
                        readLine(in);
                        break;
                    }
                    body.write(in.readNBytes(n));
                    readLine(in);
                }
            } else if (!head.toString().startsWith("HTTP/1.1 204")
                    && !head.toString().startsWith("HTTP/1.1 304")) {
                body.write(in.readAllBytes());
            }
            return head + body.toString(StandardCharsets.ISO_8859_1);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c; (c = in.read()) >= 0; ) {
            if (c == '\n') {
                break;
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    /** Polls {@code condition} until it holds, for at most 20 seconds. */
    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for: " + what);
            }
            LockSupport.parkNanos(2_000_000); // poll interval of a bounded wait on a condition
        }
    }

    /** Nothing lost: every replica set's in-flight count is 0 and the tree's counters match a recount. */
    void assertNoInFlight() {
        for (ManagedReplicaSet set : seenSets) {
            await("in-flight back to 0 on " + set.replicas(), () -> set.totalInFlight() == 0);
            assertEquals(0, set.totalInFlight());
        }
        if (proxy != null) {
            // Answer learning records the next turn's route once the client has the whole answer, after the
            // lease closed: an insert may still be under way when in-flight reaches 0, so wait for the counts
            // to settle (a count that leaks never does).
            await(
                    "tree size accounting matches a recount",
                    () -> dev.cart.core.TreeProbe.countsMatchRecount(proxy.routing().router));
        }
    }

    @Override
    public void close() {
        try {
            if (proxy != null) {
                if (!seenSets.contains(proxy.routing().replicas)) {
                    seenSets.add(proxy.routing().replicas);
                }
                assertNoInFlight();
            }
        } finally {
            closeQuietly();
        }
    }

    private void closeQuietly() {
        for (ScriptedReplica r : replicas) {
            r.close();
        }
        if (proxy != null) {
            proxy.close();
        }
    }
}
