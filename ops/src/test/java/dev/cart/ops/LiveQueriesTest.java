package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.sim.SimulatedReplicaServer;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The dashboard and the rules against a running pool, so that renaming a metric or a label breaks the
 * build rather than the dashboard: two proxies (child JVMs, sharing routes through a real redis-server)
 * route to three simulated replicas in this JVM, a real Prometheus scrapes them every second and evaluates
 * the rule files every second, and a replay sends chat traffic with hits and misses, streams, Anthropic
 * requests, bad requests, replica failures (a replica answering 500, another 503 until it is unhealthy and
 * its model has no replica), recovery and reloads. Then every dashboard query, every template variable,
 * every recording rule (its expression and the series it records) and every alert's signals (what it
 * compares with its threshold: {@link PromQl#signals}) must return at least one series through
 * Prometheus's HTTP API, and so must every selector with label matchers in them, alone (a renamed label
 * value); every rule must evaluate without error.
 *
 * <p>{@link #KNOWN_GAPS} names the queries allowed to return nothing because the counter they read
 * exists only from its first event and this replay cannot cause it; a gap that returns data fails the
 * test, so the list cannot outlive its reason.
 *
 * <p>The main row's panels are then drawn from the run's data ({@link DashboardPicture}) to
 * target/live/dashboard.png, or to the file {@code -Dcart.ops.picture} names; {@code -Dcart.ops.steadySeconds}
 * lengthens the replay's last, normal phase (5 s by default; docs/operations.md says how docs/dashboard.png
 * was made).
 */
class LiveQueriesTest {

    /**
     * Counters that do not exist until their first event (docs/metrics.md): a rate() of one sees nothing before.
     * None now: the proxy registers every counter the dashboard and the rules read at 0 from the start.
     */
    static final Set<String> FIRST_EVENT_COUNTERS = Set.of();

    /**
     * Queries that return no series only because their counter is one of {@link #FIRST_EVENT_COUNTERS} and
     * the replay cannot make its first event happen. Remove an entry once the counter is present from the
     * start (the test then fails until it is removed). Empty: every counter is present from the start.
     */
    static final Map<String, String> KNOWN_GAPS = Map.of();

    /** Grafana's built-in variables, as the check expands them (1 s scrapes: a minute holds 60 samples). */
    private static final Map<String, String> BUILT_INS = Map.of("__rate_interval", "1m", "__range", "1h");

    private static final Pattern LABEL_VALUES = Pattern.compile("label_values\\((.+),\\s*(\\w+)\\)");
    private static final long WAIT_SECONDS = 90;

    private static final Pattern SELECTOR = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*\\s*\\{[^{}]*}");

    /**
     * One thing that must return data: where it is, the query it belongs to (a dashboard query, a rule: the
     * key of {@link #KNOWN_GAPS}), and the PromQL sent.
     */
    private record Check(String where, String source, String expr) {}

    @Test
    @Timeout(value = 2, unit = TimeUnit.HOURS) // the limit is the one below, which follows cart.ops.steadySeconds
    void everyDashboardQueryAndRuleReturnsSeriesFromARunningPool() {
        Duration limit = Duration.ofMinutes(8).plusSeconds(steadySeconds());
        assertTimeoutPreemptively(limit, this::run, "the live check's limit");
    }

    private static long steadySeconds() {
        return Long.getLong("cart.ops.steadySeconds", 5);
    }

