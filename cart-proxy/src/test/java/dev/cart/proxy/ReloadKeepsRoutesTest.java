package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A reload that removes one worker keeps the routes, slots and circuits of the workers that stay. */
class ReloadKeepsRoutesTest {

    @TempDir
    Path dir;

    private static String workers(ScriptedReplica... rs) {
        StringBuilder b = new StringBuilder("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n");
        for (ScriptedReplica r : rs) {
            b.append("  - url: ").append(r.url()).append('\n');
        }
        return b.toString();
    }

    /** Sends {@code prompt}, returns its decision line's fields. */
    private static Map<String, String> send(ProxyHarness h, LogCapture log, String prompt) throws Exception {
        int before = log.lines().size();
        assertEquals(200, h.post("/v1/chat/completions", chat(prompt, false)).statusCode());
        await("a decision line", () -> log.lines().size() > before);
        return CacheFeedbackTest.fields(log.lines().get(before));
    }

    private static String prompt(int i) {
        return "tenant " + i + " has a long system prompt that it sends with every request. ".repeat(8);
    }

    @Test
    void routesOfSurvivingReplicasStayAndTheRemovedOnesGo() throws Exception {
        ScriptedReplica a = ScriptedReplica.start("a");
        ScriptedReplica b = ScriptedReplica.start("b");
        ScriptedReplica c = ScriptedReplica.start("c");
        Path file = dir.resolve("cart.yaml");
        Files.writeString(file, workers(a, b, c));
        List<Path> files = List.of(file);
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = new ProxyHarness()) {
            h.replicas.addAll(List.of(a, b, c));
            h.proxy = h.startProxy(ConfigLoader.load(files), h.options().configSource(() -> ConfigLoader.load(files)));
            h.seenSets.add(h.proxy.routing().replicas);
            // learn routes until every replica holds some tenant's prefix
            Map<String, List<Integer>> byReplica = new LinkedHashMap<>();
            for (int i = 0; i < 60 && byReplica.size() < 3; i++) {
                Map<String, String> d = send(h, log, prompt(i));
                assertEquals("miss", d.get("reason"));
                byReplica
                        .computeIfAbsent(d.get("replica"), k -> new java.util.ArrayList<>())
                        .add(i);
            }
            assertEquals(3, byReplica.size(), byReplica.toString());
            long entriesBefore = h.proxy.routing().router.treeStats().entries();
            ManagedReplicaSet.Member memberA =
                    h.proxy.routing().replicas.member(a.url()).orElseThrow();

            Files.writeString(file, workers(a, b));
            ProxyServer.ReloadResult r = h.proxy.reload();
            assertTrue(r.accepted() && r.changed(), r.message());
            h.seenSets.add(h.proxy.routing().replicas);

            int kept = 0;
            int survivingRoutes = 0;
            for (ScriptedReplica s : List.of(a, b)) {
                for (int i : byReplica.get(s.url())) {
                    survivingRoutes++;
                    Map<String, String> d = send(h, log, prompt(i));
                    if (d.get("reason").equals("cache_hit") && d.get("replica").equals(s.url())) {
                        kept++;
                    }
                }
            }
            System.out.println("routes kept across a reload: " + kept + " of " + survivingRoutes
                    + " surviving replicas' tenants hit their replica");
            assertEquals(survivingRoutes, kept, "every tenant of a surviving replica still hits it");
            assertSame(
                    memberA,
                    h.proxy.routing().replicas.member(a.url()).orElseThrow(),
                    "a surviving replica keeps its slot count and circuit");
            for (int i : byReplica.get(c.url())) {
                Map<String, String> d = send(h, log, prompt(i));
                assertNotEquals("cache_hit", d.get("reason"), "the removed replica's routes are gone");
                assertNotEquals(c.url(), d.get("replica"));
            }
            assertTrue(h.proxy.routing().router.treeStats().entries()
                    <= entriesBefore + byReplica.get(c.url()).size());
            h.assertNoInFlight();
        }
    }
}
