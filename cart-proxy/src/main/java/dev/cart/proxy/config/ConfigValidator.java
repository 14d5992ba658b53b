package dev.cart.proxy.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.internal.Names;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The one validator of the configuration. It walks a tree in the files' shape against the {@link Schema}
 * (the records' keys and {@link Constraints}) and reports every problem, each as {@code key: problem}
 * (Problems adds the file that set the key): unknown sections and keys with the close name, values of the
 * wrong type or outside their range (with the range), then the few rules a type and a range do not say,
 * written here once: a worker's URL, duplicate workers, the list of models, the health endpoint, the Redis
 * URL, {@code load_ttl_ms} against {@code load_interval_ms}, the policy's settings ({@link PolicyCheck}) and precise
 * mode's rules across sections ({@link PreciseRules}).
 *
 * <p>It checks two kinds of tree. The files' merged tree, before the binder turns it into records: a value
 * left out or empty ({@code null}) is not set, and its default (valid) applies. And a configuration built
 * from records ({@link #requireValid}, from {@link ProxyConfig}'s constructor), turned into the same shape
 * by {@link Schema#toTree}: there every value is set, and a null one that may not be is a problem. So the
 * files and code meet the same rules and the same messages. Stateless; thread-safe.
 */
final class ConfigValidator {

    private final Problems problems;
    /** True for a configuration built from records: a null that may not be null is a problem. */
    private final boolean records;

    private ConfigValidator(Problems problems, boolean records) {
        this.problems = problems;
        this.records = records;
    }

    /**
     * Checks the files' merged tree; adds every problem to {@code problems}.
     *
     * @param requireWorkers false only for demo mode, which supplies its own workers
     */
    static void validate(ObjectNode root, boolean requireWorkers, Problems problems) {
        new ConfigValidator(problems, false).root(root, requireWorkers);
    }

    /**
     * Checks a configuration built from records.
     *
     * @throws IllegalArgumentException naming every problem, {@code key: problem}, one per line
     */
    static void requireValid(
            ProxyConfig.Server server,
            List<ProxyConfig.Worker> workers,
            ProxyConfig.Cache cache,
            ProxyConfig.Health health,
            ProxyConfig.Circuit circuit,
            ProxyConfig.Proxy proxy,
            ClusterConfig cluster,
            FlowSettings flow,
            KvEventsSettings kvEvents) {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.set("server", Schema.node(server));
        root.set("workers", Schema.node(workers));
        root.set("cache", Schema.node(cache));
        root.set("health", Schema.node(health));
        root.set("circuit_breaker", Schema.node(circuit));
        root.set("proxy", Schema.node(proxy));
        root.set("cluster", Schema.node(cluster));
        root.set("flow", Schema.node(flow));
        root.set("kv_events", Schema.node(kvEvents));
        Problems found = new Problems();
        new ConfigValidator(found, true).root(root, false);
        if (!found.isEmpty()) {
            throw new IllegalArgumentException(String.join("\n", found.list()));
        }
    }

    private void root(ObjectNode root, boolean requireWorkers) {
        Schema.Section schema = Schema.ROOT;
        ObjectNode defaults = Defaults.tree();
        for (String k : names(root)) {
            if (schema.key(k) == null) {
                problems.add(k, unknown(k, schema.names(), "section"));
            }
        }
        for (Schema.Key k : schema.keys().values()) {
            JsonNode n = root.get(k.name());
            if (k.kind() == Schema.Kind.SECTION_LIST) {
                workers(k, n, requireWorkers, (ObjectNode)
                        defaults.get(k.name()).get(0));
            } else if (n == null || n.isNull()) {
                if (records) {
                    problems.add(k.path(), "must not be null");
                }
            } else if (!n.isObject()) {
                problems.add(k.path(), "must be a mapping, was a " + Layers.kind(n));
            } else {
                section(k.section(), k.path(), (ObjectNode) n, (ObjectNode) defaults.get(k.name()));
            }
        }
        PreciseRules.check(root, defaults, problems);
    }

    private void workers(Schema.Key k, JsonNode node, boolean requireWorkers, ObjectNode defaults) {
        String example = " (add entries like '- url: \"http://node1:8000\"')";
        if (node == null) {
            if (requireWorkers) {
                problems.add("workers", "missing: CART needs at least one worker; add a 'workers' section" + example);
            }
            return;
        }
        if (node.isNull() || (node.isArray() && node.isEmpty())) {
            if (requireWorkers) {
                problems.add(
                        "workers",
                        (node.isNull() ? "set to nothing" : "the list is empty")
                                + "; CART refuses to start without at least one worker" + example);
            }
            return;
        }
        if (!node.isArray()) {
            problems.add("workers", "must be a list of mappings with a 'url', was a " + Layers.kind(node));
            return;
        }
        Set<String> urls = new HashSet<>();
        for (int i = 0; i < node.size(); i++) {
            String path = "workers[" + i + "]";
            JsonNode item = node.get(i);
            if (item.isTextual()) {
                problems.add(path, "must be a mapping such as '- url: \"" + item.asText() + "\"', was a plain string");
            } else if (!item.isObject()) {
                problems.add(path, "must be a mapping with a 'url', was a " + Layers.kind(item));
            } else {
                section(k.section(), path, (ObjectNode) item, defaults);
                JsonNode url = item.get("url");
                if (url != null && url.isTextual() && urlProblem(url.asText()) == null) {
                    String normal = ProxyConfig.Worker.stripSlashes(url.asText().trim());
                    if (!urls.add(normal)) {
                        problems.add(path + ".url", "duplicate worker " + normal);
                    }
                }
            }
        }
    }

    /** One mapping: its keys, each value, the section's own rules, then its unknown keys. */
    private void section(Schema.Section schema, String path, ObjectNode node, ObjectNode defaults) {
        boolean takesPolicyKeys = schema.policyKeysName() != null;
        Map<String, Object> settings = new LinkedHashMap<>();
        List<String> unknown = new ArrayList<>();
        for (String name : names(node)) {
            Schema.Key k = schema.key(name);
            if (k != null && k.kind() != Schema.Kind.POLICY_KEYS) {
                continue;
            }
            if (takesPolicyKeys && PolicyCheck.KEYS.contains(name)) {
                JsonNode v = node.get(name);
                Object setting = scalar(v);
                if (setting != null) {
                    settings.put(name, setting);
                } else if (!v.isNull()) {
                    problems.add(path + "." + name, "must be a number, string or boolean, was " + describe(v));
                }
            } else {
                unknown.add(name);
            }
        }
        for (Schema.Key k : schema.keys().values()) {
            if (k.kind() == Schema.Kind.POLICY_KEYS) {
                continue;
            }
            String keyPath = path + "." + k.name();
            JsonNode v = node.get(k.name());
            if (v == null || v.isNull()) {
                JsonNode d = defaults.get(k.name());
                if (!k.nullable() && (records || d == null || d.isNull())) {
                    problems.add(keyPath, records ? "must not be null" : "required");
                }
                continue;
            }
            value(k, keyPath, v);
        }
        if (schema.type() == ClusterConfig.class) {
            loadTtl(path, node, defaults);
        }
        if (schema.type() == FlowSettings.class) {
            flowRules(path, node, defaults);
        }
        if (takesPolicyKeys) {
            JsonNode policy = node.get("policy");
            String name = policy != null && policy.isTextual()
                    ? policy.asText()
                    : defaults.get("policy").asText();
            PolicyCheck.check(
                    name, settings, (key, problem) -> problems.add(key == null ? path : path + "." + key, problem));
        }
        List<String> known = new ArrayList<>(schema.names());
        if (takesPolicyKeys) {
            known.addAll(PolicyCheck.KEYS);
        }
        for (String name : unknown) {
            problems.add(path + "." + name, unknown(name, known, "key"));
        }
    }

    /** One value against its key's kind, range and rule; {@code path} is where it is ({@code workers[2].url}). */
    private void value(Schema.Key k, String path, JsonNode v) {
        switch (k.kind()) {
            case INTEGER -> integer(k, path, v);
            case NUMBER -> {
                if (!v.isNumber()) {
                    problems.add(path, "must be a number " + k.realRange() + ", was " + describe(v));
                } else if (!k.realRange().contains(v.asDouble())) {
                    problems.add(
                            path, "must be " + k.realRange() + ", was " + ProxyConfig.RealRange.format(v.asDouble()));
                }
            }
            case BOOLEAN -> {
                if (!v.isBoolean()) {
                    problems.add(path, "must be true or false, was " + describe(v));
                }
            }
            case CHOICE -> {
                if (path.equals("server.engine") && v.isTextual() && v.asText().equals("jdk")) {
                    problems.add(
                            path,
                            "the JDK front was removed, netty is the only engine (a host on the JDK's HttpServer: see"
                                    + " the examples/proxy sample)");
                } else if (!v.isTextual() || !k.choices().contains(v.asText())) {
                    problems.add(
                            path,
                            "must be one of " + String.join(", ", k.choices()) + ", was " + describe(v)
                                    + (v.isTextual() ? Names.didYouMean(v.asText(), k.choices()) : ""));
                }
            }
            case TEXT -> text(k, path, v);
            case OPTIONAL_STATUS -> {
                if (!v.isIntegralNumber() || !k.range().contains(v.asLong())) {
                    problems.add(path, "must be null (off) or an HTTP status " + k.range() + ", was " + describe(v));
                }
            }
            case STATUS_LIST -> statuses(k, path, v);
            case NAME_LIST -> models(path, v);
            default -> throw new IllegalStateException(path + ": " + k.kind());
        }
    }

    private void integer(Schema.Key k, String path, JsonNode v) {
        ProxyConfig.IntRange range = k.range();
        long value;
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            value = v.asLong();
        } else if (v.isFloatingPointNumber()
                && v.asDouble() == Math.rint(v.asDouble())
                && Math.abs(v.asDouble()) < 9.0e15) {
            value = (long) v.asDouble();
        } else {
            problems.add(path, "must be an integer " + range + ", was " + describe(v));
            return;
        }
        if (!range.contains(value)) {
            problems.add(path, "must be " + range + ", was " + value);
        }
    }

    private void text(Schema.Key k, String path, JsonNode v) {
        if (!v.isTextual()) {
            problems.add(path, "must be a string, was a " + Layers.kind(v));
            return;
        }
        String s = v.asText();
        if (k.notBlank() && s.isBlank()) {
            problems.add(path, "must not be empty");
            return;
        }
        String rule = switch (k.path()) {
            case "workers[].url" -> urlProblem(s);
            case "health.endpoint" -> s.startsWith("/") ? null : "must be a path starting with '/', was '" + s + "'";
            case "cluster.redis_url" -> redisProblem(s);
            case "workers[].kv_events", "workers[].kv_events_replay" -> PreciseRules.zmqProblem(s);
            case "flow.priority_header", "flow.tenant_header", "flow.deadline_header" ->
                FlowSettings.headerNameProblem(s);
            default -> null;
        };
        if (rule != null) {
            problems.add(path, rule);
        }
    }

    /** What is wrong with a worker URL, or null when it is a usable {@code http://} or {@code https://} one. */
    static String urlProblem(String url) {
        String s = url.trim();
        if (!s.contains("://")) {
            // java.net.URI would read "10.0.0.5:8000" as a scheme and say "Illegal character in scheme name"
            boolean schemeLike = s.matches("[A-Za-z][A-Za-z0-9+.-]*:/.*");
            return "must start with http:// or https://"
                    + (schemeLike ? "" : " (such as 'http://" + s.replaceFirst("^/+", "") + "')") + ", was '" + url
                    + "'";
        }
        URI u;
        try {
            u = new URI(s);
        } catch (URISyntaxException e) {
            return "not a valid URL: " + e.getMessage();
        }
        String scheme = u.getScheme() == null ? null : u.getScheme().toLowerCase(Locale.ROOT);
        if (!"http".equals(scheme) && !"https".equals(scheme)) {
            return "must be an http:// or https:// URL, was '" + url + "'";
        }
        if (u.getHost() == null || u.getHost().isEmpty()) {
            // java.net.URI leaves the host null when the authority does not parse, e.g. an out-of-range port
            return "must name a host and a port in [1, 65535] if any, was '" + url + "'";
        }
        if (u.getPort() != -1 && (u.getPort() < 1 || u.getPort() > 65535)) {
            return "the port must be in [1, 65535], was " + u.getPort() + " in '" + url + "'";
        }
        if (u.getRawQuery() != null || u.getRawFragment() != null || u.getRawUserInfo() != null) {
            return "must not carry a query, fragment or user info, was '" + url + "'";
        }
        return null;
    }

    /** A problem with the Redis URL never quotes it: it may carry a password. */
    private static String redisProblem(String url) {
        try {
            dev.cart.redis.RedisRouteSync.builder().uri(url); // parses only: no connection
            return null;
        } catch (IllegalArgumentException e) {
            return "must be a redis:// or rediss:// URI (redis://[:password@]host[:port][/db])";
        }
    }

    private void statuses(Schema.Key k, String path, JsonNode v) {
        if (!v.isArray()) {
            problems.add(path, "must be a list of HTTP statuses " + k.range() + ", was " + describe(v));
            return;
        }
        for (int i = 0; i < v.size(); i++) {
            JsonNode s = v.get(i);
            if (!s.isIntegralNumber() || !k.range().contains(s.asLong())) {
                problems.add(path + "[" + i + "]", "must be an HTTP status " + k.range() + ", was " + describe(s));
            }
        }
    }

    /**
     * A non-empty list of model names (strings, not blank, at most {@link ProxyConfig.Worker#MAX_MODELS});
     * {@code ["*"]} alone means any model.
     */
    private void models(String path, JsonNode v) {
        if (!v.isArray()) {
            problems.add(path, "must be a list of model names, was " + describe(v));
            return;
        }
        if (v.isEmpty()) {
            problems.add(
                    path,
                    "must name at least one model; leave the key out to learn the models from the replica's GET"
                            + " /v1/models");
            return;
        }
        if (v.size() > ProxyConfig.Worker.MAX_MODELS) {
            problems.add(path, "lists " + v.size() + " models, more than " + ProxyConfig.Worker.MAX_MODELS);
            return;
        }
        Set<String> names = new LinkedHashSet<>();
        for (int i = 0; i < v.size(); i++) {
            JsonNode m = v.get(i);
            if (!m.isTextual() || m.asText().isBlank()) {
                problems.add(path + "[" + i + "]", "must be a model name (a non-blank string), was " + describe(m));
                return;
            }
            names.add(m.asText());
        }
        if (names.contains(ProxyConfig.Worker.ANY_MODEL) && names.size() > 1) {
            problems.add(path, "'" + ProxyConfig.Worker.ANY_MODEL + "' (any model) must be the list's only entry");
        }
    }

    /** {@code cluster.load_ttl_ms} at least twice {@code load_interval_ms}, each as set or by default. */
    private void loadTtl(String path, ObjectNode node, ObjectNode defaults) {
        long interval = validOr(node, defaults, "load_interval_ms");
        long ttl = validOr(node, defaults, "load_ttl_ms");
        if (ttl < 2 * interval) {
            problems.add(
                    path + ".load_ttl_ms", "must be at least twice load_interval_ms (" + interval + "), was " + ttl);
        }
    }

    /**
     * {@code flow.default_band} below {@code bands}, {@code affinity_wait_ms} at most {@code max_wait_ms}
     * (each as set or by default), and three different header names.
     */
    private void flowRules(String path, ObjectNode node, ObjectNode defaults) {
        long bands = validOr(FlowSettings.class, node, defaults, "bands");
        long band = validOr(FlowSettings.class, node, defaults, "default_band");
        if (band >= bands) {
            problems.add(path + ".default_band", "must be below bands (" + bands + "), was " + band);
        }
        long maxWait = validOr(FlowSettings.class, node, defaults, "max_wait_ms");
        long affinity = validOr(FlowSettings.class, node, defaults, "affinity_wait_ms");
        if (affinity > maxWait) {
            problems.add(path + ".affinity_wait_ms", "must be at most max_wait_ms (" + maxWait + "), was " + affinity);
        }
        Set<String> names = new HashSet<>();
        for (String key : List.of("priority_header", "tenant_header", "deadline_header")) {
            JsonNode v = node.get(key);
            JsonNode d = v == null || v.isNull() ? defaults.get(key) : v;
            if (d != null && d.isTextual() && !names.add(d.asText().trim().toLowerCase(Locale.ROOT))) {
                problems.add(path + "." + key, "must differ from the other flow headers, was '" + d.asText() + "'");
            }
        }
    }

    private static long validOr(ObjectNode node, ObjectNode defaults, String key) {
        return validOr(ClusterConfig.class, node, defaults, key);
    }

    private static long validOr(Class<? extends Record> section, ObjectNode node, ObjectNode defaults, String key) {
        JsonNode v = node.get(key);
        ProxyConfig.IntRange range = Schema.of(section).key(key).range();
        return v != null && v.isIntegralNumber() && range.contains(v.asLong())
                ? v.asLong()
                : defaults.get(key).asLong();
    }

    /** A policy setting as the policy takes it: Integer or Long, Double, String or Boolean; null for anything else. */
    private static Object scalar(JsonNode v) {
        if (v.isIntegralNumber()) {
            return v.canConvertToInt() ? (Object) v.asInt() : (Object) v.asLong();
        }
        if (v.isNumber()) {
            return v.asDouble();
        }
        if (v.isTextual()) {
            return v.asText();
        }
        if (v.isBoolean()) {
            return v.asBoolean();
        }
        return null;
    }

    static String unknown(String key, Collection<String> known, String what) {
        return "unknown " + what + Names.didYouMean(key, known) + "; known " + what + "s here: "
                + String.join(", ", known);
    }

    private static String describe(JsonNode v) {
        if (v.isTextual()) {
            String s = v.asText();
            return "the string '" + (s.length() > 40 ? s.substring(0, 40) + "..." : s) + "'";
        }
        if (v.isContainerNode()) {
            return "a " + Layers.kind(v);
        }
        return v.toString();
    }

    private static List<String> names(ObjectNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
