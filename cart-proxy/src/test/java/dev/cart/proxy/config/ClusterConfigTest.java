package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.Main;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code cluster} section: defaults, every key read, every problem reported, the password never echoed. */
class ClusterConfigTest {

    private static final String WORKERS = "workers:\n  - url: http://node1:8000\n";

    private static List<String> problems(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml))
                .problems();
    }

    @Test
    void configCheckNamesTheClusterButNeverThePassword(@TempDir Path dir) throws Exception {
        Path tls = dir.resolve("tls.yaml");
        Files.writeString(
                tls,
                WORKERS + "cluster:\n  redis_url: \"rediss://:hunter2@redis.internal:6380/2\"\n"
                        + "  stream: \"cart:pool-a\"\n  instance_id: node-7\n");
        String ok = check(tls);
        assertTrue(
                ok.startsWith("configuration OK: 1 worker(s), policy cache_aware, listening on 0.0.0.0:6700, cluster"
                        + " stream cart:pool-a at redis.internal:6380 (TLS), instance id node-7"),
                ok);
        assertFalse(ok.contains("hunter2"), ok);

        Path plain = dir.resolve("plain.yaml");
        Files.writeString(plain, WORKERS + "cluster:\n  redis_url: \"redis://user:pw@10.0.0.5\"\n");
        String ok2 = check(plain);
        assertTrue(ok2.contains(", cluster stream cart:routes at 10.0.0.5:6379, instance id host:pid (default)"), ok2);
        assertFalse(ok2.contains("pw@") || ok2.contains("user"), ok2);

        Path off = dir.resolve("off.yaml");
        Files.writeString(off, WORKERS);
        assertFalse(check(off).contains("cluster"));
    }

    private static String check(Path config) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(
                new String[] {"-c", config.toString(), "--config-check"},
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void offByDefault() throws Exception {
        ClusterConfig c = ConfigLoader.parse(WORKERS).cluster();
        assertFalse(c.on());
        assertEquals(ClusterConfig.off(), c);
        assertEquals("cart:routes", c.stream());
        assertNull(c.instanceId());
        assertEquals(100_000, c.maxLen());
        assertEquals(256, c.batchEvents());
        assertEquals(5, c.batchDelayMs());
        assertEquals(65_536, c.bufferEvents());
        assertEquals(100, c.loadIntervalMs());
        assertEquals(1_000, c.loadTtlMs());
        assertEquals(2_000, c.timeoutMs());
    }

    @Test
    void everyKeyIsRead() throws Exception {
        ClusterConfig c = ConfigLoader.parse(WORKERS
                        + "cluster:\n  redis_url: \"rediss://:pw@redis.internal:6380/2\"\n  stream: \"cart:pool-a\"\n"
                        + "  instance_id: gw-3\n  max_len: 5000\n  batch_events: 16\n  batch_delay_ms: 0\n"
                        + "  buffer_events: 1024\n  load_interval_ms: 50\n  load_ttl_ms: 500\n  timeout_ms: 800\n")
                .cluster();
        assertTrue(c.on());
        assertEquals(
                new ClusterConfig(
                        "rediss://:pw@redis.internal:6380/2", "cart:pool-a", "gw-3", 5000, 16, 0, 1024, 50, 500, 800),
                c);
        assertFalse(c.toString().contains("pw"), "toString leaves the URL out: " + c);
    }

    @Test
    void everyProblemIsReportedAndTheUrlIsNeverQuoted() {
        List<String> p = problems(WORKERS
                + "cluster:\n  redis_url: \"http://:hunter2@redis:6379\"\n  stream: \"  \"\n  batch_events: 300\n"
                + "  batch_delay_ms: 9\n  load_interval_ms: 400\n  load_ttl_ms: 500\n  colour: blue\n");
        assertTrue(
                p.stream().anyMatch(s -> s.startsWith("cluster.redis_url: must be a redis:// or rediss:// URI")),
                p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("cluster.stream: must not be empty")), p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("cluster.batch_events: must be in [1, 256]")), p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("cluster.batch_delay_ms: must be in [0, 5]")), p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("cluster.load_ttl_ms: must be at least twice")), p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("cluster.colour")), p.toString());
        assertTrue(p.stream().noneMatch(s -> s.contains("hunter2")), "the password is never echoed: " + p);
    }

    @Test
    void aReloadCannotChangeTheClusterSection() throws Exception {
        ProxyConfig a = ConfigLoader.parse(WORKERS + "cluster:\n  redis_url: \"redis://r:6379\"\n");
        ProxyConfig b = ConfigLoader.parse(WORKERS + "cluster:\n  redis_url: \"redis://r:6379\"\n  stream: other\n");
        assertEquals(List.of("cluster"), b.sectionsDifferingFrom(a));
    }
}
