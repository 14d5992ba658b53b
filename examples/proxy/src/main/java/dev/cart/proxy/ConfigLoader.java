package dev.cart.proxy;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.cart.core.LearnMode;
import dev.cart.core.RoutingPolicies;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Reads layered YAML configuration files into a {@link ProxyConfig}.
 *
 * <p>Layering: the files are read in order and merged, last one wins. Mappings merge key by key, so an
 * overlay only names what it changes; lists and scalars are replaced whole (an overlay naming
 * {@code workers} replaces the list); an empty or comment-only file changes nothing, and so does a
 * section left empty ({@code cache:} with nothing under it).
 *
 * <p>Validation collects every problem before failing: unknown keys (named by their path, such as
 * {@code cache.treshold}, with a suggestion when one is close), values of the wrong type, values out of
 * range (with the allowed range), a missing or empty {@code workers} list and policy settings the policy
 * refuses. {@code --config-check} prints them all.
 */
final class ConfigLoader {

    /** Keys of {@code cache} handed to the routing policy as its settings when the file sets them. */
    static final Set<String> CACHE_POLICY_KEYS = new LinkedHashSet<>(List.of("threshold", "match_abs_threshold",
            "balance_abs_threshold", "balance_rel_threshold", "guard", "median_factor", "bounded_load_factor",
            "miss_placement", "hash_load_factor", "prefill_aware"));

    private static final Set<String> SECTIONS = new LinkedHashSet<>(List.of("server", "workers", "cache", "health",
            "circuit_breaker", "proxy"));

    private static final ObjectMapper YAML = new ObjectMapper(
            YAMLFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build());

    private ConfigLoader() {
    }

    /** Reads, layers and validates {@code files}; workers must not be empty. */
    static ProxyConfig load(List<Path> files) throws ConfigException {
        return load(files, true);
    }

    /**
     * Reads, layers and validates {@code files}.
     *
     * @param requireWorkers false only for demo mode, which supplies its own workers
     */
    static ProxyConfig load(List<Path> files, boolean requireWorkers) throws ConfigException {
        List<String> problems = new ArrayList<>();
        ObjectNode merged = readLayered(files, problems);
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return bind(merged, requireWorkers);
    }

    /** Parses YAML text (one layer) and validates it; for tests and embedding. */
    static ProxyConfig parse(String yaml) throws ConfigException {
        List<String> problems = new ArrayList<>();
        ObjectNode merged = JsonNodeFactory.instance.objectNode();
        JsonNode layer = readLayer("<text>", yaml, problems);
        if (layer != null) {
            merge(merged, (ObjectNode) layer);
        }
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return bind(merged, true);
    }

    static ObjectNode readLayered(List<Path> files, List<String> problems) {
        ObjectNode merged = JsonNodeFactory.instance.objectNode();
        for (Path file : files) {
            String text;
            try {
                text = Files.readString(file);
            } catch (NoSuchFileException e) {
                problems.add(file + ": no such file");
                continue;
            } catch (IOException e) {
                problems.add(file + ": cannot read: " + e.getMessage());
                continue;
            }
            JsonNode layer = readLayer(file.toString(), text, problems);
            if (layer != null) {
                merge(merged, (ObjectNode) layer);
            }
        }
        return merged;
    }

