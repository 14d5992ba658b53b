package dev.cart.proxy.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads layered YAML configuration files into a {@link ProxyConfig}.
 *
 * <p>Three steps, each done once: {@link Layers} reads the files and merges them, last one wins,
 * remembering which file set each key; {@link ConfigValidator} checks the merged tree against the keys
 * the records declare ({@link Schema}) and reports every problem at once, each as
 * {@code file: key: problem}; then Jackson binds the tree, over the defaults of {@code defaults.yaml},
 * into the records. There is no hand-written binding: a record component is a key, named in
 * {@code snake_case}; the policy's settings (the keys of {@code cache} that the routing policies
 * describe) are bound as the {@code Cache.policySettings} map. The binder never sees a tree the validator
 * refused, so binding cannot fail on a user's mistake. {@code --config-check} prints the problems.
 *
 * <p>Stateless and thread-safe: a SIGHUP reload may run while another load is under way.
 */
public final class ConfigLoader {

    /**
     * The largest configuration file read, in bytes (1 MiB). A real configuration is a few KiB even with
     * a thousand workers (about 100 KiB); the bound keeps a wrong file (a log, a dump) given by mistake,
     * or a huge one on SIGHUP, from costing the running proxy hundreds of MiB while it is parsed.
     */
    public static final int MAX_FILE_BYTES = 1024 * 1024;

    /** Binds a checked tree into the records: keys in snake_case, choices in lower case, every component given. */
    private static final ObjectMapper BINDER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(MapperFeature.ACCEPT_CASE_INSENSITIVE_ENUMS)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .build();

    private ConfigLoader() {}

    /** Reads, layers and validates {@code files}; workers must not be empty. */
    public static ProxyConfig load(List<Path> files) throws ConfigException {
        return load(files, true);
    }

    /**
     * Reads, layers and validates {@code files}.
     *
     * @param requireWorkers false only for demo mode, which supplies its own workers
     * @throws ConfigException with every problem found, each {@code file: key: problem}
     */
    public static ProxyConfig load(List<Path> files, boolean requireWorkers) throws ConfigException {
        Problems problems = new Problems();
        ObjectNode merged = Layers.read(files, problems);
        problems.throwIfAny();
        return validateAndBind(merged, requireWorkers, problems);
    }

    /** Parses YAML text (one layer, no file name in messages) and validates it; for tests and embedding. */
    public static ProxyConfig parse(String yaml) throws ConfigException {
        Problems problems = new Problems();
        ObjectNode merged = JsonNodeFactory.instance.objectNode();
        Layers.add(merged, "<text>", null, yaml, problems);
        problems.throwIfAny();
        return validateAndBind(merged, true, problems);
    }

    private static ProxyConfig validateAndBind(ObjectNode merged, boolean requireWorkers, Problems problems)
            throws ConfigException {
        ConfigValidator.validate(merged, requireWorkers, problems);
        problems.throwIfAny();
        return bind(ProxyConfig.class, effective(merged));
    }

    /**
     * The files' merged tree over the defaults, in the records' shape: each worker over the defaults of one,
     * and the policy's settings moved from {@code cache} into its {@code policy_settings}.
     */
    static ObjectNode effective(ObjectNode merged) {
        ObjectNode given = merged.deepCopy();
        JsonNode workers = given.remove("workers");
        ObjectNode out = Layers.over(Defaults.tree(), given);
        ArrayNode list = out.putArray("workers");
        if (workers != null && workers.isArray()) {
            ObjectNode template = Defaults.workerTree();
            workers.forEach(w -> list.add(Layers.over(template, (ObjectNode) w)));
        }
        nestPolicyKeys(out);
        return out;
    }

    /** Moves the keys of each section that takes policy settings, other than its own, under that component. */
    private static void nestPolicyKeys(ObjectNode root) {
        for (Schema.Key k : Schema.ROOT.keys().values()) {
            if (k.section() != null && k.kind() == Schema.Kind.SECTION && root.get(k.name()) instanceof ObjectNode s) {
                nestPolicyKeys(s, k.section());
            }
        }
    }

    private static void nestPolicyKeys(ObjectNode section, Schema.Section schema) {
        String into = schema.policyKeysName();
        if (into == null) {
            return;
        }
        ObjectNode settings = JsonNodeFactory.instance.objectNode();
        List<String> names = new ArrayList<>();
        section.fieldNames().forEachRemaining(names::add);
        for (String name : names) {
            if (schema.key(name) == null) {
                settings.set(name, section.remove(name));
            }
        }
        section.set(into, settings);
    }

    /**
     * A checked tree bound into {@code type}.
     *
     * @throws IllegalStateException if it does not bind: a tree the validator accepted always does
     */
    static <T> T bind(Class<T> type, ObjectNode tree) {
        try {
            return BINDER.treeToValue(tree, type);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a checked configuration did not bind: " + e.getOriginalMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("a checked configuration did not bind: " + e.getMessage(), e);
        }
    }

    /** {@code record} with one key set to {@code value} (for {@code --port}, {@code --host}). */
    static <R extends Record> R with(R record, String key, Object value) {
        Schema.Section schema = Schema.of(record.getClass());
        Schema.Key k = schema.key(key);
        if (k == null || k.kind() == Schema.Kind.POLICY_KEYS) {
            throw new IllegalArgumentException(schema.path() + " has no key '" + key + "'");
        }
        ObjectNode tree = Schema.toTree(record);
        tree.set(key, Schema.node(value));
        nestPolicyKeys(tree, schema);
        @SuppressWarnings("unchecked")
        Class<R> type = (Class<R>) record.getClass();
        return bind(type, tree);
    }

    /** A worker with the defaults of one, at {@code url}. */
    static ProxyConfig.Worker worker(String url) {
        ObjectNode w = Defaults.workerTree();
        w.put("url", url);
        return bind(ProxyConfig.Worker.class, w);
    }
}
