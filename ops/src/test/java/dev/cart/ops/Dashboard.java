package dev.cart.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The Grafana dashboard of {@code ops/grafana}, as its panels, queries and template variables. */
final class Dashboard {

    static final String FILE = "cart-dashboard.json";

    /** One query of a panel: where it is (for messages) and its PromQL, Grafana variables unexpanded. */
    record Query(String panel, String refId, String expr, String legend) {
        String where() {
            return "panel '" + panel + "' " + refId;
        }
    }

    /** A template variable: its name, type and (for a query variable) its {@code label_values(...)} query. */
    record Variable(String name, String type, String query) {}

    final JsonNode root;

    private Dashboard(JsonNode root) {
        this.root = root;
    }

    static Path path() {
        return Tools.opsDir().resolve("grafana").resolve(FILE);
    }

    static Dashboard load() throws IOException {
        return new Dashboard(new ObjectMapper().readTree(path().toFile()));
    }

    /** Every panel, rows included, in file order (nested panels of collapsed rows too). */
    List<JsonNode> panels() {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode p : root.path("panels")) {
            out.add(p);
            p.path("panels").forEach(out::add);
        }
        return out;
    }

    List<Query> queries() {
        List<Query> out = new ArrayList<>();
        for (JsonNode p : panels()) {
            for (JsonNode t : p.path("targets")) {
                out.add(new Query(
                        p.path("title").asText(),
                        t.path("refId").asText(),
                        t.path("expr").asText(),
                        t.path("legendFormat").asText()));
            }
        }
        return out;
    }

    List<Variable> variables() {
        List<Variable> out = new ArrayList<>();
        for (JsonNode v : root.path("templating").path("list")) {
            JsonNode q = v.path("query");
            out.add(new Variable(
                    v.path("name").asText(),
                    v.path("type").asText(),
                    q.isObject() ? q.path("query").asText() : q.asText()));
        }
        return out;
    }
}
