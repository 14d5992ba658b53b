package dev.cart.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a large pool costs the proxy when no request comes: CPU per health probe and per second, threads and
 * resident memory before and after a reload of the pool (the figures of {@code docs/hardening.md}, "Large
 * pools at idle").
 *
 * <p>How: starts {@code --replicas} simulated replicas ({@code examples/sim}'s {@code cart-sim-replica.jar},
 * one process each), each answering under {@code --paths} base URLs ({@code --base-paths}), so the pool has
 * replicas × paths workers on loopback; then, for each proxy jar given ({@code --proxy LABEL=JAR}, in turn,
 * {@code --runs} times), starts the proxy as a child process with that pool, {@code health.interval_secs: 1}
 * and the workers' models left to discovery (or configured, {@code models: ["*"]}, for a jar given with
 * {@code --proxy-configured LABEL=JAR}), with the JVM options {@code --jvm} (default a fixed 128 MiB heap,
 * so that RSS shows threads and native memory rather than how far the heap has grown), waits until {@code /health} counts every worker healthy, lets it warm up,
 * and measures {@code --windows} windows of {@code --window} seconds: the proxy's CPU time (user + system of
 * the whole process, from {@code /proc/<pid>/stat}, in 10 ms ticks) over the {@code GET /health} and
 * {@code GET /v1/models} requests the replicas received meanwhile ({@code GET /sim/counts}). Then it rewrites
 * the configuration with the same workers in reverse order and sends SIGHUP (an accepted reload that builds a
 * new replica set and health checker over the same pool), samples the proxy's threads and RSS
 * ({@code /proc/<pid>/status}) every 250 ms for {@code --settle} seconds, and prints the peak and the last
 * sample, and one more CPU window after the reload.
 *
 * <p>Run from the repository root after {@code mvn -B -ntp -o -pl cart-proxy,examples/sim,examples/bench -am
 * package -DskipTests}:
 *
 * <pre>
 * java -cp examples/bench/target/cart-bench.jar dev.cart.bench.IdlePool \
 *     --sim examples/sim/target/cart-sim-replica.jar --proxy new=cart-proxy/target/cart-proxy.jar \
 *     [--proxy main=/path/to/main/cart-proxy.jar] [--replicas 10] [--paths 100] [--runs 3] [--window 20]
 * </pre>
 *
 * A tool, never run by the test suite; the machine should be otherwise idle (the replicas' own CPU is not
 * counted, but they share the cores).
 */
public final class IdlePool {

    private static final Pattern HEALTHY = Pattern.compile("\"healthy\"\\s*:\\s*(\\d+)");
    private static final Pattern COUNT = Pattern.compile("\"(health|models)\"\\s*:\\s*(\\d+)");

    private IdlePool() {}

