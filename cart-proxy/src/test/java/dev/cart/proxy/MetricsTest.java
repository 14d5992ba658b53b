package dev.cart.proxy;

import static dev.cart.proxy.ProxyHarness.await;
import static dev.cart.proxy.ProxyHarness.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.core.EvictionReport;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.http.Responses;
import dev.cart.proxy.observe.DecisionWindow;
import dev.cart.proxy.observe.ProxyMetrics;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code GET /metrics}, {@code /workers} shares and the decision log, checked against known traffic. */
class MetricsTest {

    private static final String PROMPT = "You are a careful assistant who answers in one line. ".repeat(8);

    private static PromText scrape(ProxyHarness h) throws Exception {
        HttpResponse<String> r = h.get("/metrics");
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/plain"));
        return PromText.parse(r.body());
    }

    /** Scrapes until {@code cart_requests_total} adds up to {@code n} (the last request is counted after its answer). */
    private static PromText scrapeAfter(ProxyHarness h, int n) throws Exception {
        PromText[] last = new PromText[1];
        await("cart_requests_total reaches " + n, () -> {
            try {
                // the scrapes themselves are counted too, once they finish: count only non-/metrics requests
                last[0] = scrape(h);
                return last[0].sum("cart_requests_total") - last[0].sum("cart_requests_total", "endpoint", "/metrics")
                        == n;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        return last[0];
    }

    /** The labels made once per outcome are the ones made per request before: the name in lower case. */
    @Test
    void outcomeLabelsAreTheirLowerCaseNames() {
        for (dev.cart.core.Outcome o : dev.cart.core.Outcome.values()) {
            assertEquals(o.name().toLowerCase(java.util.Locale.ROOT), ProxyMetrics.outcomeLabel(o));
        }
    }

    @Test
    void knownTrafficGivesExactCountsByReasonReplicaAndStatus() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "load_penalty: 0", "load_penalty: 50")) {
            String r0 = h.replica(0).url();
            String r1 = h.replica(1).url();
            for (int i = 0; i < 3; i++) { // a miss, then two hits, all on r0
                assertEquals(
                        200, h.post("/v1/chat/completions", chat(PROMPT, false)).statusCode());
            }
            assertEquals(400, h.post("/v1/chat/completions", "{bad").statusCode());
            h.replica(0).forcedStatus = 503; // retried on r1
            assertEquals(
                    200,
                    h.post("/v1/chat/completions", chat("another conversation " + PROMPT, false))
                            .statusCode());
            h.replica(0).forcedStatus = 0;
            assertEquals(200, h.get("/some/unknown/path?x=1").statusCode());
            h.probe(); // /health is 503 until the first probe
            assertEquals(200, h.get("/health").statusCode());
            assertEquals(200, h.get("/workers").statusCode());
            assertEquals(
                    200,
                    h.post("/v1/completions", "{\"model\":\"fake\",\"prompt\":\"" + PROMPT + "\"}")
                            .statusCode());

            PromText m = scrapeAfter(h, 9);
            // the retry's prefix is held by r0, which the retry excludes: for the retry it is a miss
            // (the holder could not take it; it was not overloaded), placed by load on r1
            assertEquals(
                    1,
                    m.value("cart_decisions_total", "reason", "miss", "replica", r1),
                    m.dump("cart_decisions_total"));
            assertEquals(3, m.value("cart_decisions_total", "reason", "miss", "replica", r0));
            assertEquals(2, m.value("cart_decisions_total", "reason", "cache_hit", "replica", r0));
            // the pass-through request: chosen by load, counted under its own reason, not as a prompt-less request
            assertEquals(1, m.value("cart_decisions_total", "reason", "pass_through", "replica", r0));
            assertEquals(0, m.value("cart_decisions_total", "reason", "empty_text", "replica", r0));
            assertEquals(7, m.sum("cart_decisions_total"));

            assertEquals(
                    3,
                    m.value("cart_requests_total", "endpoint", "/v1/chat/completions", "status", "2xx", "replica", r0));
            assertEquals(
                    1,
                    m.value("cart_requests_total", "endpoint", "/v1/chat/completions", "status", "2xx", "replica", r1));
            assertEquals(
                    1,
                    m.value(
                            "cart_requests_total",
                            "endpoint",
                            "/v1/chat/completions",
                            "status",
                            "4xx",
                            "replica",
                            "none"));
            assertEquals(1, m.value("cart_requests_total", "endpoint", "other", "status", "2xx", "replica", r0));
            assertEquals(1, m.value("cart_requests_total", "endpoint", "/health", "status", "2xx", "replica", "none"));
            assertEquals(1, m.value("cart_requests_total", "endpoint", "/workers", "status", "2xx", "replica", "none"));
            assertEquals(
                    1, m.value("cart_requests_total", "endpoint", "/v1/completions", "status", "2xx", "replica", r0));

            assertEquals(1, m.value("cart_retries_total", "replica", r0, "cause", "status"));
            assertEquals(1, m.sum("cart_retries_total"));
            assertEquals(
                    1, m.value("cart_upstream_requests_total", "replica", r0, "outcome", "failure", "status", "5xx"));
            assertEquals(
                    5, m.value("cart_upstream_requests_total", "replica", r0, "outcome", "success", "status", "2xx"));
            assertEquals(
                    1, m.value("cart_upstream_requests_total", "replica", r1, "outcome", "success", "status", "2xx"));
            assertEquals(6, m.sum("cart_upstream_duration_seconds_count", "replica", r0));
            assertEquals(5, m.sum("cart_upstream_first_byte_seconds_count", "replica", r0));
            assertEquals(1, m.sum("cart_upstream_first_byte_seconds_count", "replica", r1));

            assertEquals(7, m.value("cart_decision_duration_seconds_count"));
            assertEquals(6, m.value("cart_decision_matched_ratio_count"), "routed decisions with prompt text");
            assertEquals(6, m.value("cart_decision_matched_ratio_bucket", "le", "1.0"));
            assertEquals(
                    4,
                    m.value("cart_decision_matched_ratio_bucket", "le", "0.001"),
                    "three misses and the retry placed by load hold nothing of their prompt: "
                            + m.dump("cart_decision_matched_ratio_bucket"));
            assertEquals("histogram", m.types.get("cart_decision_matched_ratio"));
            assertEquals("histogram", m.types.get("cart_upstream_duration_seconds"));

            assertEquals(0, m.value("cart_replica_in_flight", "replica", r0));
            assertEquals(1, m.value("cart_replica_healthy", "replica", r1));
            assertEquals(1, m.value("cart_replica_circuit_state", "replica", r0, "state", "closed"));
            assertEquals(0, m.value("cart_replica_circuit_state", "replica", r0, "state", "open"));
            assertEquals(256, m.value("cart_replica_max_load", "replica", r0));
            assertEquals(h.proxy.routing().router.treeStats().size(), m.value("cart_tree_blocks"));
            assertEquals(h.proxy.routing().router.treeStats().size() * 64.0, m.value("cart_tree_characters"));
            assertTrue(m.value("cart_tree_blocks") > 0);
            assertEquals(1_000_000, m.value("cart_tree_max_blocks"));
            assertTrue(m.sum("jvm_memory_used_bytes", "area", "heap") > 0, "JVM basics are exported");
            assertTrue(m.value("process_uptime_seconds") > 0);
        }
    }

