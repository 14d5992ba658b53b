package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.spi.PolicySettings;
import dev.cart.core.spi.RoutingPolicyProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@code config.example.yaml} and {@code docs/configuration.md} name every key the binder knows (the records'
 * keys and every setting an available policy describes), and no other, with the binder's defaults; the
 * example's comment on {@code policy} and the docs' row list every available policy. A key added to a
 * record, or a policy's new setting, fails here until both say it.
 */
class ExampleConfigTest {

    private static final Path ROOT =
            Path.of(System.getProperty("user.dir")).resolve("..").normalize();

    /** A commented-out key ({@code # models: [...]}, {@code #   redis_url: ...}): the example shows it off. */
    private static final Pattern COMMENTED_KEY = Pattern.compile("^(\\s*)# ((?:\\s*)[a-z0-9_]+:(?: .*)?)$");

    /** The example's values that are examples, not defaults. */
    private static final Set<String> EXAMPLE_VALUES = Set.of(
            "workers[].url",
            "workers[].models",
            "workers[].kv_events",
            "workers[].kv_events_replay",
            "cluster.redis_url",
            "kv_events.model");

    /** Every key a file may write: the records' and the policies' settings under {@code cache}. */
    private static Set<String> binderKeys() {
        Set<String> keys = new TreeSet<>(Schema.keyPaths());
        PolicyCheck.KEYS.forEach(k -> keys.add("cache." + k));
        return keys;
    }

    /** The example with its commented-out keys taken in, as one YAML tree. */
    private static ObjectNode exampleWithEveryKey() throws Exception {
        StringBuilder text = new StringBuilder();
        for (String line : Files.readAllLines(ROOT.resolve("config.example.yaml"))) {
            Matcher m = COMMENTED_KEY.matcher(line);
            text.append(m.matches() ? m.group(1) + m.group(2) : line).append('\n');
        }
        return (ObjectNode) Layers.YAML.readTree(text.toString());
    }

    /** Each key's path and value: {@code server.port}, {@code workers[].url} (every entry), {@code cache.threshold}. */
    private static Map<String, JsonNode> paths(ObjectNode root) {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        root.properties().forEach(section -> {
            if (section.getValue().isArray()) {
                section.getValue()
                        .forEach(entry -> entry.properties()
                                .forEach(e -> out.put(section.getKey() + "[]." + e.getKey(), e.getValue())));
            } else {
                section.getValue()
                        .properties()
                        .forEach(e -> out.put(section.getKey() + "." + e.getKey(), e.getValue()));
            }
        });
        return out;
    }

    /** The first cell of each row of the tables under "## Keys": the documented keys, with their default cell. */
    private static Map<String, List<String>> docsRows() throws Exception {
        String docs = Files.readString(ROOT.resolve("docs/configuration.md"));
        String keys = docs.substring(docs.indexOf("\n## Keys\n"));
        keys = keys.substring(0, keys.indexOf("\n## ", 2));
        Map<String, List<String>> rows = new LinkedHashMap<>();
        for (String line : keys.split("\n")) {
            if (line.startsWith("| `")) {
                List<String> cells = new ArrayList<>();
                for (String c : line.substring(1).split(" \\| ")) {
                    cells.add(c.trim());
                }
                rows.put(cells.get(0).replace("`", ""), cells);
            }
        }
        return rows;
    }

    @Test
    void theExampleNamesEveryKeyTheBinderKnowsAndNoOther() throws Exception {
        assertEquals(binderKeys(), new TreeSet<>(paths(exampleWithEveryKey()).keySet()));
    }

    @Test
    void theDocsTablesNameEveryKeyTheBinderKnowsAndNoOther() throws Exception {
        assertEquals(binderKeys(), new TreeSet<>(docsRows().keySet()));
    }

