package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.RoutingPolicy;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's plumbing on small scenarios and test policies: tables, verdicts, chart. */
class ReportTest {

    @Test
    void writesTablesTargetsAndAChart(@TempDir Path dir) throws Exception {
        System.setProperty("java.awt.headless", "true");
        Report.Settings s = Report.Settings.parse(new String[] {"--replicas", "2", "--seed", "3"});
        List<Report.Variant> variants = Report.variants().stream()
                .filter(v -> List.of(Report.ROUND_ROBIN, Report.LEAST_LOADED, Report.CACHE_AWARE, Report.STRICT)
                        .contains(v.label())).toList();
        assertEquals(4, variants.size());
        java.util.function.Function<Report.Variant, Supplier<RoutingPolicy>> policies = Report::registered;
        Workload rag = Workloads.rag(3, 2 * 150_000L, new Workloads.RagSpec(120, 256, 512, 1.1, 0.7, 32, 8, 16, 8));
        Workload hot = Workloads.hotPrefix(3, new Workloads.HotSpec(80, 1.0, 512, 32, 8));
        List<Report.ScenarioResult> results = List.of(
                Report.runScenario(new Report.Scenario("rag-zipf", rag.description(), "Poisson", rag.poisson(10, 3), 0),
                        s, variants, policies, false),
                Report.runScenario(new Report.Scenario("hot-prefix-100", hot.description(), "closed", hot, 4),
                        s, variants, policies, false));
        String md = Report.markdown(s, results, List.of(), List.of(), 1.0, s.nonDefault());
        assertTrue(md.contains("### rag-zipf"));
        assertTrue(md.contains("| cache_aware hit ratio >= 0.9 x ideal | rag-zipf |"));
        assertTrue(md.contains("| cache_aware max/mean load <= 1.5 | hot-prefix-100 |"));
        assertTrue(md.contains("| cache_aware P99 TTFT <= 0.6 x strict affinity | hot-prefix-100 |"));
        assertTrue(md.contains("options: `--seed 3 --replicas 2`"));
        assertEquals(2 * 4, md.lines().filter(l -> l.matches("\\| [a-z_ ]+ \\| [0-9.]+ \\| .*")).count(),
                "one result row per scenario and policy");
        Path png = dir.resolve("chart.png");
        Report.chart(png, s, results);
        BufferedImage img = ImageIO.read(png.toFile());
        assertTrue(img.getWidth() >= 1000 && img.getHeight() >= 600);
    }
}