    @Test
    void circuitTransitionsModelsCacheAndTreeEventsAreCounted() throws Exception {
        String yaml = "circuit_breaker:\n  failure_threshold: 1\n  success_threshold: 1\n  timeout_secs: 30\n"
                + "cache:\n  max_tree_size: 1\n  eviction_interval_secs: 0\nproxy:\n  max_retries: 0\n";
        try (ProxyHarness h = ProxyHarness.start(1, yaml)) {
            String r0 = h.replica(0).url();
            h.replica(0).forcedStatus = 500;
            assertEquals(
                    500, h.post("/v1/chat/completions", chat(PROMPT, false)).statusCode());
            await("circuit open", () -> h.member(0).circuitState() == dev.cart.core.CircuitBreaker.State.OPEN);
            h.get("/v1/models");
            h.replica(0).forcedStatus = 0;
            h.clock.advance(java.time.Duration.ofSeconds(30));
            h.member(0).circuitState(); // half-open on read
            assertEquals(
                    200, h.post("/v1/chat/completions", chat(PROMPT, false)).statusCode());
            await("circuit closed", () -> h.member(0).circuitState() == dev.cart.core.CircuitBreaker.State.CLOSED);
            assertEquals(200, h.get("/v1/models").statusCode());
            assertEquals(200, h.get("/v1/models").statusCode());
            EvictionReport report = h.proxy.routing().router.evictNow();
            assertTrue(report.evicted() > 0);
            h.proxy.routing().router.resetTree();

            PromText m = scrapeAfter(h, 5);
            assertEquals(1, m.value("cart_circuit_transitions_total", "replica", r0, "from", "closed", "to", "open"));
            assertEquals(
                    1, m.value("cart_circuit_transitions_total", "replica", r0, "from", "open", "to", "half_open"));
            assertEquals(
                    1, m.value("cart_circuit_transitions_total", "replica", r0, "from", "half_open", "to", "closed"));
            assertEquals(
                    1,
                    m.value("cart_requests_total", "endpoint", "/v1/models", "status", "5xx", "replica", "none"),
                    m.dump("cart_requests_total"));
            assertEquals(1, m.value("cart_models_cache_total", "result", "hit"));
            assertEquals(2, m.value("cart_models_cache_total", "result", "miss"));
            assertEquals(report.evicted(), m.value("cart_tree_evicted_entries_total", "cause", "lru"));
            assertEquals(0, m.value("cart_tree_evicted_entries_total", "cause", "ttl"));
            assertEquals(1, m.value("cart_tree_eviction_duration_seconds_count"));
            assertEquals(1, m.value("cart_tree_resets_total"));
            assertEquals(0, m.value("cart_tree_blocks"));
        }
    }