    /** The command line. */
    record Options(
            Path sim,
            Map<String, Path> proxies,
            Set<String> configured,
            List<String> jvm,
            int replicas,
            int paths,
            int runs,
            int warmupSecs,
            int windowSecs,
            int windows,
            int settleSecs,
            Path dir) {

        static Options parse(String[] args) {
            Path sim = null;
            Map<String, Path> proxies = new LinkedHashMap<>();
            Set<String> configured = new HashSet<>();
            List<String> jvm = List.of("-Xms128m", "-Xmx128m");
            int replicas = 10;
            int paths = 100;
            int runs = 3;
            int warmup = 20;
            int window = 20;
            int windows = 2;
            int settle = 20;
            Path dir = Path.of("target", "idle-pool");
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                String v = args[++i];
                switch (a) {
                    case "--sim" -> sim = Path.of(v);
                    case "--proxy", "--proxy-configured" -> {
                        int eq = v.indexOf('=');
                        if (eq <= 0) {
                            throw new IllegalArgumentException(a + " takes LABEL=JAR, was " + v);
                        }
                        proxies.put(v.substring(0, eq), Path.of(v.substring(eq + 1)));
                        if (a.equals("--proxy-configured")) {
                            configured.add(v.substring(0, eq));
                        }
                    }
                    case "--jvm" -> jvm = List.of(v.trim().split("\\s+"));
                    case "--replicas" -> replicas = Integer.parseInt(v);
                    case "--paths" -> paths = Integer.parseInt(v);
                    case "--runs" -> runs = Integer.parseInt(v);
                    case "--warmup" -> warmup = Integer.parseInt(v);
                    case "--window" -> window = Integer.parseInt(v);
                    case "--windows" -> windows = Integer.parseInt(v);
                    case "--settle" -> settle = Integer.parseInt(v);
                    case "--dir" -> dir = Path.of(v);
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            if (sim == null || proxies.isEmpty()) {
                throw new IllegalArgumentException("--sim JAR and at least one --proxy LABEL=JAR are required");
            }
            return new Options(
                    sim, proxies, configured, jvm, replicas, paths, runs, warmup, window, windows, settle, dir);
        }

        int workers() {
            return replicas * paths;
        }
    }

    /** One CPU window: the proxy's ticks and the probes the replicas received. */
    record Window(long ticks, long health, long models, double seconds) {
        double microsPerProbe() {
            return health == 0 ? Double.NaN : ticks * ThreadCpu.TICK_MICROS / health;
        }

        double percentOfCore() {
            return ticks * ThreadCpu.TICK_MICROS / 1e6 / seconds * 100;
        }

        @Override
        public String toString() {
            return String.format(
                    Locale.ROOT,
                    "cpu %.0f µs/probe, %.1f%% of a core (%d ticks over %.1f s; %d health, %d models requests)",
                    microsPerProbe(),
                    percentOfCore(),
                    ticks,
                    seconds,
                    health,
                    models);
        }
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("idle-pool: " + e.getMessage());
            System.exit(2);
            return;
        }
        Files.createDirectories(o.dir());
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Integer> ports = new ArrayList<>();
        for (int r = 0; r < o.replicas(); r++) {
            int port = Children.freePort();
            Process p = Children.start(
                    List.of(
                            java,
                            "-Xmx256m",
                            "-jar",
                            o.sim().toString(),
                            "--port",
                            Integer.toString(port),
                            "--base-paths",
                            Integer.toString(o.paths())),
                    o.dir().resolve("replica-" + r + ".log"),
                    false);
            Children.awaitOk("http://127.0.0.1:" + port + "/health", p, Duration.ofSeconds(60));
            ports.add(port);
        }
        System.out.printf(
                Locale.ROOT,
                "pool: %d replicas x %d base URLs = %d workers; proxy JVM options %s; %d-core machine, load %.2f%n",
                o.replicas(),
                o.paths(),
                o.workers(),
                String.join(" ", o.jvm()),
                Runtime.getRuntime().availableProcessors(),
                Children.load());
        for (int run = 1; run <= o.runs(); run++) {
            for (Map.Entry<String, Path> e : o.proxies().entrySet()) {
                System.out.printf(
                        Locale.ROOT,
                        "run %d, %s (models %s), load %.2f:%n",
                        run,
                        e.getKey(),
                        o.configured().contains(e.getKey()) ? "configured" : "discovered",
                        Children.load());
                runOne(o, java, e.getKey(), e.getValue(), ports, run);
            }
        }
        Children.stopAll();
    }

