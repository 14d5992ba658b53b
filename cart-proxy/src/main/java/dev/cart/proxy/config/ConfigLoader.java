package dev.cart.proxy.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.cart.core.LearnMode;
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.DoubleConsumer;
import java.util.function.LongConsumer;

/**
 * Reads layered YAML configuration files into a {@link ProxyConfig}.
 *
 * <p>Layering: the files are read in order and merged, last one wins. Mappings merge key by key, so an
 * overlay only names what it changes; lists and scalars are replaced whole (an overlay naming
 * {@code workers} replaces the list); an empty or comment-only file changes nothing, and so does a
 * section left empty ({@code cache:} with nothing under it). The merge remembers which file set each key
 * ({@link Problems}), so every problem names the file it comes from.
 *
 * <p>Validation collects every problem before failing, each as {@code file: key: problem}: unknown keys
 * and enum values (with a suggestion when one is close), values of the wrong type, values out of range
 * (with the allowed range), a missing or empty {@code workers} list and policy settings the policy
 * refuses. Each section is bound on its own ({@link #server}, {@link #workers}, {@link #cache},
 * {@link #health}, {@link #circuit}, {@link #proxy}) into its record's builder; a value is set only when
 * it is valid, so the builder's defaults stand for the rest. {@code --config-check} prints them all.
 */
public final class ConfigLoader {

    /**
     * Keys of {@code cache} handed to the routing policy as its settings when the file sets them: every
     * setting an available policy describes ({@link RoutingPolicyProvider#settings()}).
     */
    static final Set<String> CACHE_POLICY_KEYS = policyKeys();

    /**
     * The policy that checks the settings first when the configured policy name is unknown (a key it does not
     * take is checked by the first other policy that does), so a misspelled policy hides none of the other
     * problems.
     */
    private static final String FALLBACK_POLICY = ProxyConfig.Cache.DEFAULT_POLICY;

    private static final Set<String> SECTIONS =
            new LinkedHashSet<>(List.of("server", "workers", "cache", "health", "circuit_breaker", "proxy", "cluster"));

    private static final ObjectMapper YAML = new ObjectMapper(YAMLFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build());

    /**
     * The largest configuration file read, in bytes (1 MiB). A real configuration is a few KiB even with
     * a thousand workers (about 100 KiB); the bound keeps a wrong file (a log, a dump) given by mistake,
     * or a huge one on SIGHUP, from costing the running proxy hundreds of MiB while it is parsed.
     */
    public static final int MAX_FILE_BYTES = 1024 * 1024;

    private ConfigLoader() {}

