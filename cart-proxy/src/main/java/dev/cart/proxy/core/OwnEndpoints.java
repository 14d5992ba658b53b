package dev.cart.proxy.core;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.policy.PredictedTtftPolicy;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.Responses;
import dev.cart.proxy.observe.DecisionWindow;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.precise.PreciseStatus;
import dev.cart.proxy.routing.Cluster;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.upstream.HealthChecker;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * The answers of the proxy's own endpoints: {@code /health}, {@code /workers} and {@code /metrics}, made from the
 * current routing state, the recent decisions and the metrics registry. {@link ProxyCore#plan} decides that a
 * request is for one of them (and its method); this makes the answer.
 *
 * <p>How: each answer is built fresh from what it reports (a JSON tree written by {@link Responses#JSON}, or the
 * registry's scrape), so it is as current as the state it reads; none is cached.
 *
 * <p>Concurrency: thread-safe; the routing state is read once per answer through its supplier, and everything it
 * reads (health, replicas, the window, the metrics) is itself thread-safe.
 */
final class OwnEndpoints {

    private final Supplier<Routing> routing;
    private final ProxyMetrics metrics;
    private final DecisionWindow window;
    private final Cluster cluster;

    OwnEndpoints(Supplier<Routing> routing, ProxyMetrics metrics, DecisionWindow window, Cluster cluster) {
        this.routing = routing;
        this.metrics = metrics;
        this.window = window;
        this.cluster = cluster;
    }

    /**
     * {@code /health}: {@code status} with {@code healthy}, {@code unknown} (no probe completed yet) and
     * {@code total} replicas. 200 {@code ok} when every replica is healthy, 200 {@code degraded} when some
     * are; 503 {@code starting} while none is healthy and some are still unknown (the first probes have not
     * all answered), 503 {@code unavailable} when none is healthy, 503 {@code draining} once the proxy stops.
     */
    Answer health(boolean draining) {
        Routing r = routing.get();
        int healthy = r.health.count(HealthChecker.State.HEALTHY);
        int unknown = r.health.count(HealthChecker.State.UNKNOWN);
        int total = r.replicas.replicas().size();
        String status;
        if (draining) {
            status = "draining";
        } else if (healthy == 0) {
            status = unknown > 0 ? "starting" : "unavailable";
        } else {
            status = healthy < total ? "degraded" : "ok";
        }
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("status", status);
        root.put("healthy", healthy);
        root.put("unknown", unknown);
        root.put("total", total);
        return Answer.json(!draining && healthy > 0 ? 200 : 503, root);
    }

    /** {@code /metrics}: the registry in Prometheus' text format. */
    Answer metrics() {
        byte[] body = metrics.scrape().getBytes(StandardCharsets.UTF_8);
        return Answer.of(200, "text/plain; version=0.0.4; charset=utf-8", body);
    }

    /**
     * {@code /workers}: the policy, each replica's health, circuit, load and recent share of decisions and cache
     * hits, its models (and what {@code predicted_ttft} and precise mode know of it), and the counts by model.
     */
    Answer workers() {
        Routing current = routing.get();
        DecisionWindow.Snapshot recent = window.snapshot();
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("policy", current.router.policy().name());
        root.put("healthy", current.health.count(HealthChecker.State.HEALTHY));
        root.put("tree_size", current.router.treeStats().size());
        ObjectNode window = root.putObject("recent");
        window.put("window", DecisionWindow.SIZE);
        window.put("decisions", recent.decisions());
        window.put("cache_hits", recent.hits());
        ArrayNode list = root.putArray("workers");
        for (ManagedReplicaSet.Member m : current.replicas.replicas()) {
            ObjectNode w = list.addObject();
            w.put("url", m.id());
            HealthChecker.State health = current.health.state(m);
            w.put("healthy", health == HealthChecker.State.HEALTHY);
            w.put("health", health.label());
            w.put("circuit", m.circuitState().label());
            w.put("in_flight", m.inFlight());
            if (cluster.on()) {
                w.put("remote_in_flight", cluster.remoteInFlight(m.id())); // the other instances'
            }
            w.put("max_load", m.maxLoad());
            w.put("load_penalty", m.loadPenalty());
            w.put("decision_share", round3(recent.decisionShare(m.id())));
            w.put("cache_hit_share", round3(recent.hitShare(m.id())));
            ArrayNode served = w.putArray("models");
            m.models().forEach(served::add);
            if (current.router.policy() instanceof PredictedTtftPolicy p) {
                predictedTtft(w.putObject("predicted_ttft"), p.replicaStats(m.id()));
            }
            if (current.precise != null) {
                PreciseStatus.write(w, current.precise.status(m.id()));
            }
        }
        ObjectNode byModel = root.putObject("models");
        metrics.modelCounts().forEach((model, counts) -> {
            ObjectNode c = byModel.putObject(model);
            c.put("decisions", counts[0]);
            c.put("cache_hits", counts[1]);
        });
        return Answer.json(200, root);
    }

    /**
     * What {@code predicted_ttft} learned about one replica: its model (the prior's until it reports a first
     * token) and its recent estimate error, null until warmed up.
     */
    private static void predictedTtft(ObjectNode o, PredictedTtftPolicy.ReplicaStats s) {
        if (s == null) {
            o.put("observations", 0);
            return;
        }
        PredictedTtftPolicy.Speeds sp = s.speeds();
        o.put("observations", sp.observations());
        o.put("prefill_ms_per_1k_units", round3(sp.prefillMillisPerKiloUnit()));
        o.put("decode_ms_per_request", round3(sp.decodeMillisPerRequest()));
        o.put("base_ms", round3(sp.baseMillis()));
        o.put("estimate_error_samples", s.errorSamples());
        putFinite(o, "estimate_error_p50", s.errorP50());
        putFinite(o, "estimate_error_p90", s.errorP90());
    }

    private static void putFinite(ObjectNode o, String field, double v) {
        if (Double.isFinite(v)) {
            o.put(field, round3(v));
        } else {
            o.putNull(field);
        }
    }

    private static double round3(double x) {
        return Math.round(x * 1000.0) / 1000.0;
    }
}
