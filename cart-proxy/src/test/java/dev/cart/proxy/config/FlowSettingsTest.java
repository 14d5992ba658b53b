package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.flow.FlowConfig;
import dev.cart.flow.FlowHeaders;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code flow} section: off by default, every key read into the library's settings, every problem named. */
class FlowSettingsTest {

    private static final String WORKERS = "workers:\n  - url: http://node1:8000\n";

    private static List<String> problems(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml))
                .problems();
    }

    @Test
    void offByDefaultWithTheLibrarysDefaults() throws Exception {
        FlowSettings f = ConfigLoader.parse(WORKERS).flow();
        assertFalse(f.enabled());
        assertEquals(FlowConfig.defaults(), f.toFlowConfig());
    }

    @Test
    void everyKeyIsRead() throws Exception {
        FlowSettings f = ConfigLoader.parse(WORKERS
                        + "flow:\n  enabled: true\n  max_depth: 10\n  max_wait_ms: 5000\n  bands: 4\n  default_band: 3\n"
                        + "  affinity_wait_ms: 0\n  hot_spot_depth: 2\n  hot_spot_max_holders: 5\n  tenant_labels: 0\n"
                        + "  recheck_interval_ms: 20\n  priority_header: X-Prio\n  tenant_header: x-team\n"
                        + "  deadline_header: x-wait\n  default_output_tokens: 64\n  reserve_ratio: 0.2\n")
                .flow();
        assertEquals(
                new FlowConfig(
                        true, 10, Duration.ofSeconds(5), 4, 3, Duration.ZERO, 2, 5, 0, Duration.ofMillis(20), 0.2),
                f.toFlowConfig());
        FlowHeaders h = f.headers();
        Map<String, String> given = Map.of("x-prio", "0", "x-team", "a", "x-wait", "70");
        FlowHeaders.Parsed p = h.parse(given::get, 10, 0);
        assertEquals(0, p.request().band());
        assertEquals(70, p.request().deadlineMillis());
        assertEquals(74, p.request().cost());
    }

    @Test
    void everyProblemIsReported() {
        List<String> p = problems(WORKERS
                + "flow:\n  bands: 2\n  default_band: 2\n  max_wait_ms: 100\n  affinity_wait_ms: 200\n"
                + "  priority_header: \"x prio\"\n  tenant_header: x-cart-deadline-ms\n  max_depth: 0\n  colour: 1\n");
        assertTrue(p.stream().anyMatch(s -> s.startsWith("flow.default_band: must be below bands (2)")), p.toString());
        assertTrue(
                p.stream().anyMatch(s -> s.startsWith("flow.affinity_wait_ms: must be at most max_wait_ms (100)")),
                p.toString());
        assertTrue(
                p.stream().anyMatch(s -> s.startsWith("flow.priority_header: must be an HTTP header name")),
                p.toString());
        assertTrue(
                p.stream().anyMatch(s -> s.startsWith("flow.deadline_header: must differ from the other flow headers")),
                p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("flow.max_depth: must be in [1, 1000000]")), p.toString());
        assertTrue(p.stream().anyMatch(s -> s.startsWith("flow.colour")), p.toString());
    }

    @Test
    void aReloadCannotChangeTheFlowSection() throws Exception {
        ProxyConfig a = ConfigLoader.parse(WORKERS);
        ProxyConfig b = ConfigLoader.parse(WORKERS + "flow:\n  enabled: true\n");
        assertEquals(List.of("flow"), b.sectionsDifferingFrom(a));
    }
}