    @Test
    void theExampleAndTheDocsStateTheDefaults() throws Exception {
        Map<String, JsonNode> defaults = paths(Defaults.tree());
        String examplePolicy = exampleWithEveryKey().get("cache").get("policy").asText();
        Map<String, List<String>> docs = docsRows();
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : paths(exampleWithEveryKey()).entrySet()) {
            String key = e.getKey();
            if (EXAMPLE_VALUES.contains(key)) {
                continue;
            }
            Object expected = defaults.containsKey(key)
                    ? value(defaults.get(key))
                    : policyDefault(key.substring("cache.".length()), examplePolicy);
            if (!same(expected, value(e.getValue()))) {
                wrong.add("example " + key + ": " + e.getValue() + ", the default is " + expected);
            }
            String cell = docs.get(key).get(1);
            if (expected != null && cell.startsWith("`")) {
                Object documented = value(Layers.YAML.readTree(cell.substring(1, cell.indexOf('`', 1))));
                if (!same(expected, documented)) {
                    wrong.add("docs " + key + ": " + cell + ", the default is " + expected);
                }
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void theDocsStateTheRanges() throws Exception {
        Map<String, List<String>> docs = docsRows();
        List<String> wrong = new ArrayList<>();
        ranges(Schema.ROOT, docs, wrong);
        assertEquals(List.of(), wrong);
    }

    /** Each bounded key's "allowed" cell names its least and, when it has one, its greatest value. */
    private static void ranges(Schema.Section s, Map<String, List<String>> docs, List<String> wrong) {
        for (Schema.Key k : s.keys().values()) {
            if (k.section() != null) {
                ranges(k.section(), docs, wrong);
                continue;
            }
            List<String> ends = new ArrayList<>();
            if (k.range() != null) {
                ends.add(Long.toString(k.range().min()));
                if (k.range().max() < Integer.MAX_VALUE) {
                    ends.add(Long.toString(k.range().max()));
                }
            } else if (k.realRange() != null) {
                ends.add(ProxyConfig.RealRange.format(k.realRange().min()));
                ends.add(ProxyConfig.RealRange.format(k.realRange().max()));
            }
            if (ends.isEmpty()) {
                continue;
            }
            String cell = docs.get(k.path()).get(2).replace(",", "").replace("2^50", Long.toString(1L << 50));
            for (String end : ends) {
                if (!Pattern.compile("(?<![0-9.])" + Pattern.quote(end) + "(?![0-9.])")
                        .matcher(cell)
                        .find()) {
                    wrong.add(k.path() + ": the docs say " + docs.get(k.path()).get(2) + ", the range is "
                            + (k.range() != null ? k.range() : k.realRange()));
                }
            }
        }
    }

    @Test
    void theExampleAndTheDocsListEveryPolicy() throws Exception {
        Set<String> available = RoutingPolicyProvider.available().keySet();
        String policyLine = Files.readAllLines(ROOT.resolve("config.example.yaml")).stream()
                .filter(l -> l.trim().startsWith("policy:"))
                .findFirst()
                .orElseThrow();
        Set<String> inExample =
                Set.of(policyLine.substring(policyLine.indexOf('#') + 1).trim().split("\\s*\\|\\s*"));
        assertEquals(new TreeSet<>(available), new TreeSet<>(inExample), policyLine);
        String docsCell = docsRows().get("cache.policy").get(2);
        Set<String> inDocs = Pattern.compile("`([a-z_]+)`")
                .matcher(docsCell)
                .results()
                .map(r -> r.group(1))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(available), inDocs, docsCell);
    }

    /** The default of a policy setting: the example's policy's when it takes it, else the first that does. */
    private static Object policyDefault(String key, String examplePolicy) {
        PolicySettings.Setting<?> own =
                RoutingPolicyProvider.named(examplePolicy).settings().setting(key);
        if (own != null) {
            return value(own.defaultValue());
        }
        for (RoutingPolicyProvider p : RoutingPolicyProvider.available().values()) {
            if (p.settings().setting(key) != null) {
                return value(p.settings().setting(key).defaultValue());
            }
        }
        throw new AssertionError("no policy takes " + key);
    }

    /** A YAML value or a setting's default as a comparable: numbers as doubles, choices in lower case. */
    private static Object value(Object v) {
        if (v instanceof JsonNode n) {
            if (n.isNull()) {
                return null;
            }
            if (n.isNumber()) {
                return n.asDouble();
            }
            if (n.isBoolean()) {
                return n.asBoolean();
            }
            if (n.isTextual()) {
                return n.asText();
            }
            return n.toString();
        }
        if (v instanceof Number num) {
            return num.doubleValue();
        }
        if (v instanceof Enum<?> e) {
            return e.name().toLowerCase(Locale.ROOT);
        }
        return v;
    }

    private static boolean same(Object a, Object b) {
        return a == null ? b == null : a.equals(b);
    }
}
