package dev.cart.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The rule files of {@code ops/prometheus}, read as Prometheus reads them: groups of rules. */
final class RuleFiles {

    static final String RECORDING = "cart-recording.rules.yml";
    static final String ALERTS = "cart-alerts.rules.yml";
    static final String RECORDING_TESTS = "cart-recording.test.yml";
    static final String ALERT_TESTS = "cart-alerts.test.yml";

    /** Where every alert's runbook lives: docs/operations.md on the project's main branch. */
    static final String RUNBOOKS = "https://github.com/cart-router/cart-java/blob/main/docs/operations.md";

    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private RuleFiles() {}

    /** A recording rule: the series it records and its expression. */
    record Recording(String name, String expr) {}

    /** An alerting rule with its labels and annotations. */
    record Alert(
            String name,
            String expr,
            String forDuration,
            Map<String, String> labels,
            Map<String, String> annotations) {}

    static JsonNode read(String file) throws IOException {
        return YAML.readTree(Tools.prometheusDir().resolve(file).toFile());
    }

    static List<Recording> recordings() throws IOException {
        List<Recording> out = new ArrayList<>();
        for (JsonNode rule : rules(RECORDING)) {
            if (rule.has("record")) {
                out.add(new Recording(
                        rule.get("record").asText(), rule.get("expr").asText()));
            }
        }
        return out;
    }

    static List<Alert> alerts() throws IOException {
        List<Alert> out = new ArrayList<>();
        for (JsonNode rule : rules(ALERTS)) {
            if (rule.has("alert")) {
                out.add(new Alert(
                        rule.get("alert").asText(),
                        rule.get("expr").asText(),
                        rule.path("for").asText("0s"),
                        strings(rule.path("labels")),
                        strings(rule.path("annotations"))));
            }
        }
        return out;
    }

    private static List<JsonNode> rules(String file) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode group : read(file).path("groups")) {
            group.path("rules").forEach(out::add);
        }
        return out;
    }

    private static Map<String, String> strings(JsonNode map) {
        Map<String, String> out = new LinkedHashMap<>();
        map.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        return out;
    }

    static Path file(String name) {
        return Tools.prometheusDir().resolve(name);
    }
}
