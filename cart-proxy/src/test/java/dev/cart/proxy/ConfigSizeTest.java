package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigException;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A configuration file above {@link ConfigLoader#MAX_FILE_BYTES} is refused at start and on reload. */
class ConfigSizeTest {

    @TempDir
    Path dir;

    private static final String ONE =
            "server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: http://127.0.0.1:20001\n";

    /** Valid YAML that is {@code bytes} long: the worker list, then comment lines. */
    private static String padded(String yaml, int bytes) {
        StringBuilder b = new StringBuilder(yaml);
        String line = "# " + "x".repeat(97) + "\n";
        while (b.length() + line.length() < bytes) {
            b.append(line);
        }
        b.append("#".repeat(bytes - b.length() - 1)).append('\n');
        return b.toString();
    }

    @Test
    void aFileAtTheBoundLoadsAndOneByteMoreIsRefused() throws Exception {
        Path ok = dir.resolve("ok.yaml");
        Files.writeString(ok, padded(ONE, ConfigLoader.MAX_FILE_BYTES));
        assertEquals(ConfigLoader.MAX_FILE_BYTES, Files.size(ok));
        assertEquals(1, ConfigLoader.load(List.of(ok)).workers().size());

        Path big = dir.resolve("big.yaml");
        Files.writeString(big, padded(ONE, ConfigLoader.MAX_FILE_BYTES + 1));
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(big)));
        assertTrue(e.getMessage().contains(big + ": too large"), e.getMessage());
    }

    @Test
    void aReloadOfATooLargeFileIsRejectedAndTheRunningConfigStays() throws Exception {
        Path file = dir.resolve("cart.yaml");
        Files.writeString(file, ONE);
        List<Path> files = List.of(file);
        try (ProxyHarness h = new ProxyHarness()) {
            h.proxy = h.startProxy(ConfigLoader.load(files), h.options().configSource(() -> ConfigLoader.load(files)));
            Files.writeString(file, padded(ONE.replace("20001", "20002"), 20 * 1024 * 1024));
            ProxyServer.ReloadResult r = h.proxy.reload();
            assertFalse(r.accepted(), r.message());
            assertTrue(r.message().contains(file + ": too large"), r.message());
            assertEquals(
                    List.of("http://127.0.0.1:20001"),
                    h.proxy.config().workers().stream()
                            .map(ProxyConfig.Worker::url)
                            .toList());
        }
    }
}
