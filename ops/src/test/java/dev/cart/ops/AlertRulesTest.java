package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * What promtool does not check: every alert says how bad it is and links its runbook, which exists in
 * docs/operations.md; every alert's unit tests show it both firing and not firing; the recording rules
 * follow the naming convention and keep the pool ({@code job}) apart.
 */
class AlertRulesTest {

    private static final Set<String> SEVERITIES = Set.of("critical", "warning");

    @Test
    void everyAlertHasASeverityASummaryAndADescription() throws Exception {
        List<RuleFiles.Alert> alerts = RuleFiles.alerts();
        assertFalse(alerts.isEmpty());
        for (RuleFiles.Alert a : alerts) {
            assertTrue(a.name().matches("Cart[A-Z][A-Za-z]+"), a.name() + ": alert names are CartCamelCase");
            assertTrue(SEVERITIES.contains(a.labels().get("severity")), a.name() + ": severity " + SEVERITIES);
            assertFalse(a.annotations().getOrDefault("summary", "").isBlank(), a.name() + ": summary");
            assertFalse(a.annotations().getOrDefault("description", "").isBlank(), a.name() + ": description");
        }
    }

    @Test
    void everyAlertLinksItsRunbookAndEveryRunbookIsAnAlert() throws Exception {
        String doc = Files.readString(Tools.repositoryRoot().resolve("docs/operations.md"), StandardCharsets.UTF_8);
        Set<String> headings = new TreeSet<>();
        Matcher m = Pattern.compile("(?m)^### (Cart[A-Za-z]+)$").matcher(doc);
        while (m.find()) {
            headings.add(m.group(1));
        }
        Set<String> names = new TreeSet<>();
        for (RuleFiles.Alert a : RuleFiles.alerts()) {
            names.add(a.name());
            // GitHub's anchor of the heading "### CartSomething" is #cartsomething
            assertEquals(
                    RuleFiles.RUNBOOKS + "#" + a.name().toLowerCase(Locale.ROOT),
                    a.annotations().get("runbook_url"),
                    a.name() + ": runbook_url");
        }
        assertEquals(names, headings, "the alerts, and the runbook headings (### Name) of docs/operations.md");
    }

    @Test
    void everyAlertIsTestedFiringAndNotFiring() throws Exception {
        Set<String> firing = new TreeSet<>();
        Set<String> quiet = new TreeSet<>();
        for (JsonNode group : RuleFiles.read(RuleFiles.ALERT_TESTS).path("tests")) {
            for (JsonNode t : group.path("alert_rule_test")) {
                String name = t.path("alertname").asText();
                (t.path("exp_alerts").isEmpty() ? quiet : firing).add(name);
            }
        }
        Set<String> names =
                RuleFiles.alerts().stream().map(RuleFiles.Alert::name).collect(Collectors.toSet());
        assertEquals(new TreeSet<>(names), firing, "alerts with a test case where they fire");
        assertEquals(new TreeSet<>(names), quiet, "alerts with a test case where they do not fire");
    }

    @Test
    void recordingRulesAreNamedByLevelMetricOperationAndKeepTheJob() throws Exception {
        Pattern by = Pattern.compile("\\bby \\(([^)]*)\\)");
        List<String> problems = new ArrayList<>();
        for (RuleFiles.Recording r : RuleFiles.recordings()) {
            if (!r.name().matches("[a-z_]+:cart_[a-z0-9_]+:[a-z0-9_]+")) {
                problems.add(r.name() + ": not level:cart_metric:operation");
            }
            Matcher m = by.matcher(r.expr());
            while (m.find()) {
                List<String> labels = List.of(m.group(1).replace(" ", "").split(","));
                if (!labels.contains("job")) {
                    problems.add(r.name() + ": aggregates away the job (by (" + m.group(1) + "))");
                }
            }
        }
        assertEquals(List.of(), problems);
    }
}
