package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigTest {

    @TempDir
    Path dir;

    private Path file(String name, String text) throws Exception {
        Path p = dir.resolve(name);
        Files.writeString(p, text);
        return p;
    }

    private static List<String> problems(String yaml) {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml));
        return e.problems();
    }

    private static void assertProblem(List<String> problems, String start) {
        assertTrue(
                problems.stream().anyMatch(p -> p.startsWith(start)),
                "expected a problem starting with '" + start + "' in " + problems);
    }

    @Test
    void defaultsAreTheDocumentedOnes() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://node1:8000/\n");
        assertEquals("0.0.0.0", c.server().host());
        assertEquals(6700, c.server().port());
        assertEquals(512, c.server().maxThreads());
        assertEquals(List.of(new ProxyConfig.Worker("http://node1:8000", 256, 0)), c.workers());
        assertEquals("cache_aware", c.cache().policy());
        assertEquals(Map.of(), c.cache().policySettings(), "the policy applies its own defaults");
        assertEquals(1_000_000, c.cache().maxTreeSize());
        assertEquals(64, c.cache().blockChars());
        assertEquals(60, c.cache().evictionIntervalSecs());
        assertEquals(-1, c.cache().dailyCleanupHourUtc());
        assertEquals(0, c.cache().routeTtlSecs());
        assertEquals(dev.cart.core.LearnMode.ON_ROUTE, c.cache().learn());
        assertTrue(c.cache().feedback());
        assertTrue(c.cache().learnAnswer());
        assertEquals(ProxyConfig.Cache.defaults(), c.cache());
        assertEquals(new ProxyConfig.Health("/health", 10, 5, 3, 2, 60), c.health());
        assertEquals(new ProxyConfig.Circuit(5, 2, 30, 2), c.circuitBreaker());
        ProxyConfig.Proxy p = c.proxy();
        assertEquals(2, p.maxRetries());
        assertEquals(100, p.initialBackoffMs());
        assertEquals(2.0, p.backoffMultiplier());
        assertEquals(0.2, p.jitterFactor());
        assertEquals(List.of(502, 503, 504), p.retryableStatuses());
        assertEquals(2, p.connectTimeoutSecs());
        assertEquals(600, p.requestTimeoutSecs());
        assertEquals(false, p.addRoutedPeerHeader());
        assertNull(p.remoteMediaUrlPolicy());
        assertEquals(33_554_432, p.maxBodyBytes());
        assertEquals(true, p.decisionLog());
        assertEquals(ProxyConfig.Proxy.defaults(), p);
    }

    @Test
    void theDrainTimeoutIsReadAndBounded() throws Exception {
        assertEquals(
                30_000,
                ConfigLoader.parse("workers:\n  - url: http://a:1\n").server().drainTimeoutMs());
        assertEquals(
                0,
                ConfigLoader.parse("workers:\n  - url: http://a:1\nserver:\n  drain_timeout_ms: 0\n")
                        .server()
                        .drainTimeoutMs());
        assertEquals(
                600_000,
                ConfigLoader.parse("workers:\n  - url: http://a:1\nserver:\n  drain_timeout_ms: 600000\n")
                        .server()
                        .drainTimeoutMs());
        assertEquals(
                List.of("server.drain_timeout_ms: must be in [0, 600000], was 600001"),
                problems("workers:\n  - url: http://a:1\nserver:\n  drain_timeout_ms: 600001\n"));
        assertEquals(
                List.of("server.drain_timeout_ms: must be an integer in [0, 600000], was the string '30s'"),
                problems("workers:\n  - url: http://a:1\nserver:\n  drain_timeout_ms: 30s\n"));
        assertEquals(
                List.of("server.drain_timeout_ms: must be in [0, 600000], was -1"),
                problems("workers:\n  - url: http://a:1\nserver:\n  drain_timeout_ms: -1\n"));
        assertEquals(
                List.of("server"),
                ConfigLoader.parse("workers:\n  - url: http://a:1\nserver:\n  drain_timeout_ms: 0\n")
                        .sectionsDifferingFrom(ConfigLoader.parse("workers:\n  - url: http://a:1\n")),
                "like the rest of server, not changeable by a reload");
    }

    @Test
    void theExampleConfigIsValidAndStatesTheDefaults() throws Exception {
        Path example = Path.of(System.getProperty("user.dir"))
                .resolve("../config.example.yaml")
                .normalize();
        ProxyConfig c = ConfigLoader.load(List.of(example));
        ProxyConfig defaults = ConfigLoader.parse("workers:\n  - url: http://x:1\n");
        assertEquals(defaults.server(), c.server());
        assertEquals(defaults.health(), c.health());
        assertEquals(defaults.circuitBreaker(), c.circuitBreaker());
        assertEquals(defaults.proxy(), c.proxy());
        assertEquals(defaults.cache().maxTreeSize(), c.cache().maxTreeSize());
        assertEquals(defaults.cache().evictionIntervalSecs(), c.cache().evictionIntervalSecs());
        assertEquals(defaults.cache().learn(), c.cache().learn());
        assertEquals(defaults.cache().feedback(), c.cache().feedback());
        assertEquals(defaults.cache().learnAnswer(), c.cache().learnAnswer());
        assertTrue(c.workers().size() >= 1);
    }

    @Test
    void overlaysMergeMappingsKeyByKey() throws Exception {
        Path base = file("base.yaml", """
                server:
                  host: 127.0.0.1
                  port: 7000
                workers:
                  - url: http://a:1
                cache:
                  threshold: 0.5
                  match_abs_threshold: 100
                """);
        Path tuning = file("tuning.yaml", """
                cache:
                  threshold: 0.7
                server:
                  port: 7001
                """);
        ProxyConfig c = ConfigLoader.load(List.of(base, tuning));
        assertEquals("127.0.0.1", c.server().host(), "untouched key of a merged mapping survives");
        assertEquals(7001, c.server().port());
        assertEquals(0.7, c.cache().policySettings().get("threshold"));
        assertEquals(100, c.cache().policySettings().get("match_abs_threshold"));
    }

    @Test
    void overlaysReplaceListsWhole() throws Exception {
        Path base = file("base.yaml", """
                workers:
                  - url: http://a:1
                  - url: http://b:1
                proxy:
                  retryable_statuses: [502, 503, 504]
                """);
        Path workers = file("workers.yaml", """
                workers:
                  - url: http://c:1
                    max_load: 4
                proxy:
                  retryable_statuses: [503]
                """);
        ProxyConfig c = ConfigLoader.load(List.of(base, workers));
        assertEquals(List.of(new ProxyConfig.Worker("http://c:1", 4, 0)), c.workers());
        assertEquals(List.of(503), c.proxy().retryableStatuses());
        ProxyConfig reversed = ConfigLoader.load(List.of(workers, base));
        assertEquals(2, reversed.workers().size(), "last one wins");
    }

    @Test
    void emptyAndCommentOnlyFilesChangeNothing() throws Exception {
        Path base = file("base.yaml", "workers:\n  - url: http://a:1\ncache:\n  threshold: 0.4\n");
        Path empty = file("empty.yaml", "");
        Path comments = file("comments.yaml", "# generated later\n   \n# nothing yet\n");
        Path emptySection = file("section.yaml", "cache:\n");
        ProxyConfig alone = ConfigLoader.load(List.of(base));
        assertEquals(alone, ConfigLoader.load(List.of(base, empty, comments, emptySection)));
        assertEquals(alone, ConfigLoader.load(List.of(empty, base, comments)));
    }

    @Test
    void unknownKeysAreNamedWithTheirPath() {
        List<String> p = problems("""
                workers:
                  - url: http://a:1
                    maxload: 3
                cache:
                  treshold: 0.3
                proxi:
                  max_retries: 1
                """);
        assertProblem(p, "cache.treshold: unknown key (did you mean 'threshold'?)");
        assertProblem(p, "workers[0].maxload: unknown key (did you mean 'max_load'?)");
        assertProblem(p, "proxi: unknown section (did you mean 'proxy'?)");
        assertEquals(3, p.size(), p.toString());
    }

    @Test
    void everyBadValueIsReportedWithItsRange() {
        List<String> p = problems("""
                server:
                  port: 70000
                workers:
                  - url: http://a:1
                    max_load: 0
                  - url: ftp://b
                  - url: http://a:1
                  - "http://plain-string"
                cache:
                  threshold: 1.5
                  guard: sometimes
                  block_chars: 0
                  daily_cleanup_hour_utc: 24
                health:
                  endpoint: health
                  interval_secs: 0
                proxy:
                  jitter_factor: 2
                  retryable_statuses: [503, 200]
                  remote_media_url_policy: 302
                  connect_timeout_secs: "2s"
                  add_routed_peer_header: yes please
                """);
        assertProblem(p, "server.port: must be in [0, 65535], was 70000");
        assertProblem(p, "workers[0].max_load: must be >= 1, was 0");
        assertProblem(p, "workers[1].url: must be an http:// or https:// URL");
        assertProblem(p, "workers[2].url: duplicate worker http://a:1");
        assertProblem(p, "workers[3]: must be a mapping");
        assertProblem(p, "cache.threshold: must be in [0, 1], was 1.5");
        assertProblem(p, "cache.guard: must be one of abs_rel, median, bounded_load, was 'sometimes'");
        assertProblem(p, "cache.block_chars: must be in [1, 65536], was 0");
        assertProblem(p, "cache.daily_cleanup_hour_utc: must be in [-1, 23], was 24");
        assertProblem(p, "health.endpoint: must be a path starting with '/'");
        assertProblem(p, "health.interval_secs: must be in [1, 86400], was 0");
        assertProblem(p, "proxy.jitter_factor: must be in [0, 1], was 2");
        assertProblem(p, "proxy.retryable_statuses[1]: must be an HTTP status in [400, 599], was 200");
        assertProblem(p, "proxy.remote_media_url_policy: must be null (off) or an HTTP status in [400, 599]");
        assertProblem(p, "proxy.connect_timeout_secs: must be an integer");
        assertProblem(p, "proxy.add_routed_peer_header: must be true or false");
        assertEquals(16, p.size(), String.join("\n", p));
    }

    @Test
    void emptyOrMissingWorkersRefuseToStart() {
        assertProblem(problems("workers: []\n"), "workers: the list is empty");
        assertProblem(problems("server:\n  port: 1\n"), "workers: missing: CART needs at least one worker");
        assertProblem(problems("workers:\n"), "workers: set to nothing; CART refuses to start");
        assertProblem(problems("workers:\n  - max_load: 3\n"), "workers[0].url: required");
    }

    @Test
    void unknownPolicyListsTheAvailableOnes() {
        List<String> p = problems("workers:\n  - url: http://a:1\ncache:\n  policy: fastest\n");
        assertProblem(p, "cache.policy: unknown routing policy 'fastest'; available: ");
        assertTrue(p.get(0).contains("round_robin"), p.get(0));
    }

    @Test
    void otherPoliciesAreAccepted() throws Exception {
        for (String name : List.of("round_robin", "random", "least_loaded", "power_of_two", "consistent_hash")) {
            assertEquals(
                    name,
                    ConfigLoader.parse("workers:\n  - url: http://a:1\ncache:\n  policy: " + name + "\n")
                            .cache()
                            .policy());
        }
    }

    @Test
    void predictedTtftSettingsAreReadCheckedAndKeptToTheirPolicy() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://a:1\ncache:\n  policy: predicted_ttft\n"
                + "  learning_rate: 0.1\n  bounded_load_factor: 2\n  bounded_load_slack: 4\n"
                + "  prior_prefill_ms_per_1k_units: 12.5\n  prior_decode_ms_per_request: 0.25\n  prior_base_ms: 5\n");
        assertEquals("predicted_ttft", c.cache().policy());
        assertEquals(
                Map.of(
                        "learning_rate",
                        0.1,
                        "bounded_load_factor",
                        2,
                        "bounded_load_slack",
                        4,
                        "prior_prefill_ms_per_1k_units",
                        12.5,
                        "prior_decode_ms_per_request",
                        0.25,
                        "prior_base_ms",
                        5),
                c.cache().policySettings());
        assertEquals(
                0.0,
                ((dev.cart.policy.PredictedTtftPolicy) dev.cart.core.spi.RoutingPolicyProvider.named("predicted_ttft")
                                .create(ConfigLoader.parse(
                                                "workers:\n  - url: http://a:1\ncache:\n  policy: predicted_ttft\n"
                                                        + "  bounded_load_factor: 0\n")
                                        .cache()
                                        .policySettings()))
                        .config()
                        .boundedLoadFactor());
        List<String> p = problems("workers:\n  - url: http://a:1\ncache:\n  policy: predicted_ttft\n"
                + "  learning_rate: 2\n  bounded_load_slack: 0\n  bounded_load_factor: 0.5\n  guard: median\n");
        assertProblem(p, "cache.learning_rate: must be in [");
        assertProblem(p, "cache.bounded_load_slack: must be in [1, ");
        assertProblem(p, "cache.bounded_load_factor: must be 0 (unbounded) or in [1, 1000], was 0.5");
        assertProblem(p, "cache.guard: not a setting of policy 'predicted_ttft' (a setting of cache_aware)");
        assertEquals(4, p.size(), p.toString());
        assertProblem(
                problems("workers:\n  - url: http://a:1\ncache:\n  prior_base_ms: 5\n"),
                "cache.prior_base_ms: not a setting of policy 'cache_aware' (a setting of predicted_ttft)");
        assertProblem(
                problems("workers:\n  - url: http://a:1\ncache:\n  policy: predicted_tft\n  learning_rate: 0\n"),
                "cache.learning_rate: must be in [");
    }

    @Test
    void yamlErrorsNameTheFileAndLine() throws Exception {
        Path bad = file("bad.yaml", "workers:\n  - url: [unclosed\n");
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(bad)));
        assertTrue(
                e.problems().get(0).startsWith(bad + ": not valid YAML (line "),
                e.problems().toString());
        Path list = file("list.yaml", "- a\n- b\n");
        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(list)));
        assertTrue(
                e.problems().get(0).contains("top level must be a mapping"),
                e.problems().toString());
        Path dup = file("dup.yaml", "workers:\n  - url: http://a:1\nserver:\n  port: 1\nserver:\n  port: 2\n");
        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(dup)));
        assertTrue(
                e.problems().get(0).contains("Duplicate field 'server'"),
                e.problems().toString());
        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(dir.resolve("missing.yaml"))));
        assertTrue(
                e.problems().get(0).endsWith("missing.yaml: no such file"),
                e.problems().toString());
    }

    @Test
    void onlyWorkersMayDifferOnReload() throws Exception {
        ProxyConfig a = ConfigLoader.parse("workers:\n  - url: http://a:1\n");
        ProxyConfig b = ConfigLoader.parse("workers:\n  - url: http://b:1\n");
        ProxyConfig c = ConfigLoader.parse(
                "workers:\n  - url: http://a:1\ncache:\n  threshold: 0.9\n" + "proxy:\n  max_retries: 0\n");
        assertEquals(List.of(), a.sectionsDifferingFrom(b));
        assertEquals(List.of("cache", "proxy"), a.sectionsDifferingFrom(c));
    }

    @Test
    void learningKeysAreReadAndValidated() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://a:1\ncache:\n  learn: on_success\n"
                + "  feedback: false\n  learn_answer: false\n");
        assertEquals(dev.cart.core.LearnMode.ON_SUCCESS, c.cache().learn());
        assertEquals(false, c.cache().feedback());
        assertEquals(false, c.cache().learnAnswer());
        List<String> p = problems("workers:\n  - url: http://a:1\ncache:\n  learn: sometimes\n  feedback: 1\n"
                + "  learn_answer: \"yes\"\n");
        assertProblem(p, "cache.learn: must be one of on_route, on_success, was the string 'sometimes'");
        assertProblem(p, "cache.feedback: must be true or false");
        assertProblem(p, "cache.learn_answer: must be true or false");
    }

    @Test
    void theLoaderAndTheRecordsReportOneRange() throws Exception {
        // the same bounds, written once: the loader's problem and the constructor's exception agree
        List<String> p = problems("workers:\n  - url: http://a:1\n    max_load: 0\nserver:\n  port: 70000\n");
        assertProblem(p, "server.port: must be in [0, 65535], was 70000");
        assertProblem(p, "workers[0].max_load: must be >= 1, was 0");
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://a:1\n");
        IllegalArgumentException w = assertThrows(
                IllegalArgumentException.class,
                () -> c.withWorkers(List.of(new ProxyConfig.Worker("http://a:1", 0, 0))));
        assertEquals("workers[0].max_load: must be >= 1, was 0", w.getMessage());
    }

    @Test
    void recordsValidateWhenBuiltInCode() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://a:1\n");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> c.withServer(c.server().withPort(70000)));
        assertEquals("server.port: must be in [0, 65535], was 70000", e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> new ProxyConfig(
                        c.server(),
                        c.workers(),
                        c.cache(),
                        new ProxyConfig.Health("x", 10, 5, 3, 2, 60),
                        c.circuitBreaker(),
                        c.proxy(),
                        c.cluster(),
                        c.flow()));
        assertEquals("health.endpoint: must be a path starting with '/', was 'x'", e.getMessage());
    }

    @Test
    void everyProblemNamesTheFileThatSetTheKey() throws Exception {
        Path a = file("a.yaml", "workers:\n  - url: http://a:1\n    max_load: 0\nserver:\n  port: 70000\n");
        Path b = file("b.yaml", "cache:\n  treshold: 0.3\nserver:\n  host: 127.0.0.1\n");
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(a, b)));
        List<String> p = e.problems();
        assertProblem(p, b + ": cache.treshold: unknown key (did you mean 'threshold'?)");
        assertProblem(p, a + ": server.port: must be in [0, 65535], was 70000");
        assertProblem(p, a + ": workers[0].max_load: must be >= 1, was 0");
        assertEquals(3, p.size(), p.toString());
        // a key set again by a later file is that file's
        Path c = file("c.yaml", "server:\n  port: 99999\n");
        e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(a, c)));
        assertProblem(e.problems(), c + ": server.port: must be in [0, 65535], was 99999");
    }

    @Test
    void workerUrlsNeedAPortInRange() {
        List<String> p = problems("workers:\n  - url: http://a:99999\n  - url: http://b:0\n  - url: http://c:65535\n");
        assertProblem(p, "workers[0].url: ");
        assertTrue(p.get(0).contains("http://a:99999"), p.toString());
        assertProblem(p, "workers[1].url: the port must be in [1, 65535], was 0");
        assertEquals(2, p.size(), p.toString());
    }

    @Test
    void aWorkerUrlWithoutASchemeSaysItNeedsHttp() throws Exception {
        Path a = file("a.yaml", """
                workers:
                  - url: 10.0.0.5:8000
                  - url: node_1:8000
                  - url: localhost:8000/v1
                  - url: "http:/node2:8000"
                """);
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(List.of(a)));
        assertEquals(
                List.of(
                        a + ": workers[0].url: must start with http:// or https:// (such as 'http://10.0.0.5:8000'),"
                                + " was '10.0.0.5:8000'",
                        a + ": workers[1].url: must start with http:// or https:// (such as 'http://node_1:8000'),"
                                + " was 'node_1:8000'",
                        a + ": workers[2].url: must start with http:// or https:// (such as"
                                + " 'http://localhost:8000/v1'), was 'localhost:8000/v1'",
                        a + ": workers[3].url: must start with http:// or https://, was 'http:/node2:8000'"),
                e.problems());
    }

    @Test
    void anUnknownPolicyHidesNoOtherProblemOfTheSection() {
        List<String> p = problems("workers:\n  - url: http://a:1\ncache:\n  policy: cache_awre\n  threshold: 2\n"
                + "  treshold: 0.3\n  guard: medain\n");
        assertProblem(
                p, "cache.policy: unknown routing policy 'cache_awre' (did you mean 'cache_aware'?); available: ");
        assertProblem(p, "cache.threshold: must be in [0, 1], was 2");
        assertProblem(p, "cache.treshold: unknown key (did you mean 'threshold'?)");
        assertProblem(
                p, "cache.guard: must be one of abs_rel, median, bounded_load, was 'medain' (did you mean 'median'?)");
        assertEquals(4, p.size(), p.toString());
    }

    @Test
    void theEngineIsNettyAndJdkSaysWhereItWent() throws Exception {
        assertEquals(
                ProxyConfig.Server.Engine.NETTY,
                ConfigLoader.parse("workers:\n  - url: http://a:1\n").server().engine());
        assertEquals(
                ProxyConfig.Server.Engine.NETTY,
                ConfigLoader.parse("server:\n  engine: netty\nworkers:\n  - url: http://a:1\n")
                        .server()
                        .engine());
        assertProblem(
                problems("server:\n  engine: jdk\nworkers:\n  - url: http://a:1\n"),
                "server.engine: the JDK front was removed, netty is the only engine (a host on the JDK's HttpServer:"
                        + " see the examples/proxy sample)");
        assertProblem(
                problems("server:\n  engine: netyy\nworkers:\n  - url: http://a:1\n"),
                "server.engine: must be one of netty, was the string 'netyy' (did you mean 'netty'?)");
    }

    @Test
    void misspelledChoicesGetASuggestion() {
        List<String> p = problems("workers:\n  - url: http://a:1\ncache:\n  learn: on_rout\n  tokenizer: cl100k\n"
                + "  miss_placement: consistent_hsh\n");
        assertProblem(
                p,
                "cache.learn: must be one of on_route, on_success, was the string 'on_rout' (did you mean 'on_route'?)");
        assertProblem(
                p,
                "cache.tokenizer: must be one of cl100k_base, o200k_base, none, was the string 'cl100k'"
                        + " (did you mean 'cl100k_base'?)");
        assertProblem(
                p,
                "cache.miss_placement: must be one of least_loaded, consistent_hash, was 'consistent_hsh'"
                        + " (did you mean 'consistent_hash'?)");
    }

    @Test
    void everyMessageHasOneFormatAndReadableRanges() {
        List<String> p = problems("""
                workers:
                  - url: http://a:1
                    load_penalty: -1
                server:
                  port: -1
                cache:
                  threshold: -1
                  match_abs_threshold: 0
                  balance_abs_threshold: -1
                  balance_rel_threshold: 0.5
                  median_factor: 0
                  hash_load_factor: 0.5
                  max_tree_size: 0
                  route_ttl_secs: -1
                proxy:
                  backoff_multiplier: 0
                """);
        assertProblem(p, "cache.balance_rel_threshold: must be >= 1, was 0.5");
        assertProblem(p, "cache.match_abs_threshold: must be >= 1, was 0");
        assertProblem(p, "cache.max_tree_size: must be >= 1, was 0");
        assertProblem(p, "workers[0].load_penalty: must be >= 0, was -1");
        assertEquals(11, p.size(), String.join("\n", p));
        for (String problem : p) {
            assertTrue(
                    problem.matches("[a-z_\\[\\]0-9.]+: (must|the|unknown|not|missing|duplicate|required).*"),
                    "key: problem: " + problem);
            assertTrue(
                    !problem.contains("E308")
                            && !problem.contains("2147483647")
                            && !problem.contains("9223372036854775807"),
                    "a readable range: " + problem);
        }
    }
}
