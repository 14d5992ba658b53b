package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A real {@code redis-server} for the tests: started on a given port in a temporary directory without
 * persistence, stopped (or killed) by the test. A missing binary fails the test with a clear message:
 * these tests are the proof that sync works against Redis, and must not pass by not running. Public (in
 * the test jar) for the proxy's cluster tests.
 */
public final class RedisServerProcess implements AutoCloseable {

    private final int port;
    private final Path dir;
    private Process process;

    private RedisServerProcess(int port, Path dir) {
        this.port = port;
        this.dir = dir;
    }

    /** A port free right now on loopback. */
    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The redis-server binary, or a failed test saying how to install it. */
    public static Path binary() {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String d : (path + ":/usr/bin:/usr/local/bin:/usr/sbin").split(":")) {
            if (d.isEmpty()) {
                continue;
            }
            Path p = Path.of(d, "redis-server");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return fail("redis-server not found on PATH: the cart-redis tests need a real Redis. Install the Debian"
                + " package (apt-get install -y redis-server; .ci/run does it when it is missing)");
    }

    /** Starts a server on {@code port} (in a new temporary directory) and waits until it answers PING. */
    public static RedisServerProcess start(int port) throws IOException {
        RedisServerProcess r = new RedisServerProcess(port, Files.createTempDirectory("cart-redis-test"));
        r.restart();
        return r;
    }

    /** Starts the server again on the same port (after {@link #kill}): an empty Redis, as after a crash. */
    public void restart() throws IOException {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("already running");
        }
        process = new ProcessBuilder(List.of(
                        binary().toString(),
                        "--port",
                        String.valueOf(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        dir.toString()))
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile())
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!ping()) {
            if (!process.isAlive()) {
                fail("redis-server exited at start: " + Files.readString(dir.resolve("redis.log")));
            }
            if (System.nanoTime() > deadline) {
                fail("redis-server did not answer PING within 20 s on port " + port);
            }
            LockSupport.parkNanos(5_000_000); // poll interval of a bounded wait for the server
        }
    }

    private boolean ping() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            s.setSoTimeout(2_000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[7];
            int n = in.readNBytes(buf, 0, 7);
            return n == 7 && new String(buf, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }

    /** Kills the server at once (SIGKILL): no goodbye to its clients. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(20, TimeUnit.SECONDS);
    }

    /**
     * Freezes the server (SIGSTOP), as {@code DEBUG SLEEP} does but for as long as the test wants: its
     * clients' connections stay open and their commands get no answer until {@link #resume}.
     */
    public void pause() throws IOException, InterruptedException {
        signal("-STOP");
    }

    /** Lets a {@link #pause paused} server go on (SIGCONT); it then answers what it was sent meanwhile. */
    public void resume() throws IOException, InterruptedException {
        signal("-CONT");
    }

    private void signal(String which) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", which, String.valueOf(process.pid()))
                .redirectErrorStream(true)
                .start();
        if (!kill.waitFor(20, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            fail("kill " + which + " " + process.pid() + " failed: "
                    + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    public int port() {
        return port;
    }

    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    @Override
    public void close() throws InterruptedException {
        if (process != null) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                kill();
            }
        }
        // the temporary directory holds the server's log alone (no RDB or AOF is written): removed with it
        try {
            Files.deleteIfExists(dir.resolve("redis.log"));
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // a directory left behind in the temporary files is no test's failure
        }
    }
}
