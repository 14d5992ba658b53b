package dev.cart.proxy.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The configuration rules of precise mode (workers with {@code kv_events}) that span sections and that a type and a
 * range do not say: a KV-event endpoint's form, {@code kv_events_replay} only beside {@code kv_events}, the ranks'
 * ports within 65535, at most {@link #MAX_KV_STREAMS} streams in all, and a model name for every worker's stream.
 * {@link ConfigValidator} calls it on the tree it checks, after the sections' own checks.
 *
 * <p>How: it reads the tree as the files give it (a value left out takes its default from {@code defaults}; a value
 * of the wrong type was already reported by the validator and is skipped here), and adds each problem as
 * {@code key: problem}.
 *
 * <p>Concurrency: stateless; thread-safe.
 */
final class PreciseRules {

    private PreciseRules() {}

    /**
     * Precise mode's rules across sections: {@code kv_events_replay} only with {@code kv_events}, at most
     * {@link #MAX_KV_STREAMS} streams (workers times ranks), and a model for every worker's stream
     * ({@code kv_events.model}, or the worker's one configured model).
     */
    static void check(ObjectNode root, ObjectNode defaults, Problems problems) {
        JsonNode workers = root.get("workers");
        if (workers == null || !workers.isArray()) {
            return;
        }
        JsonNode section = root.get("kv_events");
        JsonNode model = section != null && section.isObject() ? section.get("model") : null;
        boolean modelSet = model != null && model.isTextual() && !model.asText().isBlank();
        long streams = 0;
        int ranksDefault = defaults.get("workers").get(0).get("kv_events_ranks").asInt();
        for (int i = 0; i < workers.size(); i++) {
            if (!(workers.get(i) instanceof ObjectNode w)) {
                continue;
            }
            String path = "workers[" + i + "]";
            boolean events = w.path("kv_events").isTextual();
            if (!events && w.path("kv_events_replay").isTextual()) {
                problems.add(path + ".kv_events_replay", "needs kv_events (the engine's PUB endpoint) beside it");
            }
            if (!events) {
                continue;
            }
            JsonNode ranks = w.get("kv_events_ranks");
            long r =
                    ranks != null && ranks.isIntegralNumber() && ranks.asLong() >= 1 && ranks.asLong() <= MAX_KV_STREAMS
                            ? ranks.asLong()
                            : ranksDefault;
            streams += r;
            for (String key : List.of("kv_events", "kv_events_replay")) {
                JsonNode e = w.get(key);
                int port = e != null && e.isTextual() ? zmqPort(e.asText()) : -1;
                if (port > 0 && port + r - 1 > 65535) {
                    problems.add(
                            path + "." + key,
                            "with kv_events_ranks " + r + " the last rank's port would be " + (port + r - 1)
                                    + ", above 65535");
                }
            }
            if (!modelSet && singleModel(w.get("models")) == null) {
                problems.add(
                        path + ".kv_events",
                        "precise mode needs the model name requests use for this engine: set kv_events.model, or"
                                + " list exactly one model in workers[].models");
            }
        }
        if (streams > MAX_KV_STREAMS) {
            problems.add(
                    "workers",
                    "precise mode follows at most " + MAX_KV_STREAMS + " KV-event streams (each worker with"
                            + " kv_events has one per rank), the workers have " + streams);
        }
    }

    /** Most KV-event streams one proxy follows ({@code dev.cart.kvevents.KvIndex.MAX_STREAMS}). */
    static final int MAX_KV_STREAMS = 64;

    /** The one model a {@code models} list names (not {@code "*"}), or null. */
    private static String singleModel(JsonNode models) {
        if (models == null
                || !models.isArray()
                || models.size() != 1
                || !models.get(0).isTextual()) {
            return null;
        }
        String m = models.get(0).asText();
        return m.isBlank() || m.equals(ProxyConfig.Worker.ANY_MODEL) ? null : m;
    }

    /**
     * What is wrong with a KV-event endpoint, or null when it is a usable {@code tcp://host:port} (the form
     * vLLM's {@code --kv-events-config} gives, with a host to connect to instead of {@code *}).
     */
    static String zmqProblem(String endpoint) {
        String s = endpoint.trim();
        if (!s.startsWith("tcp://")) {
            return "must be a ZMQ endpoint tcp://host:port (such as 'tcp://node1:5557'), was '" + endpoint + "'";
        }
        String rest = s.substring("tcp://".length());
        int colon = rest.lastIndexOf(':');
        String host = colon < 0 ? "" : rest.substring(0, colon);
        if (host.isEmpty() || host.equals("*") || zmqPort(s) < 1) {
            return "must name a host to connect to and a port in [1, 65535], tcp://host:port, was '" + endpoint + "'";
        }
        return null;
    }

    /** The port of a {@code tcp://host:port} endpoint, or -1. */
    private static int zmqPort(String endpoint) {
        String s = endpoint.trim();
        int colon = s.lastIndexOf(':');
        if (!s.startsWith("tcp://") || colon < "tcp://".length()) {
            return -1;
        }
        String digits = s.substring(colon + 1);
        if (digits.isEmpty() || digits.length() > 5 || !digits.chars().allMatch(Character::isDigit)) {
            return -1;
        }
        int port = Integer.parseInt(digits);
        return port >= 1 && port <= 65535 ? port : -1;
    }
}