    private void run() throws Exception {
        Path dir = freshDirectory(Tools.opsDir().resolve("target/live"));
        List<SimulatedReplicaServer> sims = new ArrayList<>();
        List<AutoCloseable> closing = new ArrayList<>();
        long started = System.nanoTime();
        try {
            for (int i = 1; i <= 3; i++) {
                sims.add(SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("sim-" + i)
                        .port(0)
                        .model(Replay.MODEL)
                        .speedup(20)));
            }
            LocalRedis redis = LocalRedis.start(dir);
            closing.add(redis);
            ProxyProcess a = ProxyProcess.start("proxy-a", dir, proxyConfig("proxy-a", sims, redis));
            closing.add(a);
            ProxyProcess b = ProxyProcess.start("proxy-b", dir, proxyConfig("proxy-b", sims, redis));
            closing.add(b);
            LocalPrometheus prometheus = LocalPrometheus.start(dir, List.of(a.target(), b.target()));
            closing.add(prometheus);
            await(prometheus, "both proxies scraped", "count(up{job=\"cart\"} == 1) == 2");
            double from = System.currentTimeMillis() / 1000.0;
            log("pool up in %d s", seconds(started));

            List<URI> proxies = List.of(uri(a), uri(b));
            try (Replay replay = new Replay(proxies)) {
                replay(replay, prometheus, sims, a, b);
                log("replay done at %d s: %s", seconds(started), replay.statuses());
                assertTrue(replay.statuses().getOrDefault("2xx", 0L) > 50, "answers: " + replay.statuses());
            }

            Map<String, String> variables = resolveVariables(prometheus);
            List<Check> checks = checks(variables);
            Map<String, Integer> found = awaitSeries(prometheus, checks);
            log("queries checked at %d s", seconds(started));
            assertRulesHealthy(prometheus);
            assertResults(checks, found, prometheus);

            double to = System.currentTimeMillis() / 1000.0;
            Path picture = Path.of(System.getProperty(
                    "cart.ops.picture", dir.resolve("dashboard.png").toString()));
            DashboardPicture.draw(prometheus, variables, from, to, picture);
            assertTrue(javax.imageio.ImageIO.read(picture.toFile()).getWidth() > 0, "a PNG at " + picture);
            log("main row drawn to %s (%.0f s of data)", picture.toAbsolutePath(), to - from);

        } finally {
            for (int i = closing.size() - 1; i >= 0; i--) {
                closing.get(i).close();
            }
            for (SimulatedReplicaServer s : sims) {
                s.close();
            }
        }
    }

    /**
     * The traffic, in phases that each wait (through Prometheus) for the state they cause: normal traffic
     * until cache hits and hits learned from the other proxy are seen; replica 2 answering 500 and replica 3
     * 503 (on /health too) until replica 3 is unhealthy on both proxies, its model m2 has no replica, and
     * retries, open circuits and 5xx answers are counted; recovery and a SIGHUP reload of both proxies until
     * every replica is healthy again; then {@code cart.ops.steadySeconds} (default 5) of normal traffic.
     */
    private void replay(
            Replay replay,
            LocalPrometheus prometheus,
            List<SimulatedReplicaServer> sims,
            ProxyProcess a,
            ProxyProcess b)
            throws Exception {
        URI proxyA = uri(a);
        URI proxyB = uri(b);
        String sim3 = url(sims.get(2));
        replay.startSteady(2, 20);
        replay.oddRequests(proxyA);
        replay.oddRequests(proxyB);
        replay.chat(proxyA, "m2", Replay.system(-2), "Which regions have GPUs?", false);
        await(prometheus, "cache hits", "sum(cart_decisions_total{reason=\"cache_hit\"}) > 0");
        await(prometheus, "hits on routes learned from the other proxy", "cart_cluster_hits_learned_elsewhere_total");
        await(prometheus, "hits diverted from a busy holder", "cart_decisions_total{reason=\"hit_overloaded\"}");

        sims.get(1).setFault(SimulatedReplicaServer.Fault.ERROR_500);
        sims.get(2).setFault(SimulatedReplicaServer.Fault.ERROR_503);
        List<String> faults = List.of(
                "count(cart_replica_healthy{replica=\"" + sim3 + "\"} == 0) == 2",
                "cart_model_decisions_total{model=\"m2\", reason=\"no_replica\"}",
                "sum(cart_retries_total) > 0", // these counters read 0 from the start: wait for counts
                "sum(cart_circuit_transitions_total{to=\"open\"}) > 0",
                "sum(cart_health_transitions_total{to=\"unhealthy\"}) > 0",
                "cart_requests_total{status=\"5xx\"}");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!allPresent(prometheus, faults)) {
            if (System.nanoTime() > deadline) {
                fail("the faults did not show within " + WAIT_SECONDS + " s: " + missing(prometheus, faults));
            }
            replay.chat(proxyA, "m2", Replay.system(-2), "Which regions have GPUs?", false);
            replay.chat(proxyB, "m2", Replay.system(-2), "Which regions have GPUs?", false);
            ChildProcess.pollInterval(200); // paces the m2 requests
        }

        sims.get(1).setFault(SimulatedReplicaServer.Fault.NONE);
        sims.get(2).setFault(SimulatedReplicaServer.Fault.NONE);
        a.reload();
        b.reload();
        await(prometheus, "every replica healthy again", "count(cart_replica_healthy == 1) == 6");
        // the counters exist at 0 from the start: wait for the events themselves
        await(prometheus, "health transitions back", "sum(cart_health_transitions_total{to=\"healthy\"}) > 0");
        await(prometheus, "both reloads", "sum(cart_reloads_total) == 2");
        replay.chat(proxyA, "m2", Replay.system(-2), "Which regions have GPUs?", false);
        Thread.sleep(TimeUnit.SECONDS.toMillis(steadySeconds())); // the last phase: normal load, for as long as asked
    }

    private static String proxyConfig(String name, List<SimulatedReplicaServer> sims, LocalRedis redis) {
        StringBuilder y = new StringBuilder("workers:\n");
        for (int i = 0; i < sims.size(); i++) {
            y.append("  - url: \"").append(url(sims.get(i))).append("\"\n");
            // replica 3 alone serves m2 as well: when it fails, m2 has no replica
            y.append("    models: [\"").append(Replay.MODEL).append(i == 2 ? "\", \"m2\"]\n" : "\"]\n");
        }
        return y.append("health:\n  interval_secs: 1\n  timeout_secs: 1\n  failure_threshold: 2\n")
                .append("  success_threshold: 1\n")
                .append("circuit_breaker:\n  failure_threshold: 2\n  success_threshold: 1\n  timeout_secs: 1\n")
                .append("  half_open_max_requests: 1\n")
                // a hit goes elsewhere whenever its holder is busier than another replica: hit_overloaded happens
                .append("cache:\n  balance_abs_threshold: 0\n  balance_rel_threshold: 1\n")
                .append("proxy:\n  initial_backoff_ms: 10\n  decision_log: false\n")
                .append("cluster:\n  redis_url: \"")
                .append(redis.uri())
                .append("\"\n  stream: \"cart:ops-live\"\n  instance_id: \"")
                .append(name)
                .append("\"\n")
                .toString();
    }

    /**
     * The template variables' values: each query variable's {@code label_values(...)} must find at least one
     * value; a multi-value variable then stands for all of them (its "All", {@code .*}), a single one for
     * its first value, as Grafana selects by default.
     */
    private static Map<String, String> resolveVariables(LocalPrometheus prometheus) throws Exception {
        Map<String, String> values = new LinkedHashMap<>(BUILT_INS);
        Dashboard d = Dashboard.load();
        for (JsonNode v : d.root.path("templating").path("list")) {
            String name = v.path("name").asText();
            if (v.path("type").asText().equals("datasource")) {
                continue;
            }
            String query = PromQl.expand(v.path("query").path("query").asText(), values);
            Matcher m = LABEL_VALUES.matcher(query);
            assertTrue(m.matches(), "variable " + name + ": not label_values(selector, label): " + query);
            List<String> found = prometheus.labelValues(m.group(2), m.group(1));
            assertTrue(!found.isEmpty(), "variable " + name + ": " + query + " found no value");
            values.put(name, v.path("multi").asBoolean() ? v.path("allValue").asText(".*") : found.get(0));
        }
        return values;
    }

    /**
     * What must return data: each dashboard query, each recording rule's expression and recorded series, each
     * alert's signals; and, in all of them, each selector with label matchers on its own, so that a label
     * value the proxy no longer uses is caught even where a ratio's {@code or 0 * ...} arm would hide it.
     */
    private static List<Check> checks(Map<String, String> variables) throws IOException {
        List<Check> checks = new ArrayList<>();
        for (Dashboard.Query q : Dashboard.load().queries()) {
            add(checks, q.where(), PromQl.expand(q.expr(), variables));
        }
        for (RuleFiles.Recording r : RuleFiles.recordings()) {
            add(checks, "recording rule " + r.name(), r.expr());
            checks.add(new Check("series recorded by " + r.name(), "recording rule " + r.name(), r.name()));
        }
        for (RuleFiles.Alert a : RuleFiles.alerts()) {
            List<String> signals = PromQl.signals(a.expr());
            for (int i = 0; i < signals.size(); i++) {
                add(checks, "alert " + a.name() + " signal " + (i + 1), signals.get(i));
            }
        }
        return checks;
    }

    private static void add(List<Check> checks, String where, String expr) {
        checks.add(new Check(where, where, expr));
        Matcher m = SELECTOR.matcher(expr);
        while (m.find()) {
            checks.add(new Check(where + " selector " + m.group(), where, m.group()));
        }
    }

    /**
     * Evaluates every check until each has returned a series once (or the wait ends); the known gaps are
     * evaluated all along too. Returns the series count each check first returned (absent: never).
     */
    private static Map<String, Integer> awaitSeries(LocalPrometheus prometheus, List<Check> checks) throws Exception {
        Map<String, Integer> found = new TreeMap<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (true) {
            for (Check c : checks) {
                if (!found.containsKey(c.where())) {
                    int n = prometheus.query(c.expr()).size();
                    if (n > 0) {
                        found.put(c.where(), n);
                    }
                }
            }
            List<String> waiting = checks.stream()
                    .filter(c -> !found.containsKey(c.where()) && !KNOWN_GAPS.containsKey(c.source()))
                    .map(Check::where)
                    .toList();
            if (waiting.isEmpty() || System.nanoTime() > deadline) {
                return found;
            }
            log("waiting for %s", waiting);
            ChildProcess.pollInterval(1000); // a scrape and an evaluation later
        }
    }

    private static void assertResults(List<Check> checks, Map<String, Integer> found, LocalPrometheus prometheus)
            throws IOException {
        String metricsDoc = Files.readString(Tools.repositoryRoot().resolve("docs/metrics.md"), StandardCharsets.UTF_8);
        List<String> problems = new ArrayList<>();
        List<String> gaps = new ArrayList<>();
        for (Map.Entry<String, String> gap : KNOWN_GAPS.entrySet()) {
            Check c = checks.stream()
                    .filter(x -> x.where().equals(gap.getKey()))
                    .findFirst()
                    .orElse(null);
            if (c == null) {
                problems.add("known gap " + gap.getKey() + ": no such query");
                continue;
            }
            List<String> counters = FIRST_EVENT_COUNTERS.stream()
                    .filter(m -> c.expr().contains(m) && metricsDoc.contains("`" + m + "`"))
                    .toList();
            if (counters.isEmpty()) {
                problems.add("known gap " + gap.getKey() + ": reads none of the documented first-event counters "
                        + FIRST_EVENT_COUNTERS + ": " + c.expr());
            }
            if (checks.stream().anyMatch(x -> x.source().equals(gap.getKey()) && found.containsKey(x.where()))) {
                problems.add("known gap " + gap.getKey() + " now returns data: remove it from KNOWN_GAPS");
            } else {
                gaps.add(gap.getKey() + " (" + gap.getValue() + "): " + c.expr());
            }
        }
        for (Check c : checks) {
            if (!found.containsKey(c.where()) && !KNOWN_GAPS.containsKey(c.source())) {
                problems.add(c.where() + " returned no series: " + c.expr());
            }
        }
        gaps.forEach(g -> log("known gap: %s", g));
        log("%d queries returned series, %d known gaps", found.size(), gaps.size());
        if (!problems.isEmpty()) {
            fail(problems.size() + " of " + checks.size() + " checks failed:\n  " + String.join("\n  ", problems)
                    + "\nPrometheus log:\n" + prometheus.output());
        }
    }

    /** Every recording and alerting rule evaluated without error (a wrong vector match fails only at run time). */
    private static void assertRulesHealthy(LocalPrometheus prometheus) throws Exception {
        List<String> unhealthy = new ArrayList<>();
        int rules = 0;
        for (JsonNode g : prometheus.ruleGroups()) {
            for (JsonNode r : g.path("rules")) {
                rules++;
                if (!r.path("health").asText().equals("ok")) {
                    unhealthy.add(
                            r.path("name").asText() + ": " + r.path("health").asText() + " "
                                    + r.path("lastError").asText());
                }
            }
        }
        assertEquals(RuleFiles.recordings().size() + RuleFiles.alerts().size(), rules, "rules Prometheus loaded");
        assertEquals(List.of(), unhealthy, "rules that failed to evaluate");
    }

    private static void await(LocalPrometheus prometheus, String what, String expr) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (prometheus.query(expr).isEmpty()) {
            if (System.nanoTime() > deadline) {
                fail("not seen within " + WAIT_SECONDS + " s: " + what + " (" + expr + ")\n" + prometheus.output());
            }
            ChildProcess.pollInterval(250);
        }
    }

    private static boolean allPresent(LocalPrometheus prometheus, List<String> exprs) throws Exception {
        return missing(prometheus, exprs).isEmpty();
    }

    private static List<String> missing(LocalPrometheus prometheus, List<String> exprs) throws Exception {
        List<String> out = new ArrayList<>();
        for (String e : exprs) {
            if (prometheus.query(e).isEmpty()) {
                out.add(e);
            }
        }
        return out;
    }

    private static URI uri(ProxyProcess p) {
        return URI.create("http://" + p.target());
    }

    private static String url(SimulatedReplicaServer s) {
        String u = s.baseUri().toString();
        return u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
    }

    private static Path freshDirectory(Path dir) throws IOException {
        if (Files.exists(dir)) {
            try (Stream<Path> all = Files.walk(dir)) {
                for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        return Files.createDirectories(dir);
    }

    private static long seconds(long since) {
        return TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - since);
    }

    private static void log(String format, Object... args) {
        System.out.println("[live] " + String.format(java.util.Locale.ROOT, format, args));
    }
}
