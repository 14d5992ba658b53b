package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ModelsCache;
import dev.cart.proxy.http.HeaderList;
import dev.cart.proxy.http.HeaderView;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.upstream.Backoff;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.UpstreamTargets;
import java.net.URI;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Unit tests of the proxy's small parts. */
class PiecesTest {

    @TempDir
    Path dir;

    @Test
    void hopByHopRequestHeadersAreDropped() {
        HeaderList in = new HeaderList();
        in.add("Connection", "keep-alive, X-Private");
        in.add("X-Private", "1");
        in.add("Keep-Alive", "timeout=5");
        in.add("Proxy-Authorization", "x");
        in.add("TE", "trailers");
        in.add("Transfer-Encoding", "chunked");
        in.add("Upgrade", "h2c");
        in.add("Host", "evil.example");
        in.add("Content-Length", "12");
        in.add("Expect", "100-continue");
        in.add("Authorization", "Bearer k");
        in.add("X-Multi", "a");
        in.add("X-Multi", "b");
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:1/x"));
        HopByHop.copyTo(in, b);
        HttpHeaders out = b.GET().build().headers();
        assertEquals(
                Map.of("Authorization", List.of("Bearer k"), "X-multi", List.of("a", "b"))
                        .keySet()
                        .size(),
                out.map().size(),
                out.map().toString());
        assertEquals(List.of("Bearer k"), out.allValues("authorization"));
        assertEquals(List.of("a", "b"), out.allValues("x-multi"));
    }

    @Test
    void hopByHopResponseHeadersAreDropped() {
        HttpHeaders in = HttpHeaders.of(
                Map.of(
                        "connection", List.of("X-Conn-Only"),
                        "x-conn-only", List.of("1"),
                        "transfer-encoding", List.of("chunked"),
                        "content-length", List.of("5"),
                        "trailer", List.of("X-Sum"),
                        "proxy-authenticate", List.of("Basic"),
                        "content-type", List.of("text/event-stream"),
                        "x-request-id", List.of("abc")),
                (a, b) -> true);
        HeaderList out = new HeaderList();
        HopByHop.forEachResponseHeader(HeaderView.of(in), null, out::add);
        assertEquals(2, out.size(), out.toString());
        assertEquals("text/event-stream", out.first("Content-Type"));
        assertEquals("abc", out.first("X-Request-Id"));
    }

    @Test
    void backoffGrowsExponentiallyWithinTheJitter() {
        Backoff exact = new Backoff(100, 2.0, 0.0);
        SplittableRandom r = new SplittableRandom(1);
        assertEquals(Duration.ofMillis(100), exact.delay(1, r));
        assertEquals(Duration.ofMillis(200), exact.delay(2, r));
        assertEquals(Duration.ofMillis(400), exact.delay(3, r));
        Backoff jittered = new Backoff(100, 2.0, 0.2);
        for (int i = 0; i < 1000; i++) {
            long ms = jittered.delay(2, r).toMillis();
            assertTrue(ms >= 160 && ms <= 240, "200ms +-20%: " + ms);
        }
        assertEquals(Duration.ZERO, new Backoff(0, 2.0, 0.5).delay(4, r));
    }

    @Test
    void upstreamTargetsStayOnTheReplica() throws Exception {
        UpstreamTargets targets = new UpstreamTargets();
        assertEquals(
                URI.create("http://n:8000/v1/x?a=1&b=%20"), targets.target("http://n:8000", "/v1/x", "a=1&b=%20", 1));
        assertEquals(URI.create("http://n:8000/base/v1/x"), targets.target("http://n:8000/base", "/v1/x", null, 1));
        assertEquals(URI.create("http://n:8000/"), targets.target("http://n:8000", "", null, 1));
        assertThrows(Forwarder.BadTarget.class, () -> targets.target("http://n:8000", "*", null, 1));
        assertThrows(Forwarder.BadTarget.class, () -> targets.target("http://n:8000", "@evil/x", null, 1));
        assertThrows(Forwarder.BadTarget.class, () -> targets.target("http://n:8000", "/a b", null, 1));
        // a path starting with // stays a path on the replica
        assertEquals("n", targets.target("http://n:8000", "//evil:1/x", null, 1).getHost());
    }

