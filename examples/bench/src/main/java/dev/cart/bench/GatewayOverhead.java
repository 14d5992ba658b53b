package dev.cart.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What CART costs inside the gateway: the example gateway (its jar, in a child process) in front of the bench's
 * fast fake replica (examples/bench {@code FakeReplica}, a child process answering at once with a canned chat
 * completion), driven in a closed loop of {@code --clients} connections from this process. Two sides, A and B, are
 * compared in the same run: by default A is the gateway's own round robin ({@code /rr/v1/...}, service
 * {@code llm-rr}) and B the route CART balances ({@code /v1/...}, service {@code llm}) over the same replica ports;
 * {@code --a}/{@code --b} pick each side's route ({@code cart} or {@code round_robin}; the same route on both sides
 * is the A/A run that shows the noise floor), and {@code --jar-b} runs side B on a second gateway started from
 * another build of the jar (an A/B of two builds, same route, same run).
 *
 * <p>How the estimate is made robust: many short rounds (default 20 of 3 s per side), each round one phase per
 * side in ABBA order (A B, then B A), so slow drifts of the machine cancel within pairs; per phase, the gateway's
 * CPU time per request from {@code /proc/<pid>/stat} (the whole process: JIT compiler and GC threads included) and
 * from {@code /proc/<pid>/task/<tid>/schedstat} of its Reactor Netty event loops alone (the request path), and the
 * client-side p50/p99. Before the rounds, a warm-up alternates the sides until each side's CPU per request over
 * its last {@value #STABLE_PHASES} phases spreads by at most {@code --stable-pct} (default 5%) of their median, or
 * {@code --warmup-secs} have passed. The result is the per-round difference B − A, summarised as its median and
 * interquartile range (and min–max) over the rounds; a round where either phase served fewer than half the
 * median number of requests (the machine stalled the run) is left out, and counted. CPU time per request is what holds on a loaded machine;
 * latency there includes waiting for a core. Requests are ~1 KB chat bodies, 16 system prompts shared by 256
 * requests (the bench's mix). Not run by the test suite:
 *
 * <pre>
 * java -cp examples/bench/target/cart-bench.jar dev.cart.bench.GatewayOverhead [--rounds 20] [--secs 3] [--clients 16]
 *     [--warmup-secs 180] [--stable-pct 5] [--a round_robin] [--b cart] [--jar JAR] [--jar-b JAR]
 *     [--gateway-jvm-arg ARG]... [--only cart|round_robin] [--rate R]
 * </pre>
 *
 * <p>{@code --rate R} paces the clients to R requests per second in all (each client sends its next request one
 * interval after its previous one started, or at once when late), so that the gateway is below saturation and
 * p50 shows what a request's own path costs rather than its wait behind the others; the default is a closed loop
 * (each client sends again as soon as its answer is in), which saturates the gateway.
 *
 * <p>{@code --gateway-jvm-arg} passes an option to the gateways' JVMs (a flight recording, say);
 * {@code --only} drives one route alone (to profile it), with no differences printed.
 */
final class GatewayOverhead {

    static final int STABLE_PHASES = 3;

    /** With {@code --rate}: each client's time between the starts of its requests; 0 for a closed loop. */
    private static long intervalNanos;

    private static final ScheduledExecutorService PACER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "pacer");
        t.setDaemon(true);
        return t;
    });

    private GatewayOverhead() {}

    /**
     * One closed-loop phase: client latencies, and the gateway's CPU time per request, the whole process's (JIT and
     * GC threads included) and its Reactor Netty event loops' alone (the request path).
     */
    record Phase(
            String side,
            int requests,
            int failed,
            double p50Ms,
            double p99Ms,
            double cpuMsPerRequest,
            double loopCpuMsPerRequest) {}

    /** One side of the comparison: a gateway process and the route driven on it. */
    record Side(String name, long pid, HttpRequest[] requests) {}

    public static void main(String[] args) throws Exception {
        int rounds = 20;
        int secs = 3;
        int clients = 16;
        int warmupSecs = 180;
        double stablePct = 5;
        String routeA = "round_robin";
        String routeB = "cart";
        String jar = "examples/gateway/target/cart-gateway-example.jar";
        String jarB = null;
        String benchClasses = "examples/bench/target/classes";
        List<String> jvmArgs = new ArrayList<>();
        String only = null;
        double rate = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--secs" -> secs = Integer.parseInt(args[++i]);
                case "--clients" -> clients = Integer.parseInt(args[++i]);
                case "--warmup-secs" -> warmupSecs = Integer.parseInt(args[++i]);
                case "--stable-pct" -> stablePct = Double.parseDouble(args[++i]);
                case "--a" -> routeA = route(args[++i]);
                case "--b" -> routeB = route(args[++i]);
                case "--jar" -> jar = args[++i];
                case "--jar-b" -> jarB = args[++i];
                case "--bench-classes" -> benchClasses = args[++i];
                case "--gateway-jvm-arg" -> jvmArgs.add(args[++i]);
                case "--only" -> only = route(args[++i]);
                case "--rate" -> rate = Double.parseDouble(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (rate > 0) {
            intervalNanos = (long) (1e9 * clients / rate);
        }
        if (only != null) {
            routeA = only;
            jarB = null;
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process replica = new ProcessBuilder(java, "-cp", benchClasses, "dev.cart.bench.FakeReplica", "4")
                .redirectErrorStream(true)
                .start();
        Process gatewayA = null;
        Process gatewayB = null;
        try {
            String portsLine = new BufferedReader(
                            new InputStreamReader(replica.getInputStream(), StandardCharsets.UTF_8))
                    .readLine();
            if (portsLine == null || !portsLine.startsWith("PORTS ")) {
                throw new IllegalStateException("fake replica did not start: " + portsLine);
            }
            String[] ports = portsLine.substring(6).split(",");
            gatewayA = startGateway(java, jar, jvmArgs, ports);
            URI baseA = URI.create("http://127.0.0.1:" + awaitPort(gatewayA));
            URI baseB = baseA;
            long pidB = gatewayA.pid();
            if (jarB != null) {
                gatewayB = startGateway(java, jarB, jvmArgs, ports);
                baseB = URI.create("http://127.0.0.1:" + awaitPort(gatewayB));
                pidB = gatewayB.pid();
            }
            Side a = new Side((jarB == null ? "" : "A ") + routeA, gatewayA.pid(), requests(baseA, prefix(routeA)));
            Side b = new Side(
                    (jarB == null ? (routeA.equals(routeB) ? routeB + "'" : routeB) : "B " + routeB),
                    pidB,
                    requests(baseB, prefix(routeB)));
            List<Side> sides = only == null ? List.of(a, b) : List.of(a);
            HttpClient http =
                    HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            System.out.printf(
                    Locale.ROOT,
                    "A = %s (pid %d)%s%s; warming up until CPU/request is stable...%n",
                    a.name(),
                    a.pid(),
                    only != null ? "" : String.format(Locale.ROOT, ", B = %s (pid %d)", b.name(), b.pid()),
                    jarB == null ? "" : " [A: " + jar + ", B: " + jarB + "]");
            warmUp(http, sides, clients, secs, warmupSecs, stablePct);
            List<Phase> phases = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                List<Side> order = only != null ? sides : r % 2 == 0 ? List.of(a, b) : List.of(b, a); // ABBA
                for (Side side : order) {
                    Phase p = phase(http, side, clients, secs);
                    phases.add(p);
                    System.out.printf(Locale.ROOT, "round %d %s%n", r + 1, describe(p));
                }
            }
            System.out.printf(
                    Locale.ROOT,
                    "%n%d rounds of %d s per side (ABBA), %d clients (%s), %d cores, Java %s, "
                            + "load average at the end %s%n",
                    rounds,
                    secs,
                    clients,
                    rate > 0 ? String.format(Locale.ROOT, "paced to %.0f req/s in all", rate) : "closed loop",
                    Runtime.getRuntime().availableProcessors(),
                    Runtime.version(),
                    loadAverage());
            int phaseSecs = secs;
            for (Side side : sides) {
                String s = side.name();
                System.out.printf(
                        Locale.ROOT,
                        "%-14s p50 %s ms, p99 %s ms, CPU %s ms/request (event loops %s), %s req/s%n",
                        s,
                        range(phases, s, Phase::p50Ms),
                        range(phases, s, Phase::p99Ms),
                        range(phases, s, Phase::cpuMsPerRequest),
                        range(phases, s, Phase::loopCpuMsPerRequest),
                        range(phases, s, p -> (double) p.requests() / phaseSecs));
            }
            if (only == null) {
                System.out.println(differences(phases, a.name(), b.name()));
            }
        } finally {
            for (Process g : new Process[] {gatewayA, gatewayB}) {
                if (g != null) {
                    g.destroy();
                    g.waitFor(20, TimeUnit.SECONDS);
                }
            }
            replica.getOutputStream().close();
            replica.destroy();
        }
        System.exit(0);
    }

    private static String route(String name) {
        if (!name.equals("cart") && !name.equals("round_robin")) {
            throw new IllegalArgumentException("a route is cart or round_robin, was " + name);
        }
        return name;
    }

    private static String prefix(String route) {
        return route.equals("cart") ? "" : "/rr";
    }

    private static Process startGateway(String java, String jar, List<String> jvmArgs, String[] ports)
            throws IOException {
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx1g"));
        cmd.addAll(jvmArgs);
        cmd.addAll(
                List.of("-jar", jar, "--server.port=0", "--logging.level.root=WARN", "--spring.main.banner-mode=off"));
        for (int i = 0; i < ports.length; i++) {
            for (String service : List.of("llm", "llm-rr")) {
                cmd.add("--spring.cloud.discovery.client.simple.instances." + service + "[" + i
                        + "].uri=http://127.0.0.1:" + ports[i]);
            }
        }
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /**
     * Alternates the sides, phase by phase, until each side's CPU per request over its last {@link #STABLE_PHASES}
     * phases spreads by at most {@code stablePct} of their median (the JIT has settled), or {@code maxSecs} passed.
     */
    private static void warmUp(HttpClient http, List<Side> sides, int clients, int secs, int maxSecs, double stablePct)
            throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(maxSecs);
        List<List<Double>> cpu = new ArrayList<>();
        for (int i = 0; i < sides.size(); i++) {
            cpu.add(new ArrayList<>());
        }
        while (true) {
            for (int i = 0; i < sides.size(); i++) {
                Phase p = phase(http, sides.get(i), clients, secs);
                cpu.get(i).add(p.cpuMsPerRequest());
                System.out.printf(Locale.ROOT, "warm-up %s%n", describe(p));
            }
            boolean stable = true;
            for (List<Double> c : cpu) {
                stable &= c.size() >= STABLE_PHASES
                        && spreadPct(c.subList(c.size() - STABLE_PHASES, c.size())) <= stablePct;
            }
            if (stable) {
                System.out.println("warm-up: CPU/request stable");
                return;
            }
            if (System.nanoTime() >= end) {
                System.out.println("warm-up: time limit reached before CPU/request was stable");
                return;
            }
        }
    }

    private static double spreadPct(List<Double> v) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
        double min = Arrays.stream(a).min().orElse(0);
        double max = Arrays.stream(a).max().orElse(0);
        return 100 * (max - min) / median(a);
    }

    private static String describe(Phase p) {
        return String.format(
                Locale.ROOT,
                "%-14s: %d requests (%d failed), p50 %.3f ms, p99 %.3f ms, gateway CPU %.4f ms/request "
                        + "(event loops %.4f)",
                p.side(),
                p.requests(),
                p.failed(),
                p.p50Ms(),
                p.p99Ms(),
                p.cpuMsPerRequest(),
                p.loopCpuMsPerRequest());
    }

    /**
     * Per round, side B's phase against side A's phase of the same round: p50 and CPU per request. A round where
     * either phase served fewer than half the median number of requests per phase is left out (the machine
     * stalled the run: other work took the cores, and the few requests' CPU time is dominated by what is not per
     * request); how many were left out is printed.
     */
    static String differences(List<Phase> phases, String sideA, String sideB) {
        double[] counts = phases.stream().mapToDouble(Phase::requests).toArray();
        double floor = median(counts) / 2;
        List<Phase[]> kept = new ArrayList<>();
        for (int r = 0; r < phases.size() / 2; r++) {
            Phase x = phases.get(2 * r);
            Phase y = phases.get(2 * r + 1);
            if (x.requests() >= floor && y.requests() >= floor) {
                kept.add(x.side().equals(sideA) ? new Phase[] {x, y} : new Phase[] {y, x});
            }
        }
        int rounds = kept.size();
        if (rounds == 0) {
            return "no round kept: every round had a stalled phase";
        }
        double[] p50 = new double[rounds];
        double[] cpu = new double[rounds];
        double[] cpuPct = new double[rounds];
        double[] loopPct = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            Phase a = kept.get(r)[0];
            Phase b = kept.get(r)[1];
            p50[r] = b.p50Ms() - a.p50Ms();
            cpu[r] = b.cpuMsPerRequest() - a.cpuMsPerRequest();
            cpuPct[r] = 100 * cpu[r] / a.cpuMsPerRequest();
            loopPct[r] = 100 * (b.loopCpuMsPerRequest() - a.loopCpuMsPerRequest()) / a.loopCpuMsPerRequest();
        }
        return String.format(
                Locale.ROOT,
                "%s - %s, per round:%n  CPU/request %s %%%n  event-loop CPU/request %s %%%n  p50 %s ms%n"
                        + "summary over %d rounds (%d left out: a phase below half the median request count) "
                        + "(median [interquartile range] {min..max}):%n"
                        + "  CPU/request %s ms = %s %%%n  event-loop CPU/request %s %%%n  p50 %s ms",
                sideB,
                sideA,
                list(cpuPct, "%+.1f"),
                list(loopPct, "%+.1f"),
                list(p50, "%+.3f"),
                rounds,
                phases.size() / 2 - rounds,
                summary(cpu, "%+.4f"),
                summary(cpuPct, "%+.1f"),
                summary(loopPct, "%+.1f"),
                summary(p50, "%+.3f"));
    }

    /** Median [first quartile, third quartile] {min..max}. */
    static String summary(double[] v, String format) {
        double[] s = v.clone();
        Arrays.sort(s);
        return String.format(
                Locale.ROOT,
                format + " [" + format + ", " + format + "] {" + format + ".." + format + "}",
                median(s),
                quantile(s, 0.25),
                quantile(s, 0.75),
                s[0],
                s[s.length - 1]);
    }

    /** Linear interpolation between the closest ranks of sorted {@code s}. */
    static double quantile(double[] s, double q) {
        double pos = q * (s.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = Math.min(s.length - 1, lo + 1);
        return s[lo] + (pos - lo) * (s[hi] - s[lo]);
    }

    private static String list(double[] v, String format) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, format, v[i]));
        }
        return b.append(']').toString();
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return quantile(s, 0.5);
    }

    private static String range(List<Phase> phases, String side, java.util.function.ToDoubleFunction<Phase> f) {
        double[] v = phases.stream()
                .filter(p -> p.side().equals(side))
                .mapToDouble(f)
                .sorted()
                .toArray();
        return String.format(Locale.ROOT, "%.3f–%.3f", v[0], v[v.length - 1]);
    }

    private static String loadAverage() {
        try {
            String s = Files.readString(Path.of("/proc/loadavg"));
            return String.join(" ", Arrays.copyOf(s.split(" "), 3));
        } catch (IOException e) {
            return "?";
        }
    }

    private static int awaitPort(Process gateway) throws IOException {
        BufferedReader out =
                new BufferedReader(new InputStreamReader(gateway.getInputStream(), StandardCharsets.UTF_8));
        for (String line; (line = out.readLine()) != null; ) {
            int at = line.indexOf("listening on http://localhost:");
            if (at >= 0) {
                String rest = line.substring(at + "listening on http://localhost:".length());
                int end = 0;
                while (end < rest.length() && Character.isDigit(rest.charAt(end))) {
                    end++;
                }
                Thread drain = new Thread(
                        () -> {
                            try {
                                while (out.readLine() != null) {
                                    // keep the child's pipe from filling
                                }
                            } catch (IOException ignored) {
                                // gone
                            }
                        },
                        "gateway-output");
                drain.setDaemon(true);
                drain.start();
                return Integer.parseInt(rest.substring(0, end));
            }
        }
        throw new IllegalStateException("the gateway exited before listening");
    }

    /** The bench's mix: 256 chat bodies of ~1 KB, 16 system prompts each shared by 16 of them. */
    private static HttpRequest[] requests(URI base, String prefix) {
        SplittableRandom rnd = new SplittableRandom(1024 * 31L);
        String[] words = ("the of and to in is that for it as with was on be by this are from at or an which have "
                        + "order address month second shipment invoice refund customer account")
                .split(" ");
        String[] systems = new String[16];
        for (int i = 0; i < systems.length; i++) {
            systems[i] = "You are assistant number " + i + ". " + words(rnd, words, 472);
        }
        HttpRequest[] all = new HttpRequest[256];
        for (int i = 0; i < all.length; i++) {
            String body = "{\"model\":\"bench\",\"messages\":[{\"role\":\"system\",\"content\":\"" + systems[i % 16]
                    + "\"},{\"role\":\"user\",\"content\":\"" + words(rnd, words, 400)
                    + "\"}],\"stream\":false,\"max_tokens\":32}";
            all[i] = HttpRequest.newBuilder(URI.create(base + prefix + "/v1/chat/completions"))
                    .header("Content-Type", "application/json")
                    .header("x-bench-response", "json")
                    .timeout(Duration.ofSeconds(30))
                    .POST(HttpRequest.BodyPublishers.ofString(body))
                    .build();
        }
        return all;
    }

    private static String words(SplittableRandom rnd, String[] words, int chars) {
        StringBuilder sb = new StringBuilder();
        while (sb.length() < chars) {
            sb.append(words[rnd.nextInt(words.length)]).append(' ');
        }
        sb.setLength(chars);
        return sb.toString();
    }

    /** A closed loop of {@code clients} for {@code secs} seconds on {@code side}. */
    private static Phase phase(HttpClient http, Side side, int clients, int secs) throws Exception {
        HttpRequest[] requests = side.requests();
        long pid = side.pid();
        long[] latencies = new long[2_000_000];
        AtomicInteger count = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger next = new AtomicInteger();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(secs);
        CountDownLatch done = new CountDownLatch(clients);
        long cpu0 = cpuTicks(pid);
        double loop0 = eventLoopTicks(pid);
        long start = System.nanoTime();
        for (int c = 0; c < clients; c++) {
            // paced clients start spread over one interval
            long[] nextAt = {start + (intervalNanos * c) / clients - intervalNanos};
            loop(http, requests, next, end, latencies, count, failed, done, nextAt);
        }
        done.await();
        long cpu1 = cpuTicks(pid);
        double loop1 = eventLoopTicks(pid);
        int n = Math.min(count.get(), latencies.length);
        long[] sorted = Arrays.copyOf(latencies, n);
        Arrays.sort(sorted);
        double ticksPerMs = 100.0 / 1000; // USER_HZ = 100
        return new Phase(
                side.name(),
                n,
                failed.get(),
                n == 0 ? 0 : sorted[n / 2] / 1e6,
                n == 0 ? 0 : sorted[(int) (n * 0.99)] / 1e6,
                (cpu1 - cpu0) / ticksPerMs / Math.max(1, n),
                (loop1 - loop0) / ticksPerMs / Math.max(1, n));
    }

    private static void loop(
            HttpClient http,
            HttpRequest[] requests,
            AtomicInteger next,
            long end,
            long[] latencies,
            AtomicInteger count,
            AtomicInteger failed,
            CountDownLatch done,
            long[] nextAt) {
        long now = System.nanoTime();
        if (now >= end) {
            done.countDown();
            return;
        }
        if (intervalNanos > 0) { // paced: this client's next request is due one interval after the last was
            nextAt[0] += intervalNanos;
            if (nextAt[0] > now) {
                var unused = PACER.schedule(
                        () -> send(http, requests, next, end, latencies, count, failed, done, nextAt),
                        nextAt[0] - now,
                        TimeUnit.NANOSECONDS);
                return;
            }
            nextAt[0] = now; // late: do not send a burst to catch up
        }
        send(http, requests, next, end, latencies, count, failed, done, nextAt);
    }

    private static void send(
            HttpClient http,
            HttpRequest[] requests,
            AtomicInteger next,
            long end,
            long[] latencies,
            AtomicInteger count,
            AtomicInteger failed,
            CountDownLatch done,
            long[] nextAt) {
        HttpRequest req = requests[Math.floorMod(next.getAndIncrement(), requests.length)];
        long t0 = System.nanoTime();
        var unused = http.sendAsync(req, HttpResponse.BodyHandlers.ofByteArray())
                .whenComplete((resp, err) -> {
                    long t = System.nanoTime() - t0;
                    if (err != null || resp.statusCode() != 200) {
                        failed.incrementAndGet();
                    } else {
                        int i = count.getAndIncrement();
                        if (i < latencies.length) {
                            latencies[i] = t;
                        }
                    }
                    loop(http, requests, next, end, latencies, count, failed, done, nextAt);
                });
    }

    /**
     * Time on a CPU of the process's Reactor Netty threads ({@code reactor-http-*}), in clock ticks, from their
     * {@code schedstat} (nanoseconds, so not rounded to ticks; these threads live as long as the gateway).
     */
    private static double eventLoopTicks(long pid) throws IOException {
        long nanos = 0;
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                String comm;
                String schedstat;
                try {
                    comm = Files.readString(task.resolve("comm")).trim();
                    if (!comm.startsWith("reactor-http")) {
                        continue;
                    }
                    schedstat = Files.readString(task.resolve("schedstat"));
                } catch (IOException gone) {
                    continue; // the thread ended
                }
                nanos += Long.parseLong(schedstat.substring(0, schedstat.indexOf(' ')));
            }
        }
        return nanos / 1e7; // USER_HZ = 100: a tick is 10 ms
    }

    /** utime + stime of a process, in clock ticks. */
    private static long cpuTicks(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }
}
