package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The dashboard imports anywhere: its Prometheus is a variable, never a fixed data source; its panels do
 * not overlap; its queries use only variables it defines, each as a regular expression (so "All" and
 * several values work), and only recorded series the rule file records. Whether the queries return data
 * from a real proxy is {@link LiveQueriesTest}'s job.
 */
class DashboardTest {

    private static final String DATASOURCE = "${datasource}";
    /** Grafana's own variables the queries may use. */
    private static final Set<String> BUILT_IN = Set.of("__rate_interval", "__range");

    private static final Pattern VARIABLE = Pattern.compile("\\$\\{?(\\w+)");
    private static final Pattern RECORDED = Pattern.compile("\\b[a-z_]+:cart_[a-z0-9_]+:[a-z0-9_]+\\b");

    private final Dashboard dashboard;

    DashboardTest() throws Exception {
        dashboard = Dashboard.load();
    }

    @Test
    void thePrometheusIsAVariable() {
        JsonNode root = dashboard.root;
        assertFalse(root.path("uid").asText().isEmpty(), "uid");
        assertFalse(root.path("title").asText().isEmpty(), "title");
        assertTrue(root.path("schemaVersion").asInt() > 0, "schemaVersion");
        assertTrue(root.path("__inputs").isMissingNode(), "no import-time inputs: the data source is a variable");
        Dashboard.Variable ds = dashboard.variables().get(0);
        assertEquals(new Dashboard.Variable("datasource", "datasource", "prometheus"), ds);
        List<String> problems = new ArrayList<>();
        for (JsonNode p : dashboard.panels()) {
            if (p.path("type").asText().equals("row")) {
                continue;
            }
            String title = p.path("title").asText();
            if (!p.path("datasource").path("uid").asText().equals(DATASOURCE)) {
                problems.add(title + ": panel data source " + p.path("datasource"));
            }
            for (JsonNode t : p.path("targets")) {
                if (!t.path("datasource").path("uid").asText().equals(DATASOURCE)) {
                    problems.add(title + " " + t.path("refId").asText() + ": data source " + t.path("datasource"));
                }
            }
        }
        for (JsonNode v : root.path("templating").path("list")) {
            if (v.path("type").asText().equals("query")
                    && !v.path("datasource").path("uid").asText().equals(DATASOURCE)) {
                problems.add("variable " + v.path("name").asText() + ": data source " + v.path("datasource"));
            }
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void panelsHaveUniqueIdsAndDoNotOverlap() {
        Set<Integer> ids = new HashSet<>();
        List<int[]> boxes = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        for (JsonNode p : dashboard.panels()) {
            String title = p.path("title").asText();
            if (!ids.add(p.path("id").asInt())) {
                problems.add(title + ": id " + p.path("id") + " used twice");
            }
            if (!p.path("type").asText().equals("row")
                    && p.path("description").asText().isBlank()) {
                problems.add(title + ": no description");
            }
            JsonNode g = p.path("gridPos");
            int[] box = {
                g.path("x").asInt(),
                g.path("y").asInt(),
                g.path("w").asInt(),
                g.path("h").asInt()
            };
            if (box[2] <= 0 || box[3] <= 0 || box[0] < 0 || box[0] + box[2] > 24) {
                problems.add(title + ": gridPos " + g);
            }
            for (int[] o : boxes) {
                boolean apart = box[0] + box[2] <= o[0]
                        || o[0] + o[2] <= box[0]
                        || box[1] + box[3] <= o[1]
                        || o[1] + o[3] <= box[1];
                if (!apart) {
                    problems.add(title + ": overlaps another panel at " + g);
                }
            }
            boxes.add(box);
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void queriesUseDefinedVariablesAsRegularExpressions() {
        Set<String> defined = new HashSet<>(BUILT_IN);
        List<String> problems = new ArrayList<>();
        for (Dashboard.Variable v : dashboard.variables()) {
            // a variable's own query may use only the variables before it
            check("variable " + v.name(), v.query(), defined, problems);
            defined.add(v.name());
        }
        for (Dashboard.Query q : dashboard.queries()) {
            check(q.where(), q.expr(), defined, problems);
        }
        assertFalse(dashboard.queries().isEmpty());
        assertEquals(List.of(), problems);
    }

    private static void check(String where, String expr, Set<String> defined, List<String> problems) {
        Matcher m = VARIABLE.matcher(expr);
        while (m.find()) {
            String name = m.group(1);
            if (!defined.contains(name)) {
                problems.add(where + ": $" + name + " is not defined (before it)");
            } else if (!BUILT_IN.contains(name)
                    && !expr.regionMatches(m.start() - 3, "=~\"$" + name + "\"", 0, name.length() + 5)) {
                problems.add(where + ": $" + name + " is not used as =~\"$" + name + "\"");
            }
        }
    }

    @Test
    void everyRecordedSeriesIsRecordedAndUsed() throws Exception {
        Set<String> recorded = new TreeSet<>();
        RuleFiles.recordings().forEach(r -> recorded.add(r.name()));
        Set<String> used = new TreeSet<>();
        for (Dashboard.Query q : dashboard.queries()) {
            Matcher m = RECORDED.matcher(q.expr());
            while (m.find()) {
                assertTrue(recorded.contains(m.group()), q.where() + ": " + m.group() + " is not recorded");
                used.add(m.group());
            }
        }
        for (RuleFiles.Alert a : RuleFiles.alerts()) {
            Matcher m = RECORDED.matcher(a.expr());
            while (m.find()) {
                assertTrue(recorded.contains(m.group()), a.name() + ": " + m.group() + " is not recorded");
                used.add(m.group());
            }
        }
        for (RuleFiles.Recording r : RuleFiles.recordings()) {
            Matcher m = RECORDED.matcher(r.expr());
            while (m.find()) {
                used.add(m.group());
            }
        }
        Set<String> unused = new TreeSet<>(recorded);
        unused.removeAll(used);
        assertEquals(Set.of(), unused, "recorded series no panel, alert or other rule reads");
    }
}