    /** A target seen before is the same URI, taken from the cache; a refused one is refused every time. */
    @Test
    void upstreamTargetsAreCachedOnlyWhenValid() throws Exception {
        UpstreamTargets targets = new UpstreamTargets();
        java.net.URI first = targets.target("http://cache-test:8000", "/v1/chat/completions", null, 1);
        assertEquals("http://cache-test:8000/v1/chat/completions", first.toString());
        assertSame(first, targets.target("http://cache-test:8000", "/v1/chat/completions", null, 1));
        assertEquals(
                "http://cache-test:8001/v1/chat/completions",
                targets.target("http://cache-test:8001", "/v1/chat/completions", null, 1)
                        .toString());
        assertEquals(
                "http://cache-test:8000/v1/chat/completions?x=1",
                targets.target("http://cache-test:8000", "/v1/chat/completions", "x=1", 1)
                        .toString());
        for (int i = 0; i < 2; i++) {
            assertThrows(Forwarder.BadTarget.class, () -> targets.target("http://cache-test:8000", "/a#frag", null, 1));
        }
        for (int i = 0; i < 200; i++) { // more paths than the cache keeps: each still resolves to its own URI
            assertEquals(
                    "http://cache-test:8000/p" + i,
                    targets.target("http://cache-test:8000", "/p" + i, null, 1).toString());
        }
    }