    /** One file's tree, or null when it is empty, comment-only or unusable (then a problem is added). */
    private static JsonNode readLayer(String name, String text, List<String> problems) {
        JsonNode root;
        try {
            root = YAML.readTree(text);
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? ""
                    : " (line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")";
            problems.add(name + ": not valid YAML" + where + ": " + e.getOriginalMessage());
            return null;
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return null; // empty or comment-only: changes nothing
        }
        if (!root.isObject()) {
            problems.add(name + ": the top level must be a mapping of sections, was a " + kind(root));
            return null;
        }
        return emptyToNull(root);
    }

    /** YAML's empty value ({@code key:} with nothing after it) means "not set", like null. */
    private static JsonNode emptyToNull(JsonNode n) {
        if (n.isObject()) {
            ObjectNode o = (ObjectNode) n;
            List<String> names = new ArrayList<>();
            o.fieldNames().forEachRemaining(names::add);
            for (String k : names) {
                o.set(k, emptyToNull(o.get(k)));
            }
        } else if (n.isArray()) {
            com.fasterxml.jackson.databind.node.ArrayNode a = (com.fasterxml.jackson.databind.node.ArrayNode) n;
            for (int i = 0; i < a.size(); i++) {
                a.set(i, emptyToNull(a.get(i)));
            }
        } else if (n.isTextual() && n.asText().isEmpty()) {
            return JsonNodeFactory.instance.nullNode();
        }
        return n;
    }

    /**
     * Merges {@code overlay} into {@code base}: mappings key by key, everything else replaced whole. A null
     * (empty) value over a mapping changes nothing; over a scalar it resets the key to its default.
     */
    static void merge(ObjectNode base, ObjectNode overlay) {
        Iterator<Map.Entry<String, JsonNode>> it = overlay.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode old = base.get(e.getKey());
            JsonNode value = e.getValue();
            if (old != null && old.isObject() && value.isObject()) {
                merge((ObjectNode) old, (ObjectNode) value);
            } else if (old != null && old.isObject() && value.isNull()) {
                continue;
            } else {
                base.set(e.getKey(), value.deepCopy());
            }
        }
    }

    /** Validates a merged tree and builds the configuration. */
    static ProxyConfig bind(ObjectNode root, boolean requireWorkers) throws ConfigException {
        List<String> problems = new ArrayList<>();
        Set<String> seenTop = new HashSet<>();
        for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!SECTIONS.contains(k)) {
                problems.add(unknown(k, SECTIONS));
            }
            seenTop.add(k);
        }

        Section s = Section.of(root, "server", problems);
        ProxyConfig.Server sd = ProxyConfig.Server.defaults();
        String host = s.string("host", sd.host());
        if (host != null && host.isBlank()) {
            problems.add("server.host: must not be empty");
        }
        int port = (int) s.integer("port", sd.port(), ProxyConfig.Server.PORT);
        int maxThreads = (int) s.integer("max_threads", sd.maxThreads(), ProxyConfig.Server.MAX_THREADS);
        int maxConnections = (int) s.integer("max_connections", sd.maxConnections(),
                ProxyConfig.Server.MAX_CONNECTIONS);
        int maxConcurrent = (int) s.integer("max_concurrent_requests", sd.maxConcurrentRequests(),
                ProxyConfig.Server.MAX_CONCURRENT_REQUESTS);
        int maxHeaderBytes = (int) s.integer("max_header_bytes", sd.maxHeaderBytes(),
                ProxyConfig.Server.MAX_HEADER_BYTES);
        int maxHeaders = (int) s.integer("max_headers", sd.maxHeaders(), ProxyConfig.Server.MAX_HEADERS);
        int maxLine = (int) s.integer("max_request_line_bytes", sd.maxRequestLineBytes(),
                ProxyConfig.Server.MAX_REQUEST_LINE_BYTES);
        int readTimeout = (int) s.integer("request_read_timeout_secs", sd.requestReadTimeoutSecs(),
                ProxyConfig.Server.REQUEST_READ_TIMEOUT_SECS);
        int idleTimeout = (int) s.integer("idle_timeout_secs", sd.idleTimeoutSecs(),
                ProxyConfig.Server.IDLE_TIMEOUT_SECS);
        s.finish();

        List<ProxyConfig.Worker> workers = workers(root.get("workers"), requireWorkers, problems);

        Section c = Section.of(root, "cache", problems);
        ProxyConfig.Cache cd = ProxyConfig.Cache.defaults();
        String policy = c.string("policy", cd.policy());
        long maxTreeSize = c.integer("max_tree_size", cd.maxTreeSize(), ProxyConfig.Cache.MAX_TREE_SIZE);
        int blockChars = (int) c.integer("block_chars", cd.blockChars(), ProxyConfig.Cache.BLOCK_CHARS);
        long eviction = c.integer("eviction_interval_secs", cd.evictionIntervalSecs(),
                ProxyConfig.Cache.EVICTION_INTERVAL_SECS);
        int dailyHour = (int) c.integer("daily_cleanup_hour_utc", cd.dailyCleanupHourUtc(),
                ProxyConfig.Cache.DAILY_CLEANUP_HOUR_UTC);
        long ttl = c.integer("route_ttl_secs", cd.routeTtlSecs(), ProxyConfig.Cache.ROUTE_TTL_SECS);
        LearnMode learn = c.learnMode("learn", cd.learn());
        boolean feedback = c.bool("feedback", cd.feedback());
        boolean learnAnswer = c.bool("learn_answer", cd.learnAnswer());
        ProxyConfig.Tokens td = cd.tokens();
        String tokenizer = c.string("tokenizer", td.tokenizer());
        if (tokenizer != null && (tokenizer.isBlank() || tokenizer.equals("none"))) {
            tokenizer = null;
        }
        if (tokenizer != null && !ProxyConfig.Tokens.TOKENIZERS.contains(tokenizer)) {
            problems.add("cache.tokenizer: must be one of cl100k_base, o200k_base (or none), was '" + tokenizer + "'");
            tokenizer = null;
        }
        int blockTokens = (int) c.integer("block_tokens", td.blockTokens(), ProxyConfig.Tokens.BLOCK_TOKENS);
        int tokenCacheEntries = (int) c.integer("token_cache_entries", td.cacheEntries(),
                ProxyConfig.Tokens.CACHE_ENTRIES);
        int tokenCacheMaxChars = (int) c.integer("token_cache_max_chars", td.cacheMaxChars(),
                ProxyConfig.Tokens.CACHE_MAX_CHARS);
        int maxTokenizations = (int) c.integer("max_concurrent_tokenizations", td.maxConcurrent(),
                ProxyConfig.Tokens.MAX_CONCURRENT);
        Map<String, Object> policySettings = new LinkedHashMap<>();
        for (String key : CACHE_POLICY_KEYS) {
            Object v = c.scalar(key);
            if (v != null) {
                policySettings.put(key, v);
            }
        }
        c.finish();
        if (policy != null) {
            checkPolicy(policy, policySettings, problems);
        }

        Section h = Section.of(root, "health", problems);
        ProxyConfig.Health hd = ProxyConfig.Health.defaults();
        String endpoint = h.string("endpoint", hd.endpoint());
        if (endpoint != null && !endpoint.startsWith("/")) {
            problems.add("health.endpoint: must be a path starting with '/', was '" + endpoint + "'");
        }
        int interval = (int) h.integer("interval_secs", hd.intervalSecs(), ProxyConfig.Health.INTERVAL_SECS);
        int timeout = (int) h.integer("timeout_secs", hd.timeoutSecs(), ProxyConfig.Health.TIMEOUT_SECS);
        int hFail = (int) h.integer("failure_threshold", hd.failureThreshold(), ProxyConfig.Health.FAILURE_THRESHOLD);
        int hOk = (int) h.integer("success_threshold", hd.successThreshold(), ProxyConfig.Health.SUCCESS_THRESHOLD);
        h.finish();

        Section b = Section.of(root, "circuit_breaker", problems);
        ProxyConfig.Circuit bd = ProxyConfig.Circuit.defaults();
        int cbFail = (int) b.integer("failure_threshold", bd.failureThreshold(), ProxyConfig.Circuit.FAILURE_THRESHOLD);
        int cbOk = (int) b.integer("success_threshold", bd.successThreshold(), ProxyConfig.Circuit.SUCCESS_THRESHOLD);
        int cbTimeout = (int) b.integer("timeout_secs", bd.timeoutSecs(), ProxyConfig.Circuit.TIMEOUT_SECS);
        int cbHalfOpen = (int) b.integer("half_open_max_requests", bd.halfOpenMaxRequests(),
                ProxyConfig.Circuit.HALF_OPEN_MAX_REQUESTS);
        b.finish();

        Section p = Section.of(root, "proxy", problems);
        ProxyConfig.Proxy pd = ProxyConfig.Proxy.defaults();
        int maxRetries = (int) p.integer("max_retries", pd.maxRetries(), ProxyConfig.Proxy.MAX_RETRIES);
        long backoff = p.integer("initial_backoff_ms", pd.initialBackoffMs(), ProxyConfig.Proxy.INITIAL_BACKOFF_MS);
        double multiplier = p.number("backoff_multiplier", pd.backoffMultiplier(),
                ProxyConfig.Proxy.BACKOFF_MULTIPLIER);
        double jitter = p.number("jitter_factor", pd.jitterFactor(), ProxyConfig.Proxy.JITTER_FACTOR);
        List<Integer> retryable = p.statusList("retryable_statuses", pd.retryableStatuses());
        int connect = (int) p.integer("connect_timeout_secs", pd.connectTimeoutSecs(),
                ProxyConfig.Proxy.CONNECT_TIMEOUT_SECS);
        int request = (int) p.integer("request_timeout_secs", pd.requestTimeoutSecs(),
                ProxyConfig.Proxy.REQUEST_TIMEOUT_SECS);
        boolean peerHeader = p.bool("add_routed_peer_header", pd.addRoutedPeerHeader());
        Integer mediaPolicy = p.optionalStatus("remote_media_url_policy");
        int maxBody = (int) p.integer("max_body_bytes", pd.maxBodyBytes(), ProxyConfig.Proxy.MAX_BODY_BYTES);
        boolean decisionLog = p.bool("decision_log", pd.decisionLog());
        p.finish();

        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        try {
            return new ProxyConfig(
                    new ProxyConfig.Server(host, port, maxThreads, maxConnections, maxConcurrent, maxHeaderBytes,
                            maxHeaders, maxLine, readTimeout, idleTimeout),
                    workers,
                    new ProxyConfig.Cache(policy, policySettings, maxTreeSize, blockChars, eviction, dailyHour, ttl,
                            learn, feedback, learnAnswer, new ProxyConfig.Tokens(tokenizer, blockTokens,
                            tokenCacheEntries, tokenCacheMaxChars, maxTokenizations)),
                    new ProxyConfig.Health(endpoint, interval, timeout, hFail, hOk),
                    new ProxyConfig.Circuit(cbFail, cbOk, cbTimeout, cbHalfOpen),
                    new ProxyConfig.Proxy(maxRetries, backoff, multiplier, jitter, retryable, connect, request,
                            peerHeader, mediaPolicy, maxBody, decisionLog));
        } catch (IllegalArgumentException e) { // a check the binder does not repeat; still name it
            throw new ConfigException(List.of(e.getMessage()));
        }
    }

    private static List<ProxyConfig.Worker> workers(JsonNode node, boolean required, List<String> problems) {
        List<ProxyConfig.Worker> out = new ArrayList<>();
        if (node == null || node.isNull() || (node.isArray() && node.isEmpty())) {
            if (required) {
                problems.add("workers: the list is empty; CART refuses to start without at least one worker "
                        + "(add entries like '- url: \"http://node1:8000\"')");
            }
            return out;
        }
        if (!node.isArray()) {
            problems.add("workers: must be a list of mappings with a 'url', was a " + kind(node));
            return out;
        }
        Set<String> urls = new HashSet<>();
        for (int i = 0; i < node.size(); i++) {
            String path = "workers[" + i + "]";
            JsonNode item = node.get(i);
            if (item.isTextual()) {
                problems.add(path + ": must be a mapping such as '- url: \"" + item.asText()
                        + "\"', was a plain string");
                continue;
            }
            if (!item.isObject()) {
                problems.add(path + ": must be a mapping with a 'url', was a " + kind(item));
                continue;
            }
            Section w = new Section(path, (ObjectNode) item, problems);
            String url = w.string("url", null);
            int maxLoad = (int) w.integer("max_load", ProxyConfig.Worker.DEFAULT_MAX_LOAD,
                    ProxyConfig.Worker.MAX_LOAD);
            int penalty = (int) w.integer("load_penalty", ProxyConfig.Worker.DEFAULT_LOAD_PENALTY,
                    ProxyConfig.Worker.LOAD_PENALTY);
            w.finish();
            if (url == null) {
                if (!item.has("url")) {
                    problems.add(path + ".url: required");
                }
                continue;
            }
            String normalized = normalizeUrl(path + ".url", url, problems);
            if (normalized == null) {
                continue;
            }
            if (!urls.add(normalized)) {
                problems.add(path + ".url: duplicate worker " + normalized);
                continue;
            }
            out.add(new ProxyConfig.Worker(normalized, maxLoad, penalty));
        }
        return out;
    }

    /** Checks a worker URL and returns it without a trailing slash, or null after adding a problem. */
    static String normalizeUrl(String key, String url, List<String> problems) {
        URI u;
        try {
            u = new URI(url.trim());
        } catch (URISyntaxException e) {
            problems.add(key + ": not a valid URL: " + e.getMessage());
            return null;
        }
        String scheme = u.getScheme() == null ? null : u.getScheme().toLowerCase(Locale.ROOT);
        if (!"http".equals(scheme) && !"https".equals(scheme)) {
            problems.add(key + ": must be an http:// or https:// URL, was '" + url + "'");
            return null;
        }
        if (u.getHost() == null || u.getHost().isEmpty()) {
            problems.add(key + ": must name a host, was '" + url + "'");
            return null;
        }
        if (u.getRawQuery() != null || u.getRawFragment() != null || u.getRawUserInfo() != null) {
            problems.add(key + ": must not carry a query, fragment or user info, was '" + url + "'");
            return null;
        }
        String s = url.trim();
        while (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    /**
     * Asks the policy to accept each setting on its own (so that every bad one is reported, not only the
     * first), then all of them together (for rules that relate settings to each other).
     */
    private static void checkPolicy(String policy, Map<String, Object> settings, List<String> problems) {
        int before = problems.size();
        try {
            RoutingPolicies.create(policy, Map.of());
        } catch (IllegalArgumentException e) {
            problems.add("cache.policy: " + e.getMessage());
            return;
        } catch (RuntimeException e) {
            problems.add("cache.policy: policy '" + policy + "' failed to start: " + e);
            return;
        }
        for (Map.Entry<String, Object> e : settings.entrySet()) {
            try {
                RoutingPolicies.create(policy, Map.of(e.getKey(), e.getValue()));
            } catch (RuntimeException ex) {
                problems.add(policyProblem(e.getKey(), ex));
            }
        }
        if (problems.size() == before && settings.size() > 1) {
            try {
                RoutingPolicies.create(policy, settings);
            } catch (RuntimeException ex) {
                problems.add(policyProblem(null, ex));
            }
        }
    }

    private static String policyProblem(String key, RuntimeException ex) {
        String msg = ex.getMessage() == null ? ex.toString() : ex.getMessage();
        if (key != null && msg.startsWith(key + " ")) {
            return "cache." + msg; // the policy names its setting; the file has it in the cache section
        }
        return (key == null ? "cache" : "cache." + key) + ": " + msg;
    }

    static String unknown(String path, Set<String> known) {
        int dot = path.lastIndexOf('.');
        String key = dot < 0 ? path : path.substring(dot + 1);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String k : known) {
            int d = distance(key, k);
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        String hint = best != null && bestDistance <= Math.max(2, key.length() / 4)
                ? " (did you mean '" + best + "'?)" : "";
        return path + ": unknown key" + hint + "; known keys here: " + String.join(", ", known);
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    static String kind(JsonNode n) {
        if (n.isObject()) {
            return "mapping";
        }
        if (n.isArray()) {
            return "list";
        }
        if (n.isTextual()) {
            return "string";
        }
        if (n.isBoolean()) {
            return "boolean";
        }
        if (n.isNumber()) {
            return "number";
        }
        if (n.isNull()) {
            return "null";
        }
        return n.getNodeType().name().toLowerCase(Locale.ROOT);
    }

    /** One mapping being read: typed getters that record problems and the keys they consumed. */
    static final class Section {
        private final String path;
        private final ObjectNode node;
        private final List<String> problems;
        private final Set<String> known = new LinkedHashSet<>();

        Section(String path, ObjectNode node, List<String> problems) {
            this.path = path;
            this.node = node;
            this.problems = problems;
        }

        static Section of(ObjectNode root, String name, List<String> problems) {
            JsonNode n = root.get(name);
            if (n == null || n.isNull()) {
                return new Section(name, JsonNodeFactory.instance.objectNode(), problems);
            }
            if (!n.isObject()) {
                problems.add(name + ": must be a mapping, was a " + kind(n));
                return new Section(name, JsonNodeFactory.instance.objectNode(), problems);
            }
            return new Section(name, (ObjectNode) n, problems);
        }

        /** The value of {@code key}, or null when absent or empty (then the default applies). */
        private JsonNode get(String key) {
            known.add(key);
            JsonNode v = node.get(key);
            return v == null || v.isNull() ? null : v;
        }

        private String key(String key) {
            return path + "." + key;
        }

        String string(String key, String def) {
            JsonNode v = get(key);
            if (v == null) {
                return def;
            }
            if (!v.isTextual()) {
                problems.add(key(key) + ": must be a string, was a " + kind(v));
                return def;
            }
            return v.asText();
        }

        /** An integer in {@code range}; out of range or of the wrong type, a problem and the default. */
        long integer(String key, long def, ProxyConfig.IntRange range) {
            long min = range.min();
            long max = range.max();
            JsonNode v = get(key);
            if (v == null) {
                return def;
            }
            long value;
            if (v.isIntegralNumber() && v.canConvertToLong()) {
                value = v.asLong();
            } else if (v.isFloatingPointNumber() && v.asDouble() == Math.rint(v.asDouble())
                    && Math.abs(v.asDouble()) < 9.0e15) {
                value = (long) v.asDouble();
            } else {
                problems.add(key(key) + ": must be an integer in [" + min + ", " + max + "], was "
                        + describe(v));
                return def;
            }
            if (value < min || value > max) {
                problems.add(key(key) + ": must be in [" + min + ", " + max + "], was " + value);
                return def;
            }
            return value;
        }

        /** A number in {@code range}; out of range or of the wrong type, a problem and the default. */
        double number(String key, double def, ProxyConfig.RealRange range) {
            double min = range.min();
            double max = range.max();
            JsonNode v = get(key);
            if (v == null) {
                return def;
            }
            if (!v.isNumber()) {
                problems.add(key(key) + ": must be a number in [" + min + ", " + max + "], was " + describe(v));
                return def;
            }
            double value = v.asDouble();
            if (!(value >= min && value <= max)) {
                problems.add(key(key) + ": must be in [" + min + ", " + max + "], was " + value);
                return def;
            }
            return value;
        }

        boolean bool(String key, boolean def) {
            JsonNode v = get(key);
            if (v == null) {
                return def;
            }
            if (!v.isBoolean()) {
                problems.add(key(key) + ": must be true or false, was " + describe(v));
                return def;
            }
            return v.asBoolean();
        }

        /** A status in [400, 599] or null (explicit null or absent both mean "off"). */
        Integer optionalStatus(String key) {
            JsonNode v = get(key);
            if (v == null || v.isNull()) {
                return null;
            }
            if (!v.isIntegralNumber() || !ProxyConfig.Proxy.REMOTE_MEDIA_URL_POLICY.contains(v.asLong())) {
                problems.add(key(key) + ": must be null (off) or an HTTP status in "
                        + ProxyConfig.Proxy.REMOTE_MEDIA_URL_POLICY + ", was " + describe(v));
                return null;
            }
            return v.asInt();
        }

        List<Integer> statusList(String key, List<Integer> def) {
            JsonNode v = get(key);
            if (v == null) {
                return def;
            }
            if (!v.isArray()) {
                problems.add(key(key) + ": must be a list of HTTP statuses in [400, 599], was " + describe(v));
                return def;
            }
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < v.size(); i++) {
                JsonNode s = v.get(i);
                if (!s.isIntegralNumber() || !ProxyConfig.Proxy.ERROR_STATUS.contains(s.asLong())) {
                    problems.add(key(key) + "[" + i + "]: must be an HTTP status in " + ProxyConfig.Proxy.ERROR_STATUS
                            + ", was " + describe(s));
                } else {
                    out.add(s.asInt());
                }
            }
            return out;
        }

        /** {@code on_route} or {@code on_success}. */
        LearnMode learnMode(String key, LearnMode def) {
            JsonNode v = get(key);
            if (v == null) {
                return def;
            }
            for (LearnMode m : LearnMode.values()) {
                if (v.isTextual() && m.label().equals(v.asText())) {
                    return m;
                }
            }
            problems.add(key(key) + ": must be one of on_route, on_success, was " + describe(v));
            return def;
        }

        /** A scalar handed to the policy as-is: Integer/Long, Double, String or Boolean; null if absent. */
        Object scalar(String key) {
            JsonNode v = get(key);
            if (v == null) {
                return null;
            }
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
            problems.add(key(key) + ": must be a number, string or boolean, was " + describe(v));
            return null;
        }

        /** Reports every key of this mapping that no getter asked for. */
        void finish() {
            for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
                String k = it.next();
                if (!known.contains(k)) {
                    problems.add(unknown(path + "." + k, known));
                }
            }
        }

        private static String describe(JsonNode v) {
            if (v.isTextual()) {
                String s = v.asText();
                return "the string '" + (s.length() > 40 ? s.substring(0, 40) + "..." : s) + "'";
            }
            if (v.isContainerNode()) {
                return "a " + kind(v);
            }
            return v.toString();
        }
    }
}
