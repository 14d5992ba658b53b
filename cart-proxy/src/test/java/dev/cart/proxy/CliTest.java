package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CliTest {

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private Path file(String name, String text) throws Exception {
        Path p = dir.resolve(name);
        Files.writeString(p, text);
        return p;
    }

    @Test
    void configCheckAcceptsAGoodConfig() throws Exception {
        Path c = file("config.yaml", "workers:\n  - url: http://node1:8050\n    max_load: 20\n");
        assertEquals(0, run("-c", c.toString(), "--config-check"));
        assertTrue(
                out().startsWith("configuration OK: 1 worker(s), policy cache_aware, listening on 0.0.0.0:6700"),
                out());
        assertEquals("", err());
    }

    @Test
    void configCheckLayersFilesInOrder() throws Exception {
        Path base = file("base.yaml", "server:\n  port: 7000\nworkers:\n  - url: http://a:1\n");
        Path workers = file("workers.yaml", "workers:\n  - url: http://b:1\n  - url: http://c:1\n");
        assertEquals(0, run("-c", base.toString(), "--config", workers.toString(), "--config-check"));
        assertTrue(out().contains("2 worker(s)"), out());
        assertTrue(out().contains(":7000"), out());
    }

    @Test
    void configCheckReportsEveryProblemAndFails() throws Exception {
        Path c = file("bad.yaml", """
                workers:
                  - url: http://a:1
                cache:
                  treshold: 0.3
                  balance_rel_threshold: 0.5
                proxy:
                  max_retries: 99
                """);
        assertEquals(2, run("-c", c.toString(), "--config-check"));
        String e = err();
        assertTrue(e.contains("invalid configuration (3 problems)"), e);
        assertTrue(e.contains(c + ": cache.treshold: unknown key (did you mean 'threshold'?)"), e);
        assertTrue(e.contains(c + ": cache.balance_rel_threshold: must be >= 1, was 0.5"), e);
        assertTrue(e.contains(c + ": proxy.max_retries: must be in [0, 10], was 99"), e);
        assertEquals("", out());
    }

    @Test
    void anEmptyWorkerListRefusesToStart() throws Exception {
        Path c = file("empty-workers.yaml", "workers: []\n");
        assertEquals(2, run("-c", c.toString()));
        assertTrue(
                err().contains("workers: the list is empty; CART refuses to start without at least one worker"), err());
        assertEquals(2, run("-c", c.toString(), "--config-check"));
    }

    @Test
    void versionAndHelp() {
        assertEquals(0, run("--version"));
        assertTrue(out().matches("cache-aware-router \\d+\\.\\d+\\.\\d+.*\\R"), out());
        out.reset();
        assertEquals(0, run("--help"));
        assertTrue(out().contains("--config-check"));
        assertTrue(out().contains("--demo"));
        assertTrue(out().contains("--port N"), out());
        assertTrue(out().contains("--host ADDR"), out());
    }

    @Test
    void badUsageFails() {
        assertEquals(2, run("--frobnicate"));
        assertTrue(err().contains("unknown option '--frobnicate'"), err());
        err.reset();
        assertEquals(2, run("-c"));
        assertTrue(err().contains("-c needs a file name"), err());
        err.reset();
        assertEquals(2, run());
        assertTrue(err().contains("no configuration"), err());
        assertFalse(err().isEmpty());
    }

    @Test
    void portAndHostFlagsOverrideTheConfig() throws Exception {
        Path c = file("config.yaml", "server:\n  port: 7000\nworkers:\n  - url: http://node1:8050\n");
        assertEquals(0, run("-c", c.toString(), "--port", "7100", "--host=127.0.0.1", "--config-check"));
        assertTrue(out().contains("listening on 127.0.0.1:7100"), out());
        out.reset();
        assertEquals(0, run("-c", c.toString(), "--port=0", "--config-check"));
        assertTrue(out().contains("listening on 0.0.0.0:0"), out());
        assertEquals(2, run("-c", c.toString(), "--port", "99999"));
        assertTrue(err().contains("--port must be a port number in [0, 65535], was '99999'"), err());
        err.reset();
        assertEquals(2, run("-c", c.toString(), "--port"));
        assertTrue(err().contains("--port needs a value"), err());
    }

    @Test
    void aTakenPortIsOneLineNamingThePortAndTheFlag() throws Exception {
        Path c = file("config.yaml", "workers:\n  - url: http://127.0.0.1:9\nhealth:\n  interval_secs: 3600\n");
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            assertEquals(1, run("-c", c.toString(), "--host", "127.0.0.1", "--port", Integer.toString(port)));
            String e = err().strip();
            assertEquals(1, e.lines().count(), e);
            assertTrue(e.startsWith("cache-aware-router: cannot listen on 127.0.0.1:" + port + ": "), e);
            assertTrue(e.endsWith("choose another port with --port N (or server.port in the configuration)"), e);
            assertFalse(e.contains("Exception"), e);
        }
    }

    @Test
    void theDemoRefusesWorkersFromTheConfig() throws Exception {
        Path c = file("workers.yaml", "workers:\n  - url: http://node1:8050\n");
        assertEquals(2, run("--demo", "-c", c.toString()));
        assertTrue(
                err().contains("--demo starts its own simulated replicas, but the configuration lists 1 worker(s)"
                        + " (http://node1:8050); drop --demo to use them, or the workers section to run the demo"),
                err());
        err.reset();
        Path tuning = file("tuning.yaml", "cache:\n  threshold: 0.5\n");
        assertEquals(0, run("--demo", "-c", tuning.toString(), "--config-check"));
        assertTrue(out().contains("demo workers"), out());
    }
}