    /** The file's text; at most {@link #MAX_FILE_BYTES} are read, so a larger file costs no more memory. */
    private static String readBounded(Path file) throws IOException {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(MAX_FILE_BYTES + 1);
        }
        if (bytes.length > MAX_FILE_BYTES) {
            return null;
        }
        return StandardCharsets.UTF_8
                .newDecoder()
                .decode(ByteBuffer.wrap(bytes))
                .toString();
    }

    /** Reads, layers and validates {@code files}; workers must not be empty. */
    public static ProxyConfig load(List<Path> files) throws ConfigException {
        return load(files, true);
    }

    /**
     * Reads, layers and validates {@code files}.
     *
     * @param requireWorkers false only for demo mode, which supplies its own workers
     */
    public static ProxyConfig load(List<Path> files, boolean requireWorkers) throws ConfigException {
        Problems problems = new Problems();
        ObjectNode merged = readLayered(files, problems);
        problems.throwIfAny();
        return bind(merged, requireWorkers, problems);
    }

    /** Parses YAML text (one layer, no file name in messages) and validates it; for tests and embedding. */
    public static ProxyConfig parse(String yaml) throws ConfigException {
        Problems problems = new Problems();
        ObjectNode merged = JsonNodeFactory.instance.objectNode();
        JsonNode layer = readLayer("<text>", yaml, problems);
        if (layer != null) {
            merge(merged, (ObjectNode) layer, "", null, problems);
        }
        problems.throwIfAny();
        return bind(merged, true, problems);
    }

    static ObjectNode readLayered(List<Path> files, Problems problems) {
        ObjectNode merged = JsonNodeFactory.instance.objectNode();
        for (Path file : files) {
            String text;
            try {
                text = readBounded(file);
                if (text == null) {
                    problems.file(
                            file.toString(),
                            "too large: a configuration file may have at most " + MAX_FILE_BYTES + " bytes (1 MiB)");
                    continue;
                }
            } catch (NoSuchFileException e) {
                problems.file(file.toString(), "no such file");
                continue;
            } catch (IOException e) {
                problems.file(file.toString(), "cannot read: " + e.getMessage());
                continue;
            }
            JsonNode layer = readLayer(file.toString(), text, problems);
            if (layer != null) {
                merge(merged, (ObjectNode) layer, "", file.toString(), problems);
            }
        }
        return merged;
    }

    /** One file's tree, or null when it is empty, comment-only or unusable (then a problem is added). */
    private static JsonNode readLayer(String name, String text, Problems problems) {
        JsonNode root;
        try {
            root = YAML.readTree(text);
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null
                    ? ""
                    : " (line " + e.getLocation().getLineNr() + ", column "
                            + e.getLocation().getColumnNr() + ")";
            problems.file(name, "not valid YAML" + where + ": " + e.getOriginalMessage());
            return null;
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return null; // empty or comment-only: changes nothing
        }
        if (!root.isObject()) {
            problems.file(name, "the top level must be a mapping of sections, was a " + kind(root));
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
            ArrayNode a = (ArrayNode) n;
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
     * (empty) value over a mapping changes nothing; over a scalar it resets the key to its default. Each key
     * the overlay sets is recorded as coming from {@code file} (null: no file to name).
     */
    static void merge(ObjectNode base, ObjectNode overlay, String prefix, String file, Problems problems) {
        for (Map.Entry<String, JsonNode> e : overlay.properties()) {
            String path = prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey();
            JsonNode old = base.get(e.getKey());
            JsonNode value = e.getValue();
            if (old != null && old.isObject() && value.isObject()) {
                problems.origin(path, file);
                merge((ObjectNode) old, (ObjectNode) value, path, file, problems);
            } else if (!(old != null && old.isObject() && value.isNull())) { // a null over a section keeps it
                base.set(e.getKey(), value.deepCopy());
                problems.originOfTree(path, value, file);
            }
        }
    }

    /** Validates a merged tree and builds the configuration, one section at a time. */
    static ProxyConfig bind(ObjectNode root, boolean requireWorkers, Problems problems) throws ConfigException {
        for (String k : fieldNames(root)) {
            if (!SECTIONS.contains(k)) {
                problems.add(k, unknown(k, SECTIONS, "section"));
            }
        }
        ProxyConfig.Server server = server(Section.of(root, "server", problems));
        List<ProxyConfig.Worker> workers = workers(root, requireWorkers, problems);
        ProxyConfig.Cache cache = cache(Section.of(root, "cache", problems));
        ProxyConfig.Health health = health(Section.of(root, "health", problems));
        ProxyConfig.Circuit circuit = circuit(Section.of(root, "circuit_breaker", problems));
        ProxyConfig.Proxy proxy = proxy(Section.of(root, "proxy", problems));
        ClusterConfig cluster = cluster(Section.of(root, "cluster", problems));
        problems.throwIfAny();
        return new ProxyConfig(server, workers, cache, health, circuit, proxy, cluster);
    }

    private static ProxyConfig.Server server(Section s) {
        ProxyConfig.Server.Builder b = ProxyConfig.Server.builder();
        s.text("host", v -> {
            if (v.isBlank()) {
                s.problem("host", "must not be empty");
            } else {
                b.host(v);
            }
        });
        s.integer(ProxyConfig.Server.PORT, v -> b.port((int) v));
        s.integer(ProxyConfig.Server.MAX_THREADS, v -> b.maxThreads((int) v));
        s.integer(ProxyConfig.Server.MAX_CONNECTIONS, v -> b.maxConnections((int) v));
        s.integer(ProxyConfig.Server.MAX_CONCURRENT_REQUESTS, v -> b.maxConcurrentRequests((int) v));
        s.integer(ProxyConfig.Server.MAX_HEADER_BYTES, v -> b.maxHeaderBytes((int) v));
        s.integer(ProxyConfig.Server.MAX_HEADERS, v -> b.maxHeaders((int) v));
        s.integer(ProxyConfig.Server.MAX_REQUEST_LINE_BYTES, v -> b.maxRequestLineBytes((int) v));
        s.integer(ProxyConfig.Server.REQUEST_READ_TIMEOUT_SECS, v -> b.requestReadTimeoutSecs((int) v));
        s.integer(ProxyConfig.Server.IDLE_TIMEOUT_SECS, v -> b.idleTimeoutSecs((int) v));
        s.integer(ProxyConfig.Server.MAX_BUFFERED_BODY_BYTES, b::maxBufferedBodyBytes);
        s.integer(ProxyConfig.Server.MAX_BUFFERED_ANSWER_BYTES, b::maxBufferedAnswerBytes);
        Map<String, ProxyConfig.Server.Engine> engines = new LinkedHashMap<>();
        for (ProxyConfig.Server.Engine e : ProxyConfig.Server.Engine.values()) {
            engines.put(e.label(), e);
        }
        s.choice("engine", engines, b::engine);
        s.finish();
        return b.build();
    }

    private static List<ProxyConfig.Worker> workers(ObjectNode root, boolean requireWorkers, Problems problems) {
        List<ProxyConfig.Worker> out = new ArrayList<>();
        String example = " (add entries like '- url: \"http://node1:8000\"')";
        if (!root.has("workers")) {
            if (requireWorkers) {
                problems.add("workers", "missing: CART needs at least one worker; add a 'workers' section" + example);
            }
            return out;
        }
        JsonNode node = root.get("workers");
        if (node.isNull() || (node.isArray() && node.isEmpty())) {
            if (requireWorkers) {
                problems.add(
                        "workers",
                        (node.isNull() ? "set to nothing" : "the list is empty")
                                + "; CART refuses to start without at least one worker" + example);
            }
            return out;
        }
        if (!node.isArray()) {
            problems.add("workers", "must be a list of mappings with a 'url', was a " + kind(node));
            return out;
        }
        Set<String> urls = new HashSet<>();
        for (int i = 0; i < node.size(); i++) {
            String path = "workers[" + i + "]";
            JsonNode item = node.get(i);
            if (item.isTextual()) {
                problems.add(path, "must be a mapping such as '- url: \"" + item.asText() + "\"', was a plain string");
                continue;
            }
            if (!item.isObject()) {
                problems.add(path, "must be a mapping with a 'url', was a " + kind(item));
                continue;
            }
            ProxyConfig.Worker w = worker(new Section(path, (ObjectNode) item, problems), urls);
            if (w != null) {
                out.add(w);
            }
        }
        return out;
    }

    /** One worker, or null after a problem (its URL missing, invalid or a duplicate). */
    private static ProxyConfig.Worker worker(Section w, Set<String> urls) {
        String[] url = new String[1];
        long[] maxLoad = {ProxyConfig.Worker.DEFAULT_MAX_LOAD};
        long[] penalty = {ProxyConfig.Worker.DEFAULT_LOAD_PENALTY};
        boolean[] urlSet = new boolean[1];
        w.text("url", v -> {
            urlSet[0] = true;
            url[0] = normalizeUrl(w, v);
        });
        w.integer(ProxyConfig.Worker.MAX_LOAD, v -> maxLoad[0] = v);
        w.integer(ProxyConfig.Worker.LOAD_PENALTY, v -> penalty[0] = v);
        List<String> models = new ArrayList<>();
        w.modelList(ProxyConfig.Worker.MODELS, models::addAll);
        w.finish();
        if (url[0] == null) {
            if (!urlSet[0] && !w.node.has("url")) {
                w.problem("url", "required");
            }
            return null;
        }
        if (!urls.add(url[0])) {
            w.problem("url", "duplicate worker " + url[0]);
            return null;
        }
        return new ProxyConfig.Worker(url[0], (int) maxLoad[0], (int) penalty[0], models);
    }

    /** Checks a worker URL and returns it without a trailing slash, or null after adding a problem. */
    private static String normalizeUrl(Section w, String url) {
        URI u;
        try {
            u = new URI(url.trim());
        } catch (URISyntaxException e) {
            w.problem("url", "not a valid URL: " + e.getMessage());
            return null;
        }
        String scheme = u.getScheme() == null ? null : u.getScheme().toLowerCase(Locale.ROOT);
        if (!"http".equals(scheme) && !"https".equals(scheme)) {
            w.problem("url", "must be an http:// or https:// URL, was '" + url + "'");
            return null;
        }
        if (u.getHost() == null || u.getHost().isEmpty()) {
            // java.net.URI leaves the host null when the authority does not parse, e.g. an out-of-range port
            w.problem("url", "must name a host and a port in [1, 65535] if any, was '" + url + "'");
            return null;
        }
        if (u.getPort() != -1 && (u.getPort() < 1 || u.getPort() > 65535)) {
            w.problem("url", "the port must be in [1, 65535], was " + u.getPort() + " in '" + url + "'");
            return null;
        }
        if (u.getRawQuery() != null || u.getRawFragment() != null || u.getRawUserInfo() != null) {
            w.problem("url", "must not carry a query, fragment or user info, was '" + url + "'");
            return null;
        }
        String s = url.trim();
        while (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    private static ProxyConfig.Cache cache(Section c) {
        ProxyConfig.Cache.Builder b = ProxyConfig.Cache.builder();
        String[] policy = {ProxyConfig.Cache.DEFAULT_POLICY};
        c.text("policy", v -> policy[0] = v);
        b.policy(policy[0]);
        c.integer(ProxyConfig.Cache.MAX_TREE_SIZE, b::maxTreeSize);
        c.integer(ProxyConfig.Cache.BLOCK_CHARS, v -> b.blockChars((int) v));
        c.integer(ProxyConfig.Cache.EVICTION_INTERVAL_SECS, b::evictionIntervalSecs);
        c.integer(ProxyConfig.Cache.DAILY_CLEANUP_HOUR_UTC, v -> b.dailyCleanupHourUtc((int) v));
        c.integer(ProxyConfig.Cache.ROUTE_TTL_SECS, b::routeTtlSecs);
        Map<String, LearnMode> learnModes = new LinkedHashMap<>();
        for (LearnMode m : LearnMode.values()) {
            learnModes.put(m.label(), m);
        }
        c.choice("learn", learnModes, b::learn);
        c.bool("feedback", b::feedback);
        c.bool("learn_answer", b::learnAnswer);
        b.tokens(tokens(c));
        Map<String, Object> policySettings = new LinkedHashMap<>();
        for (String key : CACHE_POLICY_KEYS) {
            c.scalar(key, v -> policySettings.put(key, v));
        }
        policySettings.forEach(b::policySetting);
        c.finish();
        checkPolicy(c, policy[0], policySettings);
        return b.build();
    }

    /** The token-mode keys of the {@code cache} section. */
    private static ProxyConfig.Tokens tokens(Section c) {
        ProxyConfig.Tokens.Builder t = ProxyConfig.Tokens.builder();
        Map<String, String> tokenizers = new LinkedHashMap<>();
        for (String name : List.of("cl100k_base", "o200k_base", "none")) {
            tokenizers.put(name, name);
        }
        c.choice("tokenizer", tokenizers, v -> t.tokenizer(v.equals("none") ? null : v));
        c.integer(ProxyConfig.Tokens.BLOCK_TOKENS, v -> t.blockTokens((int) v));
        c.integer(ProxyConfig.Tokens.CACHE_ENTRIES, v -> t.cacheEntries((int) v));
        c.integer(ProxyConfig.Tokens.CACHE_MAX_CHARS, v -> t.cacheMaxChars((int) v));
        c.integer(ProxyConfig.Tokens.MAX_CONCURRENT, v -> t.maxConcurrent((int) v));
        return t.build();
    }

    private static ProxyConfig.Health health(Section h) {
        ProxyConfig.Health.Builder b = ProxyConfig.Health.builder();
        h.text("endpoint", v -> {
            if (v.startsWith("/")) {
                b.endpoint(v);
            } else {
                h.problem("endpoint", "must be a path starting with '/', was '" + v + "'");
            }
        });
        h.integer(ProxyConfig.Health.INTERVAL_SECS, v -> b.intervalSecs((int) v));
        h.integer(ProxyConfig.Health.TIMEOUT_SECS, v -> b.timeoutSecs((int) v));
        h.integer(ProxyConfig.Health.FAILURE_THRESHOLD, v -> b.failureThreshold((int) v));
        h.integer(ProxyConfig.Health.SUCCESS_THRESHOLD, v -> b.successThreshold((int) v));
        h.finish();
        return b.build();
    }

    private static ProxyConfig.Circuit circuit(Section s) {
        ProxyConfig.Circuit.Builder b = ProxyConfig.Circuit.builder();
        s.integer(ProxyConfig.Circuit.FAILURE_THRESHOLD, v -> b.failureThreshold((int) v));
        s.integer(ProxyConfig.Circuit.SUCCESS_THRESHOLD, v -> b.successThreshold((int) v));
        s.integer(ProxyConfig.Circuit.TIMEOUT_SECS, v -> b.timeoutSecs((int) v));
        s.integer(ProxyConfig.Circuit.HALF_OPEN_MAX_REQUESTS, v -> b.halfOpenMaxRequests((int) v));
        s.finish();
        return b.build();
    }

    private static ProxyConfig.Proxy proxy(Section p) {
        ProxyConfig.Proxy.Builder b = ProxyConfig.Proxy.builder();
        p.integer(ProxyConfig.Proxy.MAX_RETRIES, v -> b.maxRetries((int) v));
        p.integer(ProxyConfig.Proxy.INITIAL_BACKOFF_MS, b::initialBackoffMs);
        p.number(ProxyConfig.Proxy.BACKOFF_MULTIPLIER, b::backoffMultiplier);
        p.number(ProxyConfig.Proxy.JITTER_FACTOR, b::jitterFactor);
        p.statusList("retryable_statuses", ProxyConfig.Proxy.ERROR_STATUS, b::retryableStatuses);
        p.integer(ProxyConfig.Proxy.CONNECT_TIMEOUT_SECS, v -> b.connectTimeoutSecs((int) v));
        p.integer(ProxyConfig.Proxy.REQUEST_TIMEOUT_SECS, v -> b.requestTimeoutSecs((int) v));
        p.bool("add_routed_peer_header", b::addRoutedPeerHeader);
        p.optionalStatus(ProxyConfig.Proxy.REMOTE_MEDIA_URL_POLICY, b::remoteMediaUrlPolicy);
        p.integer(ProxyConfig.Proxy.MAX_BODY_BYTES, v -> b.maxBodyBytes((int) v));
        p.bool("decision_log", b::decisionLog);
        p.finish();
        return b.build();
    }

    /** Section {@code cluster}; a problem with the Redis URL never quotes it (it may carry a password). */
    private static ClusterConfig cluster(Section s) {
        ClusterConfig.Builder b = ClusterConfig.builder();
        s.text("redis_url", v -> {
            try {
                dev.cart.redis.RedisRouteSync.builder().uri(v); // parses only: no connection
                b.redisUrl(v);
            } catch (IllegalArgumentException e) {
                s.problem("redis_url", "must be a redis:// or rediss:// URI (redis://[:password@]host[:port][/db])");
            }
        });
        s.text("stream", v -> {
            if (v.isBlank()) {
                s.problem("stream", "must not be empty");
            } else {
                b.stream(v);
            }
        });
        s.text("instance_id", v -> {
            if (v.isBlank()) {
                s.problem("instance_id", "must not be empty");
            } else {
                b.instanceId(v);
            }
        });
        s.integer(ClusterConfig.MAX_LEN, b::maxLen);
        s.integer(ClusterConfig.BATCH_EVENTS, v -> b.batchEvents((int) v));
        s.integer(ClusterConfig.BATCH_DELAY_MS, v -> b.batchDelayMs((int) v));
        s.integer(ClusterConfig.BUFFER_EVENTS, v -> b.bufferEvents((int) v));
        int[] load = {100, 1_000};
        s.integer(ClusterConfig.LOAD_INTERVAL_MS, v -> {
            b.loadIntervalMs((int) v);
            load[0] = (int) v;
        });
        s.integer(ClusterConfig.LOAD_TTL_MS, v -> {
            b.loadTtlMs((int) v);
            load[1] = (int) v;
        });
        s.integer(ClusterConfig.TIMEOUT_MS, v -> b.timeoutMs((int) v));
        s.finish();
        if (load[1] < 2L * load[0]) {
            s.problem("load_ttl_ms", "must be at least twice load_interval_ms (" + load[0] + "), was " + load[1]);
            return ClusterConfig.OFF;
        }
        return b.build();
    }

    private static Set<String> policyKeys() {
        Set<String> keys = new TreeSet<>();
        for (RoutingPolicyProvider p : RoutingPolicyProvider.available().values()) {
            for (PolicySettings.Setting<?> setting : p.settings().list()) {
                keys.add(setting.name());
            }
        }
        return Collections.unmodifiableSet(keys);
    }

    /**
     * Checks the settings against the policy's description ({@link PolicySettings#problems}: every bad one
     * is reported, with its range), then makes the policy with all of them (for rules that relate settings to
     * each other). A key another policy takes is named as such. An unknown policy name is reported, and the
     * settings are still checked, each by the first policy that takes it ({@code cache_aware} first), so that
     * the name's problem hides none of the others.
     */
    private static void checkPolicy(Section c, String policy, Map<String, Object> settings) {
        Map<String, RoutingPolicyProvider> available = RoutingPolicyProvider.available();
        RoutingPolicyProvider provider;
        try {
            provider = RoutingPolicyProvider.named(policy);
        } catch (IllegalArgumentException e) {
            c.problem("policy", e.getMessage());
            for (Map.Entry<String, Object> setting : settings.entrySet()) {
                List<RoutingPolicyProvider> readers = readersOf(setting.getKey(), available);
                RoutingPolicyProvider reader = available.get(FALLBACK_POLICY);
                if (!readers.contains(reader)) {
                    reader = readers.isEmpty() ? null : readers.get(0);
                }
                if (reader != null) {
                    report(c, reader.settings().problems(Map.of(setting.getKey(), setting.getValue())));
                }
            }
            return;
        }
        List<PolicySettings.Problem> problems = provider.settings().problems(settings);
        for (PolicySettings.Problem p : problems) {
            if (provider.settings().setting(p.key()) == null) {
                List<String> by = new ArrayList<>();
                readersOf(p.key(), available).forEach(r -> by.add(r.name()));
                c.problem(
                        p.key(),
                        "not a setting of policy '" + policy + "'"
                                + (by.isEmpty() ? "" : " (a setting of " + String.join(" and ", by) + ")"));
            } else {
                report(c, List.of(p));
            }
        }
        if (problems.isEmpty()) {
            try {
                provider.create(settings);
            } catch (IllegalArgumentException e) {
                c.sectionProblem(e.getMessage());
            } catch (RuntimeException e) {
                c.problem("policy", "policy '" + policy + "' failed to start: " + e);
            }
        }
    }

    private static void report(Section c, List<PolicySettings.Problem> problems) {
        for (PolicySettings.Problem p : problems) {
            c.problem(p.key(), p.problem());
        }
    }

    /** The available policies that take the setting {@code key}, by name. */
    private static List<RoutingPolicyProvider> readersOf(String key, Map<String, RoutingPolicyProvider> available) {
        List<RoutingPolicyProvider> by = new ArrayList<>();
        for (RoutingPolicyProvider p : available.values()) {
            if (p.settings().setting(key) != null) {
                by.add(p);
            }
        }
        return by;
    }

    static String unknown(String key, Set<String> known, String what) {
        return "unknown " + what + suggestion(key, known) + "; known " + what + "s here: " + String.join(", ", known);
    }

    /** {@code " (did you mean 'x'?)"} when one of {@code known} is close to {@code given}, else empty. */
    static String suggestion(String given, Iterable<String> known) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String k : known) {
            int d = distance(given.toLowerCase(Locale.ROOT), k);
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        if (best != null && !given.equals(best) && bestDistance <= Math.max(2, given.length() / 4)) {
            return " (did you mean '" + best + "'?)";
        }
        for (String k : known) {
            if (given.length() >= 3 && k.startsWith(given.toLowerCase(Locale.ROOT))) {
                return " (did you mean '" + k + "'?)"; // a name cut short: cl100k for cl100k_base
            }
        }
        return "";
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

    private static List<String> fieldNames(ObjectNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
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

    /**
     * The problems found so far, each written {@code file: key: problem} (the file that set the key, or the
     * last file that set an enclosing one; no file for text parsed without one), and where each key came
     * from.
     */
    static final class Problems {
        private final List<String> list = new ArrayList<>();
        private final Map<String, String> origins = new LinkedHashMap<>();

        /** A problem of {@code key} (a path such as {@code cache.threshold} or {@code workers[0].url}). */
        void add(String key, String problem) {
            String file = originOf(key);
            list.add((file == null ? "" : file + ": ") + key + ": " + problem);
        }

        /** A problem of a whole file (unreadable, not YAML). */
        void file(String file, String problem) {
            list.add(file + ": " + problem);
        }

        void origin(String key, String file) {
            if (file != null) {
                origins.put(key, file);
            }
        }

        /** Records {@code file} as the origin of {@code key} and of every key below it. */
        void originOfTree(String key, JsonNode value, String file) {
            origin(key, file);
            if (value.isObject()) {
                for (Map.Entry<String, JsonNode> e : value.properties()) {
                    originOfTree(key + "." + e.getKey(), e.getValue(), file);
                }
            }
        }

        private String originOf(String key) {
            String k = key;
            while (true) {
                String file = origins.get(k);
                if (file != null) {
                    return file;
                }
                int cut = Math.max(k.lastIndexOf('.'), k.lastIndexOf('['));
                if (cut <= 0) {
                    return null;
                }
                k = k.substring(0, cut);
            }
        }

        void throwIfAny() throws ConfigException {
            if (!list.isEmpty()) {
                throw new ConfigException(list);
            }
        }
    }

    /**
     * One mapping being read: typed reads that hand a valid value to a setter (and leave the default when
     * the key is absent, empty or invalid), record a problem for an invalid one, and remember the keys they
     * asked for so that {@link #finish()} reports the others as unknown.
     */
    static final class Section {
        private final String path;
        private final ObjectNode node;
        private final Problems problems;
        private final Set<String> known = new LinkedHashSet<>();

        Section(String path, ObjectNode node, Problems problems) {
            this.path = path;
            this.node = node;
            this.problems = problems;
        }

        static Section of(ObjectNode root, String name, Problems problems) {
            JsonNode n = root.get(name);
            if (n == null || n.isNull()) {
                return new Section(name, JsonNodeFactory.instance.objectNode(), problems);
            }
            if (!n.isObject()) {
                problems.add(name, "must be a mapping, was a " + kind(n));
                return new Section(name, JsonNodeFactory.instance.objectNode(), problems);
            }
            return new Section(name, (ObjectNode) n, problems);
        }

        void problem(String key, String problem) {
            problems.add(path + "." + key, problem);
        }

        void sectionProblem(String problem) {
            problems.add(path, problem);
        }

        /** The value of {@code key}, or null when absent or empty (then the default applies). */
        private JsonNode get(String key) {
            known.add(key);
            JsonNode v = node.get(key);
            return v == null || v.isNull() ? null : v;
        }

        void text(String key, Consumer<String> set) {
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (!v.isTextual()) {
                problem(key, "must be a string, was a " + kind(v));
                return;
            }
            set.accept(v.asText());
        }

        /** An integer in {@code range} (its key names the setting within this section). */
        void integer(ProxyConfig.IntRange range, LongConsumer set) {
            String key = range.name();
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            long value;
            if (v.isIntegralNumber() && v.canConvertToLong()) {
                value = v.asLong();
            } else if (v.isFloatingPointNumber()
                    && v.asDouble() == Math.rint(v.asDouble())
                    && Math.abs(v.asDouble()) < 9.0e15) {
                value = (long) v.asDouble();
            } else {
                problem(key, "must be an integer " + range + ", was " + describe(v));
                return;
            }
            if (!range.contains(value)) {
                problem(key, "must be " + range + ", was " + value);
                return;
            }
            set.accept(value);
        }

        /** A number in {@code range}. */
        void number(ProxyConfig.RealRange range, DoubleConsumer set) {
            String key = range.name();
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (!v.isNumber()) {
                problem(key, "must be a number " + range + ", was " + describe(v));
                return;
            }
            double value = v.asDouble();
            if (!range.contains(value)) {
                problem(key, "must be " + range + ", was " + ProxyConfig.RealRange.format(value));
                return;
            }
            set.accept(value);
        }

        void bool(String key, Consumer<Boolean> set) {
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (!v.isBoolean()) {
                problem(key, "must be true or false, was " + describe(v));
                return;
            }
            set.accept(v.asBoolean());
        }

        /** One of {@code allowed}'s keys; a misspelling gets a suggestion. */
        <T> void choice(String key, Map<String, T> allowed, Consumer<T> set) {
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            T value = v.isTextual() ? allowed.get(v.asText()) : null;
            if (value == null) {
                problem(
                        key,
                        "must be one of " + String.join(", ", allowed.keySet()) + ", was " + describe(v)
                                + (v.isTextual() ? suggestion(v.asText(), allowed.keySet()) : ""));
                return;
            }
            set.accept(value);
        }

        /** Null (off) or an HTTP status in {@code range}. */
        void optionalStatus(ProxyConfig.IntRange range, Consumer<Integer> set) {
            String key = range.name();
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (!v.isIntegralNumber() || !range.contains(v.asLong())) {
                problem(key, "must be null (off) or an HTTP status " + range + ", was " + describe(v));
                return;
            }
            set.accept(v.asInt());
        }

        /** A list of HTTP statuses, each in {@code range}; the valid ones are kept. */
        void statusList(String key, ProxyConfig.IntRange range, Consumer<List<Integer>> set) {
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (!v.isArray()) {
                problem(key, "must be a list of HTTP statuses " + range + ", was " + describe(v));
                return;
            }
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < v.size(); i++) {
                JsonNode s = v.get(i);
                if (!s.isIntegralNumber() || !range.contains(s.asLong())) {
                    problem(key + "[" + i + "]", "must be an HTTP status " + range + ", was " + describe(s));
                } else {
                    out.add(s.asInt());
                }
            }
            set.accept(out);
        }

        /**
         * A non-empty list of model names (strings, not blank, at most {@link ProxyConfig.Worker#MAX_MODELS});
         * repeats count once; {@code ["*"]} alone means any model. Absent or null: nothing is set (the
         * models are discovered).
         */
        void modelList(String key, Consumer<List<String>> set) {
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (!v.isArray()) {
                problem(key, "must be a list of model names, was " + describe(v));
                return;
            }
            if (v.isEmpty()) {
                problem(
                        key,
                        "must name at least one model; leave the key out to learn the models from the"
                                + " replica's GET /v1/models");
                return;
            }
            if (v.size() > ProxyConfig.Worker.MAX_MODELS) {
                problem(key, "lists " + v.size() + " models, more than " + ProxyConfig.Worker.MAX_MODELS);
                return;
            }
            LinkedHashSet<String> out = new LinkedHashSet<>();
            for (int i = 0; i < v.size(); i++) {
                JsonNode m = v.get(i);
                if (!m.isTextual() || m.asText().isBlank()) {
                    problem(key + "[" + i + "]", "must be a model name (a non-blank string), was " + describe(m));
                    return;
                }
                out.add(m.asText());
            }
            if (out.contains(ProxyConfig.Worker.ANY_MODEL) && out.size() > 1) {
                problem(key, "'" + ProxyConfig.Worker.ANY_MODEL + "' (any model) must be the list's only entry");
                return;
            }
            set.accept(List.copyOf(out));
        }

        /** A scalar handed to the policy as it is: Integer/Long, Double, String or Boolean. */
        void scalar(String key, Consumer<Object> set) {
            JsonNode v = get(key);
            if (v == null) {
                return;
            }
            if (v.isIntegralNumber()) {
                set.accept(v.canConvertToInt() ? (Object) v.asInt() : (Object) v.asLong());
            } else if (v.isNumber()) {
                set.accept(v.asDouble());
            } else if (v.isTextual()) {
                set.accept(v.asText());
            } else if (v.isBoolean()) {
                set.accept(v.asBoolean());
            } else {
                problem(key, "must be a number, string or boolean, was " + describe(v));
            }
        }

        /** Reports every key of this mapping that no read asked for. */
        void finish() {
            for (String k : fieldNames(node)) {
                if (!known.contains(k)) {
                    problem(k, unknown(k, known, "key"));
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
