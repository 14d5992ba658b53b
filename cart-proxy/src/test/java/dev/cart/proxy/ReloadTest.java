package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.routing.Routing;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReloadTest {

    @TempDir
    Path dir;

    private static String workers(ScriptedReplica... rs) {
        StringBuilder b = new StringBuilder("workers:\n");
        for (ScriptedReplica r : rs) {
            b.append("  - url: ").append(r.url()).append('\n');
        }
        return b.toString();
    }

    private ProxyHarness start(Path base, Path workersFile, ScriptedReplica... all) throws Exception {
        ProxyHarness h = new ProxyHarness();
        h.replicas.addAll(List.of(all));
        List<Path> files = List.of(base, workersFile);
        h.proxy = h.startProxy(ConfigLoader.load(files), h.options().configSource(() -> ConfigLoader.load(files)));
        h.seenSets.add(h.proxy.routing().replicas);
        return h;
    }

    @Test
    void aReloadThatChangesOnlyWorkersIsAppliedAndInFlightRequestsFinish() throws Exception {
        ScriptedReplica a = ScriptedReplica.start("a");
        ScriptedReplica b = ScriptedReplica.start("b");
        Path base = dir.resolve("base.yaml");
        Files.writeString(base, "server:\n  host: 127.0.0.1\n  port: 0\ncache:\n  threshold: 0.4\n");
        Path workersFile = dir.resolve("workers.yaml");
        Files.writeString(workersFile, workers(a));
        try (ProxyHarness h = start(base, workersFile, a, b)) {
            ManagedReplicaSet before = h.proxy.routing().replicas;
            CountDownLatch gate = new CountDownLatch(1);
            a.gate = gate;
            HttpResponse<InputStream> streaming = h.http.send(
                    HttpRequest.newBuilder(h.uri("/v1/chat/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString(chat("long", true)))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, streaming.statusCode());
            assertEquals(1, before.totalInFlight());

            Files.writeString(workersFile, workers(b));
            ProxyServer.ReloadResult result = h.proxy.reload();
            assertTrue(result.accepted() && result.changed(), result.message());
            ManagedReplicaSet after = h.proxy.routing().replicas;
            h.seenSets.add(after);
            assertNotSame(before, after);
            assertEquals(
                    List.of(b.url()),
                    after.replicas().stream().map(ManagedReplicaSet.Member::id).toList());
            assertEquals(0, h.proxy.routing().router.treeStats().size(), "the removed replica's routes are dropped");

            HttpResponse<String> next = h.post("/v1/chat/completions", chat("after reload", false));
            assertTrue(next.body().contains("Hello from b"), next.body());
            assertTrue(h.get("/workers").body().contains(b.url()));
            assertFalse(h.get("/workers").body().contains(a.url()));

            gate.countDown();
            try (InputStream in = streaming.body()) {
                String all = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(all.contains("[DONE]"), "the in-flight stream finishes on the old replica");
            }
            ProxyHarness.await("old lease released", () -> before.totalInFlight() == 0);
        }
    }

    @Test
    void aReloadThatChangesAnythingElseIsRejectedAndTheRunningConfigKept() throws Exception {
        ScriptedReplica a = ScriptedReplica.start("a");
        ScriptedReplica b = ScriptedReplica.start("b");
        Path base = dir.resolve("base.yaml");
        Files.writeString(base, "server:\n  host: 127.0.0.1\n  port: 0\ncache:\n  threshold: 0.4\n");
        Path workersFile = dir.resolve("workers.yaml");
        Files.writeString(workersFile, workers(a));
        try (LogCapture log = new LogCapture(ProxyServer.class.getName());
                ProxyHarness h = start(base, workersFile, a, b)) {
            Routing before = h.proxy.routing();
            Files.writeString(
                    base,
                    "server:\n  host: 127.0.0.1\n  port: 0\ncache:\n  threshold: 0.9\n" + "proxy:\n  max_retries: 0\n");
            Files.writeString(workersFile, workers(b));
            ProxyServer.ReloadResult r = h.proxy.reload();
            assertFalse(r.accepted());
            assertTrue(
                    r.message().contains("only 'workers' may change on reload, but cache, proxy differ"), r.message());
            assertTrue(
                    log.lines().stream()
                            .anyMatch(l ->
                                    l.contains("rejected, keeping the running configuration") && l.contains("cache")),
                    log.lines().toString());
            assertSame(before, h.proxy.routing());
            assertEquals(0.4, h.proxy.config().cache().policySettings().get("threshold"));
            assertTrue(h.post("/v1/chat/completions", chat("still a", false))
                    .body()
                    .contains("Hello from a"));
        }
    }

    @Test
    void aReloadOfAnInvalidFileIsRejected() throws Exception {
        ScriptedReplica a = ScriptedReplica.start("a");
        Path base = dir.resolve("base.yaml");
        Files.writeString(base, "server:\n  host: 127.0.0.1\n  port: 0\n");
        Path workersFile = dir.resolve("workers.yaml");
        Files.writeString(workersFile, workers(a));
        try (ProxyHarness h = start(base, workersFile, a)) {
            Routing before = h.proxy.routing();
            Files.writeString(workersFile, "workers: []\n");
            ProxyServer.ReloadResult r = h.proxy.reload();
            assertFalse(r.accepted());
            assertTrue(r.message().contains("workers: the list is empty"), r.message());
            assertSame(before, h.proxy.routing());
            Files.writeString(workersFile, workers(a));
            ProxyServer.ReloadResult same = h.proxy.reload();
            assertTrue(same.accepted());
            assertFalse(same.changed());
            assertSame(before, h.proxy.routing(), "an unchanged config keeps the tree warm");
        }
    }
}