    @Test
    void labelValuesStayBoundedUnderRandomBodiesAndPaths() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "")) {
            SplittableRandom rnd = new SplittableRandom(42);
            Set<String> tokens = new HashSet<>();
            String[] endpoints = {"/v1/chat/completions", "/v1/completions", "/v1/messages"};
            String[] methods = {"GET", "POST", "PUT", "DELETE", "PATCH"};
            int sent = 0;
            for (int i = 0; i < 150; i++) {
                String token = "tok" + Long.toHexString(rnd.nextLong());
                tokens.add(token);
                String body = switch (rnd.nextInt(4)) {
                    case 0 -> chat(token + " " + token, rnd.nextBoolean());
                    case 1 -> "{\"model\":\"" + token + "\",\"prompt\":\"" + token + "\"}";
                    case 2 -> "{\"" + token + "\": [" + rnd.nextInt() + "]}";
                    default -> token;
                };
                HttpResponse<String> r;
                if (rnd.nextBoolean()) {
                    r = h.post(endpoints[rnd.nextInt(endpoints.length)], body);
                } else {
                    String path = "/" + token + "/" + rnd.nextInt(1000) + "?q=" + token;
                    String method = methods[rnd.nextInt(methods.length)];
                    r = h.http.send(
                            HttpRequest.newBuilder(h.uri(path))
                                    .method(
                                            method,
                                            method.equals("GET") || method.equals("DELETE")
                                                    ? HttpRequest.BodyPublishers.noBody()
                                                    : HttpRequest.BodyPublishers.ofString(body))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                }
                assertTrue(r.statusCode() == 200 || r.statusCode() == 400, r.statusCode() + " " + r.body());
                sent++;
            }
            for (int i = 0; i < 30; i++) { // more of the same kinds: must add no label value
                assertEquals(200, h.get("/another" + rnd.nextInt() + "/path").statusCode());
                assertEquals(
                        200,
                        h.post("/v1/chat/completions", chat("fresh " + rnd.nextLong(), false))
                                .statusCode());
                sent += 2;
            }
            PromText m = scrapeAfter(h, sent);
            String text = h.get("/metrics").body();
            for (String t : tokens) {
                assertFalse(text.contains(t), "a request value became part of the metrics: " + t);
            }
            Set<String> replicas = Set.of(h.replica(0).url(), h.replica(1).url(), "none");
            Set<String> endpointsAllowed = new HashSet<>(ProxyMetrics.ENDPOINTS);
            endpointsAllowed.add("other");
            Map<String, Set<String>> allowed = new HashMap<>();
            allowed.put("replica", replicas);
            allowed.put("endpoint", endpointsAllowed);
            allowed.put("status", Set.of("1xx", "2xx", "3xx", "4xx", "5xx", "none", "other"));
            allowed.put(
                    "reason",
                    Set.of(
                            "cache_hit",
                            "hit_overloaded",
                            "miss",
                            "miss_hashed",
                            "empty_text",
                            "policy",
                            "no_replica",
                            "pass_through"));
            allowed.put("outcome", Set.of("success", "failure", "cancelled"));
            int cartSeries = 0;
            for (PromText.Sample s : m.samples) {
                if (!s.name().startsWith("cart_")) {
                    continue;
                }
                cartSeries++;
                for (Map.Entry<String, String> l : s.labels().entrySet()) {
                    Set<String> ok = allowed.get(l.getKey());
                    if (ok != null) {
                        assertTrue(ok.contains(l.getValue()), s.toString());
                    }
                }
            }
            // every series comes from fixed label sets, so their number is bounded whatever the traffic
            assertTrue(cartSeries < 400, "cart series: " + cartSeries);
        }
    }

    @Test
    void aThrowingListenerDoesNotAffectRoutingOrMetrics() throws Exception {
        RoutingListener throwing = new RoutingListener() {
            @Override
            public void onDecision(RouteDecision decision) {
                throw new IllegalStateException("listener failure on decision");
            }

            @Override
            public void onLeaseCompleted(LeaseCompletion completion) {
                throw new IllegalStateException("listener failure on completion");
            }
        };
        ProxyHarness h = new ProxyHarness();
        h.replicas.add(ScriptedReplica.start("r0"));
        h.proxy = h.startProxy(ConfigLoader.parse(h.yaml("")), h.options().listener(throwing));
        try (h) {
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> r = h.post("/v1/chat/completions", chat(PROMPT, i % 2 == 0));
                assertEquals(200, r.statusCode());
            }
            PromText m = scrapeAfter(h, 5);
            assertEquals(5, m.sum("cart_decisions_total"));
            assertEquals(5, m.sum("cart_upstream_requests_total", "outcome", "success"));
            h.assertNoInFlight();
        }
    }

    @Test
    void workersReportEachReplicasShareOfRecentDecisionsAndHits() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(2, "", "load_penalty: 0", "load_penalty: 50")) {
            for (int i = 0; i < 10; i++) {
                assertEquals(
                        200, h.post("/v1/chat/completions", chat(PROMPT, false)).statusCode());
            }
            h.replica(0).forcedStatus = 503;
            assertEquals(
                    200,
                    h.post("/v1/chat/completions", chat("elsewhere " + PROMPT, false))
                            .statusCode());
            JsonNode root = Responses.JSON.readTree(h.get("/workers").body());
            JsonNode recent = root.get("recent");
            assertEquals(DecisionWindow.SIZE, recent.get("window").asInt());
            assertEquals(12, recent.get("decisions").asInt(), "10 + one request tried twice");
            assertEquals(9, recent.get("cache_hits").asInt());
            JsonNode w0 = root.get("workers").get(0);
            JsonNode w1 = root.get("workers").get(1);
            assertEquals(0.917, w0.get("decision_share").asDouble(), 1e-9);
            assertEquals(0.083, w1.get("decision_share").asDouble(), 1e-9);
            assertEquals(1.0, w0.get("cache_hit_share").asDouble(), 1e-9);
            assertEquals(0.0, w1.get("cache_hit_share").asDouble(), 1e-9);
        }
    }

    /**
     * With {@code predicted_ttft}: the decision line carries the winner's and the runner-up's estimates,
     * {@code /workers} each replica's learned model and estimate error, and the metrics the same per replica.
     */
    @Test
    void predictedTtftExplainsItsDecisionsAndItsEstimateError() throws Exception {
        Pattern estimates = Pattern.compile(".* total_ms=\\d+ predicted_ms=(\\d+\\.\\d) runner_up=(\\S+) "
                + "runner_up_ms=(\\d+\\.\\d) queued_ms=- band=- tenant=-");
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(2, "cache:\n  policy: predicted_ttft\n")) {
            int n = 40;
            for (int i = 0; i < n; i++) {
                assertEquals(
                        200,
                        h.post("/v1/chat/completions", chat(PROMPT, i % 2 == 0)).statusCode());
            }
            PromText m = scrapeAfter(h, n);
            await("every line", () -> log.lines().size() >= n);
            Set<String> urls = Set.of(h.replica(0).url(), h.replica(1).url());
            for (String line : log.lines()) {
                java.util.regex.Matcher x = estimates.matcher(line);
                assertTrue(x.matches(), line);
                assertTrue(urls.contains(x.group(2)) && !line.contains(" replica=" + x.group(2) + " "), line);
                assertTrue(
                        Double.parseDouble(x.group(1)) <= Double.parseDouble(x.group(3)),
                        "the winner's is lower: " + line);
                assertFalse(line.contains("careful assistant"), line);
            }
            JsonNode workers = Responses.JSON.readTree(h.get("/workers").body()).get("workers");
            JsonNode busiest = null;
            for (JsonNode w : workers) {
                JsonNode t = w.get("predicted_ttft");
                assertTrue(t != null && t.has("observations"), w.toString());
                if (busiest == null
                        || t.get("observations").asLong()
                                > busiest.get("predicted_ttft")
                                        .get("observations")
                                        .asLong()) {
                    busiest = w;
                }
            }
            JsonNode t = busiest.get("predicted_ttft");
            assertTrue(t.get("observations").asLong() > 32, "one replica took most of one prompt: " + workers);
            assertTrue(t.get("prefill_ms_per_1k_units").asDouble() > 0, t.toString());
            assertTrue(t.get("estimate_error_samples").asInt() > 0, t.toString());
            assertTrue(
                    t.get("estimate_error_p50").isNumber()
                            && t.get("estimate_error_p50").asDouble() >= 0,
                    t.toString());
            String id = busiest.get("url").asText();
            m = scrape(h);
            assertEquals(
                    t.get("estimate_error_p50").asDouble(),
                    m.value("cart_replica_ttft_estimate_error_p50", "replica", id),
                    0.0015,
                    m.dump("cart_replica_ttft_estimate_error_p50"));
            assertTrue(m.value("cart_replica_ttft_estimate_error_p90", "replica", id)
                    >= m.value("cart_replica_ttft_estimate_error_p50", "replica", id));
            assertEquals(
                    t.get("prefill_ms_per_1k_units").asDouble() / 1000,
                    m.value("cart_replica_ttft_prefill_seconds_per_1k_units", "replica", id),
                    1e-6);
            h.assertNoInFlight();
        }
    }

    /**
     * The request path's meters, kept per replica and label set, count each event under exactly its labels:
     * two replicas and no replica, every endpoint slot, status classes, outcomes, pass-through, usage verdicts.
     */
    @Test
    void eachEventCountsUnderItsOwnLabels() {
        dev.cart.core.ManagedReplicaSet pool = dev.cart.core.ManagedReplicaSet.builder()
                .add(new dev.cart.core.ReplicaSpec("http://127.0.0.1:8001", 64, 0))
                .add(new dev.cart.core.ReplicaSpec("http://127.0.0.1:8002", 64, 0))
                .build();
        dev.cart.core.Router router = dev.cart.core.Router.builder()
                .replicas(pool)
                .policy(dev.cart.policy.Policies.roundRobin())
                .build();
        RouteDecision a = router.choose(dev.cart.core.RouteRequest.of(dev.cart.core.PromptKey.ofText(PROMPT, 64)));
        RouteDecision b = router.choose(dev.cart.core.RouteRequest.of(dev.cart.core.PromptKey.ofText(PROMPT, 64))
                .withModel("some-model"));
        a.lease().close();
        b.lease().close();
        String ida = a.replica().id();
        String idb = b.replica().id();
        assertFalse(ida.equals(idb));
        try (ProxyMetrics m = new ProxyMetrics(() -> null, 64, new DecisionWindow())) {
            for (int i = 0; i < 3; i++) {
                m.request("/v1/chat/completions", 200, ida, 1_000_000);
            }
            m.request(new String("/v1/chat/completions".toCharArray()), 200, ida, 1_000_000);
            // an equal id of another string instance (a reload's replica) counts in the same series
            m.request("/v1/chat/completions", 200, new String(ida.toCharArray()), 1_000_000);
            m.request("/v1/chat/completions", 503, idb, 1_000_000);
            m.request("/health", 200, null, 1_000);
            m.request("/nowhere", 404, null, 1_000);
            m.request(null, -1, null, 1_000);
            m.request("/metrics", 700, null, 1_000);
            m.decision(null, a, false);
            m.decision(null, a, false);
            m.decision(null, b, true);
            m.leaseCompleted(new LeaseCompletion(a, dev.cart.core.Outcome.SUCCESS, 200, 5_000_000, 0));
            m.leaseCompleted(new LeaseCompletion(b, dev.cart.core.Outcome.FAILURE, 502, 5_000_000, 0));
            m.leaseCompleted(new LeaseCompletion(b, dev.cart.core.Outcome.CANCELLED, 0, 5_000_000, 0));
            m.firstByte(null, ida, 2_000_000);
            m.firstByte(null, ida, 2_000_000);
            m.cacheFeedback(
                    a, new dev.cart.core.CacheFeedback(100, 40, 250, dev.cart.core.CacheFeedback.Verdict.STALE));
            m.cacheFeedback(a, new dev.cart.core.CacheFeedback(100, 100, 250, dev.cart.core.CacheFeedback.Verdict.OK));
            m.cacheFeedback(
                    b, new dev.cart.core.CacheFeedback(100, 10, 250, dev.cart.core.CacheFeedback.Verdict.INCONCLUSIVE));
            m.cacheFeedback(
                    b,
                    new dev.cart.core.CacheFeedback(100, 0, 250, dev.cart.core.CacheFeedback.Verdict.CACHE_UNREPORTED));
            m.answerLearned(null, "learned");
            m.answerLearned(null, "learned");
            m.answerLearned(null, "not_chat");
            PromText p = PromText.parse(m.scrape());
            String req = "cart_requests_total";
            assertEquals(
                    5, p.value(req, "endpoint", "/v1/chat/completions", "status", "2xx", "replica", ida), p.dump(req));
            assertEquals(1, p.value(req, "endpoint", "/v1/chat/completions", "status", "5xx", "replica", idb));
            assertEquals(1, p.value(req, "endpoint", "/health", "status", "2xx", "replica", "none"));
            assertEquals(1, p.value(req, "endpoint", "other", "status", "4xx", "replica", "none"));
            assertEquals(1, p.value(req, "endpoint", "other", "status", "none", "replica", "none"));
            assertEquals(1, p.value(req, "endpoint", "/metrics", "status", "other", "replica", "none"));
            assertEquals(10, p.sum(req));
            assertEquals(6, p.value("cart_request_duration_seconds_count", "endpoint", "/v1/chat/completions"));
            assertEquals(2, p.value("cart_request_duration_seconds_count", "endpoint", "other"));
            assertEquals(2, p.value("cart_decisions_total", "reason", a.reason().code(), "replica", ida));
            assertEquals(1, p.value("cart_decisions_total", "reason", "pass_through", "replica", idb));
            assertEquals(
                    2,
                    p.value(
                            "cart_model_decisions_total",
                            "model",
                            "none",
                            "reason",
                            a.reason().code()));
            assertEquals(1, p.value("cart_model_decisions_total", "model", "other", "reason", "pass_through"));
            assertEquals(3, p.value("cart_decision_duration_seconds_count"));
            String up = "cart_upstream_requests_total";
            assertEquals(1, p.value(up, "replica", ida, "outcome", "success", "status", "2xx"), p.dump(up));
            assertEquals(1, p.value(up, "replica", idb, "outcome", "failure", "status", "5xx"));
            assertEquals(1, p.value(up, "replica", idb, "outcome", "cancelled", "status", "none"));
            assertEquals(1, p.value("cart_upstream_duration_seconds_count", "replica", ida));
            assertEquals(2, p.value("cart_upstream_duration_seconds_count", "replica", idb));
            assertEquals(2, p.value("cart_upstream_first_byte_seconds_count", "replica", ida));
            assertEquals(0, p.sum("cart_upstream_first_byte_seconds_count", "replica", idb));
            assertEquals(200, p.value("cart_cache_predicted_tokens_total", "replica", ida));
            assertEquals(140, p.value("cart_cache_delivered_tokens_total", "replica", ida));
            assertEquals(500, p.value("cart_cache_prompt_tokens_total", "replica", ida));
            assertEquals(1, p.value("cart_cache_feedback_total", "replica", ida, "verdict", "stale"));
            assertEquals(1, p.value("cart_cache_feedback_total", "replica", ida, "verdict", "ok"));
            assertEquals(1, p.value("cart_cache_feedback_total", "replica", idb, "verdict", "inconclusive"));
            assertEquals(1, p.value("cart_cache_feedback_total", "replica", idb, "verdict", "cache_unreported"));
            assertEquals(2, p.value("cart_learned_answers_total", "result", "learned"));
            assertEquals(1, p.value("cart_learned_answers_total", "result", "not_chat"));
        }
    }

    /** Each known endpoint is its own label, matched by content (a request's path is a string of its own). */
    @Test
    void endpointLabelsAreTheKnownPathsElseOther() {
        for (String e : ProxyMetrics.ENDPOINTS) {
            assertEquals(e, ProxyMetrics.endpointLabel(new String(e.toCharArray())));
        }
        for (String other : new String[] {
            null,
            "",
            "/",
            "/v1/chat",
            "/v1/chat/completions/",
            "/HEALTH",
            "/v1/models/x",
            "/v1/chat/completionz",
            "/v1/completionz",
            "/v1/messagez",
            "/v1/modelz",
            "/healtz",
            "/workerz",
            "/metricz",
            "/xxxxxxx"
        }) {
            assertEquals(ProxyMetrics.OTHER, ProxyMetrics.endpointLabel(other), String.valueOf(other));
        }
        assertEquals("2xx", ProxyMetrics.statusClass(200));
        assertEquals("1xx", ProxyMetrics.statusClass(101));
        assertEquals("5xx", ProxyMetrics.statusClass(599));
        assertEquals(ProxyMetrics.NONE, ProxyMetrics.statusClass(0));
        assertEquals(ProxyMetrics.NONE, ProxyMetrics.statusClass(-1));
        assertEquals(ProxyMetrics.OTHER, ProxyMetrics.statusClass(600));
        assertEquals(ProxyMetrics.OTHER, ProxyMetrics.statusClass(99));
    }

    @Test
    void decisionWindowKeepsOnlyTheLastDecisions() {
        DecisionWindow w = new DecisionWindow();
        for (int i = 0; i < DecisionWindow.SIZE; i++) {
            w.record(new DecisionWindow.Entry("a", true));
        }
        for (int i = 0; i < DecisionWindow.SIZE / 4; i++) {
            w.record(new DecisionWindow.Entry("b", false));
        }
        DecisionWindow.Snapshot s = w.snapshot();
        assertEquals(DecisionWindow.SIZE, s.decisions());
        assertEquals(0.25, s.decisionShare("b"), 1e-9);
        assertEquals(1.0, s.hitShare("a"), 1e-9);
        assertEquals(DecisionWindow.SIZE * 3 / 4, s.hits());
        w.clear();
        assertEquals(0, w.snapshot().decisions());
    }

    @Test
    void decisionLogLineHasTheDocumentedKeysInOrder() throws Exception {
        Pattern format = Pattern.compile("decision endpoint=\\S+ method=\\S+ model=\\S+ stream=\\S+ reason=\\S+ "
                + "replica=\\S+ matched=\\S+ key_len=\\S+ ratio=\\S+ decision_us=\\S+ status=\\S+ prompt_tokens=\\S+ "
                + "cached=\\S+ upstream_ms=\\S+ "
                + "retries=\\d+ result=\\S+ total_ms=\\d+ predicted_ms=- runner_up=- runner_up_ms=- queued_ms=- band=- "
                + "tenant=-");
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h = ProxyHarness.start(1, "")) {
            h.post("/v1/chat/completions", chat(PROMPT, true));
            h.post("/v1/chat/completions", "{bad");
            h.get("/odd path/%0d%0aX-Injected: 1".replace(" ", "%20"));
            await("three lines", () -> log.lines().size() >= 3);
            assertEquals(3, log.lines().size(), log.lines().toString());
            for (String line : log.lines()) {
                assertTrue(format.matcher(line).matches(), line);
                assertFalse(line.contains("\n") || line.contains("\r"), line);
            }
            // A stream's line is written when the stream has ended, which can be after the next request's:
            // find the lines by what they say, not by their order.
            List<String> lines = log.lines();
            assertEquals(
                    1, lines.stream().filter(l -> l.contains(" reason=miss ")).count(), lines.toString());
            assertEquals(
                    1,
                    lines.stream()
                            .filter(l -> l.contains(" reason=- ") && l.contains(" result=bad_request "))
                            .count(),
                    lines.toString());
            assertFalse(String.join("\n", lines).contains("careful assistant"));
        }
    }

    @Test
    void answersThatCannotBeParsedAreCounted() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            String r0 = h.replica(0).url();
            assertEquals(
                    200, h.post("/v1/chat/completions", chat(PROMPT, false)).statusCode());
            h.replica(0).toolCalls = "[{broken"; // the replica's JSON answer is no longer JSON
            HttpResponse<String> r = h.post("/v1/chat/completions", chat(PROMPT, false));
            assertEquals(200, r.statusCode());
            assertTrue(r.body().contains("[{broken"), "relayed unchanged: " + r.body());
            PromText m = scrapeAfter(h, 2);
            assertEquals(
                    1,
                    m.value("cart_response_parse_failures_total", "replica", r0),
                    m.dump("cart_response_parse_failures_total"));
        }
    }
}