    /**
     * A pool larger than the cache's floor keeps every replica's target: a routed request to any of 100 replicas
     * gets the URI parsed the first time (the cache is not cleared over and over). A small pool stays bounded.
     */
    @Test
    void upstreamTargetsOfALargePoolAreAllKept() throws Exception {
        UpstreamTargets targets = new UpstreamTargets();
        int pool = 100;
        java.util.List<URI> first = new java.util.ArrayList<>();
        for (int i = 0; i < pool; i++) {
            first.add(targets.target("http://replica-" + i + ":8000", "/v1/chat/completions", null, pool));
        }
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < pool; i++) {
                assertSame(
                        first.get(i),
                        targets.target("http://replica-" + i + ":8000", "/v1/chat/completions", null, pool),
                        "replica " + i);
            }
        }
        assertEquals(pool, targets.basesKept());

        UpstreamTargets small = new UpstreamTargets();
        for (int i = 0; i < 3 * UpstreamTargets.MIN_BASES; i++) {
            assertEquals(
                    "http://old-" + i + ":8000/v1/chat/completions",
                    small.target("http://old-" + i + ":8000", "/v1/chat/completions", null, 2)
                            .toString());
            assertTrue(small.basesKept() <= UpstreamTargets.MIN_BASES, "bounded: " + small.basesKept());
        }
    }

    @Test
    void decisionLineValuesAreSafeAndStable() {
        DecisionLog log = new DecisionLog(true, "/v1/chat/completions", "POST");
        log.request("llama 3\nINJECTED key=value", true);
        log.status(503);
        log.result("no_replica");
        String line = log.line();
        assertTrue(
                line.startsWith(
                        "decision endpoint=/v1/chat/completions method=POST "
                                + "model=llama?3?INJECTED?key?value stream=true reason=- replica=- matched=- key_len=- ratio=- "
                                + "decision_us=- status=503 prompt_tokens=- cached=- upstream_ms=- retries=0 result=no_replica total_ms="),
                line);
        assertEquals(1, line.lines().count());
        assertEquals("-", DecisionLog.safe(null, 10));
        assertEquals("abc", DecisionLog.safe("abcdef", 3));
        assertEquals("ab?", DecisionLog.safe("ab cdef", 3));
        assertEquals("a?b%2F", DecisionLog.safe("a=b%2F", 10));
        assertEquals("llama-3.1:8b@q4+x_y", DecisionLog.safe("llama-3.1:8b@q4+x_y", 100));
    }

    @Test
    void modelsCacheExpiresAfterTenMinutes() {
        ManualClock clock = new ManualClock();
        ModelsCache cache = new ModelsCache(clock);
        String key = ModelsCache.keyOf(new HeaderList());
        assertNull(cache.fresh(key));
        HeaderList json = new HeaderList();
        json.set("Content-Type", "application/json");
        cache.put(key, new byte[] {1}, json);
        clock.advance(Duration.ofMinutes(10).minusMillis(1));
        assertEquals("application/json", cache.fresh(key).contentType());
        clock.advance(Duration.ofMillis(1));
        assertNull(cache.fresh(key));
        cache.put(key, new byte[] {2}, json);
        cache.clear();
        assertNull(cache.fresh(key));
    }

    @Test
    void modelsCacheKeysOnCredentialsWithoutKeepingThemAndStaysBounded() {
        ManualClock clock = new ManualClock();
        ModelsCache cache = new ModelsCache(clock);
        HeaderList a = new HeaderList();
        a.set("Authorization", "Bearer secret-a");
        HeaderList b = new HeaderList();
        b.set("authorization", "Bearer secret-b");
        HeaderList none = new HeaderList();
        String ka = ModelsCache.keyOf(a);
        assertEquals(ka, ModelsCache.keyOf(a));
        assertTrue(!ka.equals(ModelsCache.keyOf(b)) && !ka.equals(ModelsCache.keyOf(none)));
        assertTrue(!ka.contains("secret") && ka.matches("[0-9a-f]{64}"), ka);
        HeaderList gz = new HeaderList();
        gz.set("Vary", "Accept-Encoding, Authorization");
        assertTrue(ModelsCache.cacheable(gz));
        gz.set("Vary", "Origin");
        assertTrue(!ModelsCache.cacheable(gz));
        HeaderList cookie = new HeaderList();
        cookie.set("Set-Cookie", "s=1");
        assertTrue(!ModelsCache.cacheable(cookie));
        for (int i = 0; i < ModelsCache.MAX_ENTRIES + 10; i++) {
            clock.advance(Duration.ofSeconds(1));
            cache.put("k" + i, new byte[] {(byte) i}, none);
        }
        assertEquals(ModelsCache.MAX_ENTRIES, cache.size());
        assertNull(cache.fresh("k0"), "the oldest went first");
        assertEquals(
                ModelsCache.MAX_ENTRIES + 9,
                cache.fresh("k" + (ModelsCache.MAX_ENTRIES + 9)).body()[0]);
    }

    @Test
    void openFileLimitIsReadFromProcLimits() throws Exception {
        Path limits = dir.resolve("limits");
        Files.writeString(
                limits,
                "Limit                     Soft Limit           Hard Limit           Units\n"
                        + "Max open files            1024                 524288               files\n");
        assertEquals(OptionalLong.of(1024), OpenFiles.limit(limits));
        Files.writeString(limits, "Max open files            unlimited            unlimited            files\n");
        assertEquals(OptionalLong.of(Long.MAX_VALUE), OpenFiles.limit(limits));
        assertEquals(OptionalLong.empty(), OpenFiles.limit(dir.resolve("absent")));
    }

    @Test
    void theOpenFileWarningComesOnlyBelowWhatTheLimitsCanUse() throws Exception {
        ProxyConfig.Server defaults = ProxyConfig.Server.defaults();
        assertEquals(10_000 + 1024 + 256, OpenFiles.needed(defaults));
        assertTrue(OpenFiles.warning(20_000, defaults).isEmpty(), "a sane limit is silent");
        assertTrue(OpenFiles.warning(11_280, defaults).isEmpty());
        String w = OpenFiles.warning(1024, defaults).orElseThrow();
        assertTrue(
                w.startsWith("the open-file limit is 1024 (ulimit -n), below the 11280 that server.max_connections "
                        + "(10000) plus server.max_concurrent_requests (1024) upstream connections can use"),
                w);
        ProxyConfig.Server small = ConfigLoader.parse("workers: [{url: \"http://a:1\"}]\n"
                        + "server: {max_connections: 500, max_concurrent_requests: 100}\n")
                .server();
        assertTrue(OpenFiles.warning(1024, small).isEmpty(), "1024 covers 500 + 100 + 256");
    }
}
