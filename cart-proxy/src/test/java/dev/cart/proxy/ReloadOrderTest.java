package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reloads racing file rewrites: the worker list that runs at the end is the file's last content. */
class ReloadOrderTest {

    @TempDir
    Path dir;

    private static final String BASE = "server:\n  host: 127.0.0.1\n  port: 0\n";

    /** Version {@code v} of the workers file: a list of one or two made-up replicas, unique to {@code v}. */
    private static String version(int v) {
        StringBuilder b = new StringBuilder(BASE).append("workers:\n");
        b.append("  - url: http://127.0.0.1:").append(20000 + v).append('\n');
        if (v % 2 == 0) {
            b.append("  - url: http://127.0.0.1:").append(40000 + v).append('\n');
        }
        return b.toString();
    }

    private void rewrite(Path file, String text) throws Exception {
        Path tmp = Files.createTempFile(dir, "w", ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static List<String> urls(ProxyServer p) {
        return p.config().workers().stream().map(ProxyConfig.Worker::url).toList();
    }

    private static List<String> urls(ProxyConfig c) {
        return c.workers().stream().map(ProxyConfig.Worker::url).toList();
    }

    @Test
    void aReloadThatReadTheFileEarlierButAppliesLastIsRefused() throws Exception {
        Path file = dir.resolve("cart.yaml");
        rewrite(file, version(1));
        List<Path> files = List.of(file);
        CountDownLatch firstRead = new CountDownLatch(1);
        CountDownLatch secondDone = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        try (ProxyHarness h = new ProxyHarness()) {
            h.proxy = h.startProxy(ConfigLoader.load(files), h.options().configSource(() -> {
                ProxyConfig c = ConfigLoader.load(files);
                if (calls.incrementAndGet() == 1) {
                    firstRead.countDown();
                    assertTrue(secondDone.await(60, TimeUnit.SECONDS), "the second reload finished");
                }
                return c;
            }));
            rewrite(file, version(2));
            Thread first = new Thread(() -> h.proxy.reload(), "first-reload");
            first.start();
            assertTrue(firstRead.await(60, TimeUnit.SECONDS));
            rewrite(file, version(3));
            ProxyServer.ReloadResult second = h.proxy.reload();
            assertTrue(second.accepted() && second.changed(), second.message());
            secondDone.countDown();
            first.join(60_000);
            assertFalse(first.isAlive());
            assertEquals(urls(ConfigLoader.load(files)), urls(h.proxy), "the file's last content runs");
            assertEquals(
                    urls(h.proxy.config()),
                    h.proxy.routing().workers.stream()
                            .map(ProxyConfig.Worker::url)
                            .toList(),
                    "the routing state is the running config's");
        }
    }

    @Test
    void reloadsRacingRewritesEndOnTheLastContent() throws Exception {
        int rounds = 20;
        int rewrites = 20;
        Path file = dir.resolve("cart.yaml");
        rewrite(file, version(0));
        List<Path> files = List.of(file);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        int stale = 0;
        try (ProxyHarness h = new ProxyHarness()) {
            h.proxy = h.startProxy(ConfigLoader.load(files), h.options().configSource(() -> ConfigLoader.load(files)));
            int v = 0;
            for (int round = 0; round < rounds; round++) {
                List<Future<?>> reloads = new ArrayList<>();
                for (int i = 0; i < rewrites; i++) {
                    rewrite(file, version(++v));
                    reloads.add(pool.submit(() -> h.proxy.reload()));
                }
                for (Future<?> f : reloads) {
                    f.get(60, TimeUnit.SECONDS);
                }
                if (!urls(h.proxy).equals(urls(ConfigLoader.load(files)))) {
                    stale++;
                }
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.println("reload order: " + stale + " of " + rounds + " rounds of " + rewrites
                + " rewrites ended on an older worker list");
        assertEquals(0, stale, stale + " of " + rounds + " rounds ended on an older worker list");
    }
}
