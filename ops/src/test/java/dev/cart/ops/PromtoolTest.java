package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The rule files pass {@code promtool check rules}, and their unit tests pass {@code promtool test rules}. */
class PromtoolTest {

    @Test
    void ruleFilesAreValid() throws Exception {
        Tools.Result r = Tools.run(
                Tools.prometheusDir(),
                120,
                List.of(Tools.promtool().toString(), "check", "rules", RuleFiles.RECORDING, RuleFiles.ALERTS));
        assertEquals(0, r.exitCode(), r.output());
        assertTrue(r.output().contains("SUCCESS: " + RuleFiles.recordings().size() + " rules found"), r.output());
        assertTrue(r.output().contains("SUCCESS: " + RuleFiles.alerts().size() + " rules found"), r.output());
    }

    @Test
    void recordingAndAlertUnitTestsPass() throws Exception {
        Tools.Result r = Tools.run(
                Tools.prometheusDir(),
                180,
                List.of(
                        Tools.promtool().toString(),
                        "test",
                        "rules",
                        RuleFiles.RECORDING_TESTS,
                        RuleFiles.ALERT_TESTS));
        assertEquals(0, r.exitCode(), r.output());
        assertTrue(!r.output().contains("FAILED"), r.output());
    }
}
