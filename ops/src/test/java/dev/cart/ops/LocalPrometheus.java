package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A real Prometheus (Debian's {@code prometheus}) scraping the given targets every second and evaluating
 * the rule files of {@code ops/prometheus} every second, with its HTTP API: instant and range queries,
 * label values, rules. Its data lives in the run's directory.
 */
final class LocalPrometheus implements AutoCloseable {

    /** The scrape job: the one CartProxyDown names. */
    static final String JOB = "cart";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final ChildProcess process;
    private final URI base;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private LocalPrometheus(ChildProcess process, URI base) {
        this.process = process;
        this.base = base;
    }

    /** Starts Prometheus in {@code dir} scraping {@code targets} (host:port) and waits until it is ready. */
    static LocalPrometheus start(Path dir, List<String> targets) throws IOException, InterruptedException {
        Path binary = Tools.binary("prometheus", "prometheus");
        StringBuilder config = new StringBuilder()
                .append("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n")
                .append("rule_files:\n");
        for (String f : List.of(RuleFiles.RECORDING, RuleFiles.ALERTS)) {
            config.append("  - ").append(RuleFiles.file(f).toAbsolutePath()).append('\n');
        }
        config.append("scrape_configs:\n  - job_name: ")
                .append(JOB)
                .append("\n    static_configs:\n      - targets: [");
        config.append(String.join(", ", targets.stream().map(t -> "'" + t + "'").toList()));
        config.append("]\n");
        Path file = dir.resolve("prometheus.yml");
        Files.writeString(file, config.toString());
        // a port taken between the probe and the bind makes Prometheus exit at once: try another
        for (int attempt = 1; ; attempt++) {
            int port = ChildProcess.freePort();
            ChildProcess p = ChildProcess.start(
                    "prometheus-" + attempt,
                    dir,
                    List.of(
                            binary.toString(),
                            "--config.file=" + file,
                            "--storage.tsdb.path=" + dir.resolve("tsdb-" + attempt),
                            "--web.listen-address=127.0.0.1:" + port,
                            "--log.level=warn"));
            LocalPrometheus prometheus = new LocalPrometheus(p, URI.create("http://127.0.0.1:" + port));
            try {
                p.awaitReady("ready", 60, prometheus::ready);
                return prometheus;
            } catch (AssertionError e) {
                try {
                    p.close();
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                }
                if (attempt == 3 || !p.output().contains("address already in use")) {
                    throw e;
                }
            }
        }
    }

    private boolean ready() {
        try {
            return get("/-/ready").statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The series of an instant query now; a query Prometheus refuses fails the test with its error. */
    JsonNode query(String expr) throws IOException, InterruptedException {
        return data("/api/v1/query?query=" + encode(expr), expr).path("result");
    }

    /** A range query over [start, end] (Unix seconds) every {@code step} seconds. */
    JsonNode queryRange(String expr, double start, double end, double step) throws IOException, InterruptedException {
        return data(
                        "/api/v1/query_range?query=" + encode(expr) + "&start=" + start + "&end=" + end + "&step="
                                + step,
                        expr)
                .path("result");
    }

    /** The values of {@code label} among the series {@code match} selects. */
    List<String> labelValues(String label, String match) throws IOException, InterruptedException {
        List<String> out = new ArrayList<>();
        data("/api/v1/label/" + label + "/values?match[]=" + encode(match), match)
                .forEach(v -> out.add(v.asText()));
        return out;
    }

    /** The rule groups as Prometheus evaluates them (health, last error, state of each rule). */
    JsonNode ruleGroups() throws IOException, InterruptedException {
        return data("/api/v1/rules", "rules").path("groups");
    }

    /** Prometheus's own output so far (its log). */
    String output() {
        return process.output();
    }

    private JsonNode data(String pathAndQuery, String what) throws IOException, InterruptedException {
        HttpResponse<String> r = get(pathAndQuery);
        JsonNode body = JSON.readTree(r.body());
        if (r.statusCode() != 200 || !body.path("status").asText().equals("success")) {
            return fail("Prometheus refused " + what + ": " + r.statusCode() + " "
                    + body.path("errorType").asText() + ": "
                    + body.path("error").asText());
        }
        return body.path("data");
    }

    private HttpResponse<String> get(String pathAndQuery) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(pathAndQuery))
                .timeout(Duration.ofSeconds(30))
                .GET()
                .build();
        return http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws InterruptedException {
        process.close();
    }
}