    private static void runOne(Options o, String java, String label, Path jar, List<Integer> ports, int run)
            throws IOException, InterruptedException {
        int port = Children.freePort();
        Path config = o.dir().resolve("config-" + label + "-" + run + ".yaml");
        boolean configured = o.configured().contains(label);
        Files.writeString(config, config(o, port, ports, configured, false));
        List<String> command = new ArrayList<>(List.of(java));
        command.addAll(o.jvm());
        command.addAll(List.of("-jar", jar.toString(), "-c", config.toString()));
        Process proxy = Children.start(command, o.dir().resolve("proxy-" + label + "-" + run + ".log"), false);
        long pid = proxy.pid();
        String base = "http://127.0.0.1:" + port;
        try {
            Children.awaitOk(base + "/health", proxy, Duration.ofMinutes(2));
            awaitHealthy(base, o.workers(), proxy, Duration.ofMinutes(2));
            Thread.sleep(o.warmupSecs() * 1000L);
            for (int w = 1; w <= o.windows(); w++) {
                System.out.printf(Locale.ROOT, "  window %d: %s%n", w, window(pid, ports, o.windowSecs()));
            }
            long threadsBefore = Children.status(pid, "Threads");
            long rssBefore = Children.status(pid, "VmRSS");
            Files.writeString(config, config(o, port, ports, configured, true));
            Children.run(List.of("kill", "-HUP", Long.toString(pid)));
            long peakThreads = threadsBefore;
            long peakRss = rssBefore;
            long threads = threadsBefore;
            long rss = rssBefore;
            long end = System.nanoTime() + o.settleSecs() * 1_000_000_000L;
            while (System.nanoTime() < end) {
                Thread.sleep(250);
                threads = Children.status(pid, "Threads");
                rss = Children.status(pid, "VmRSS");
                peakThreads = Math.max(peakThreads, threads);
                peakRss = Math.max(peakRss, rss);
            }
            awaitHealthy(base, o.workers(), proxy, Duration.ofSeconds(60));
            System.out.printf(
                    Locale.ROOT,
                    "  reload: threads %d -> peak %d, %d after %d s; RSS %d -> peak %d, %d MiB after %d s%n",
                    threadsBefore,
                    peakThreads,
                    threads,
                    o.settleSecs(),
                    rssBefore / 1024,
                    peakRss / 1024,
                    rss / 1024,
                    o.settleSecs());
            System.out.printf(Locale.ROOT, "  after the reload: %s%n", window(pid, ports, o.windowSecs()));
        } finally {
            Children.stop(proxy);
        }
    }

    /** The proxy's CPU over {@code secs} seconds, and the probes the replicas saw meanwhile. */
    private static Window window(long pid, List<Integer> ports, int secs) throws IOException, InterruptedException {
        long[] before = counts(ports);
        long t0 = System.nanoTime();
        ThreadCpu.Sample a = ThreadCpu.read(-pid);
        Thread.sleep(secs * 1000L);
        ThreadCpu.Sample b = ThreadCpu.read(-pid);
        double seconds = (System.nanoTime() - t0) / 1e9;
        long[] after = counts(ports);
        return new Window(b.total() - a.total(), after[0] - before[0], after[1] - before[1], seconds);
    }

    /** The health and models requests all replicas have received so far. */
    private static long[] counts(List<Integer> ports) throws IOException, InterruptedException {
        long[] sum = new long[2];
        for (int port : ports) {
            Matcher m = COUNT.matcher(Children.get("http://127.0.0.1:" + port + "/sim/counts"));
            while (m.find()) {
                sum[m.group(1).equals("health") ? 0 : 1] += Long.parseLong(m.group(2));
            }
        }
        return sum;
    }

    private static void awaitHealthy(String base, int workers, Process proxy, Duration max)
            throws IOException, InterruptedException {
        long end = System.nanoTime() + max.toNanos();
        String last = "";
        while (System.nanoTime() < end) {
            if (!proxy.isAlive()) {
                throw new IOException("the proxy exited with status " + proxy.exitValue());
            }
            try {
                last = Children.get(base + "/health");
                Matcher m = HEALTHY.matcher(last);
                if (m.find() && Integer.parseInt(m.group(1)) == workers) {
                    return;
                }
            } catch (IOException notYet) {
                // starting
            }
            Thread.sleep(250);
        }
        throw new IOException("not every worker healthy within " + max + ": " + last.strip());
    }

    /** The proxy's configuration: the pool's workers, in reverse order for the reload. */
    static String config(Options o, int port, List<Integer> ports, boolean configuredModels, boolean reversed) {
        List<String> urls = new ArrayList<>();
        for (int p : ports) {
            for (int k = 0; k < o.paths(); k++) {
                urls.add("http://127.0.0.1:" + p + "/b/" + k);
            }
        }
        if (reversed) {
            java.util.Collections.reverse(urls);
        }
        StringBuilder y = new StringBuilder();
        y.append("server:\n  host: \"127.0.0.1\"\n  port: ").append(port).append('\n');
        y.append("health:\n  interval_secs: 1\n");
        y.append("workers:\n");
        for (String u : urls) {
            y.append("  - url: \"").append(u).append("\"\n");
            if (configuredModels) {
                y.append("    models: [\"*\"]\n");
            }
        }
        return y.toString();
    }
}
