package dev.cart.examples.gateway;

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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What CART costs inside the gateway: the example gateway (its jar, in a child process) in front of the bench's
 * fast fake replica (examples/bench {@code FakeReplica}, a child process answering at once with a canned chat
 * completion), driven in a closed loop of {@code --clients} connections from this process, alternating between
 * the route CART balances ({@code /v1/...}, service {@code llm}) and the same gateway's default round robin over
 * the same replica ports ({@code /rr/v1/...}, service {@code llm-rr}). After a warm-up of both routes
 * ({@code --warmup-secs}, each route twice), each round runs one phase per route, in ABBA order; a phase reports the
 * client-side p50 and p99 latency and the gateway's CPU time per request, the process's (from
 * {@code /proc/<pid>/stat}: JIT compiler and GC threads included) and its Reactor Netty event loops' alone (from
 * {@code /proc/<pid>/task/<tid>/stat}: the request path). CPU time per request is what holds on a loaded machine;
 * latency there includes waiting for a core. The rounds give ranges and per-round differences. Requests are ~1 KB
 * chat bodies, 16 system prompts shared by 256 requests (the bench's mix). Not run by the test suite:
 *
 * <pre>
 * java -cp ... dev.cart.examples.gateway.GatewayOverhead [--rounds 3] [--secs 10] [--clients 16] [--warmup-secs 60]
 *     [--gateway-jvm-arg ARG]... [--only cart|round_robin]
 * </pre>
 *
 * <p>{@code --gateway-jvm-arg} passes an option to the gateway's JVM (a flight recording, say);
 * {@code --only} drives one route alone (to profile it), with no differences printed.
 */
final class GatewayOverhead {

    private GatewayOverhead() {}

    /**
     * One closed-loop phase: client latencies, and the gateway's CPU time per request, the whole process's (JIT and
     * GC threads included) and its Reactor Netty event loops' alone (the request path).
     */
    record Phase(
            String route,
            int requests,
            int failed,
            double p50Ms,
            double p99Ms,
            double cpuMsPerRequest,
            double loopCpuMsPerRequest) {}

    public static void main(String[] args) throws Exception {
        int rounds = 3;
        int secs = 10;
        int clients = 16;
        int warmupSecs = 60;
        String jar = "examples/gateway/target/cart-gateway-example.jar";
        String benchClasses = "examples/bench/target/classes";
        List<String> jvmArgs = new ArrayList<>();
        String only = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--secs" -> secs = Integer.parseInt(args[++i]);
                case "--clients" -> clients = Integer.parseInt(args[++i]);
                case "--warmup-secs" -> warmupSecs = Integer.parseInt(args[++i]);
                case "--jar" -> jar = args[++i];
                case "--bench-classes" -> benchClasses = args[++i];
                case "--gateway-jvm-arg" -> jvmArgs.add(args[++i]);
                case "--only" -> only = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process replica = new ProcessBuilder(java, "-cp", benchClasses, "dev.cart.bench.FakeReplica", "4")
                .redirectErrorStream(true)
                .start();
        Process gateway = null;
        try {
            String portsLine = new BufferedReader(
                            new InputStreamReader(replica.getInputStream(), StandardCharsets.UTF_8))
                    .readLine();
            if (portsLine == null || !portsLine.startsWith("PORTS ")) {
                throw new IllegalStateException("fake replica did not start: " + portsLine);
            }
            String[] ports = portsLine.substring(6).split(",");
            List<String> cmd = new ArrayList<>(List.of(java, "-Xmx1g"));
            cmd.addAll(jvmArgs);
            cmd.addAll(List.of(
                    "-jar", jar, "--server.port=0", "--logging.level.root=WARN", "--spring.main.banner-mode=off"));
            for (int i = 0; i < ports.length; i++) {
                for (String service : List.of("llm", "llm-rr")) {
                    cmd.add("--spring.cloud.discovery.client.simple.instances." + service + "[" + i
                            + "].uri=http://127.0.0.1:" + ports[i]);
                }
            }
            gateway = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            int port = awaitPort(gateway);
            URI base = URI.create("http://127.0.0.1:" + port);
            HttpRequest[] cart = requests(base, "");
            HttpRequest[] rr = requests(base, "/rr");
            HttpClient http =
                    HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            System.out.println("warming up both routes...");
            boolean[] both = {true, false};
            boolean[] routes = only == null ? both : new boolean[] {only.equals("cart")};
            for (int w = 0; w < 2; w++) { // both routes twice, so that neither is measured right after its first use
                for (boolean useCart : routes) {
                    phase(
                            http,
                            useCart ? cart : rr,
                            clients,
                            Math.max(1, warmupSecs / 4),
                            gateway.pid(),
                            useCart ? "cart" : "round_robin");
                }
            }
            List<Phase> phases = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                boolean[] order = only != null ? routes : r % 2 == 0 ? both : new boolean[] {false, true}; // ABBA
                for (boolean useCart : order) {
                    Phase p = phase(
                            http, useCart ? cart : rr, clients, secs, gateway.pid(), useCart ? "cart" : "round_robin");
                    phases.add(p);
                    System.out.printf(
                            Locale.ROOT,
                            "round %d %-11s: %d requests (%d failed), p50 %.3f ms, p99 %.3f ms, "
                                    + "gateway CPU %.3f ms/request (event loops %.3f)%n",
                            r + 1,
                            p.route(),
                            p.requests(),
                            p.failed(),
                            p.p50Ms(),
                            p.p99Ms(),
                            p.cpuMsPerRequest(),
                            p.loopCpuMsPerRequest());
                }
            }
            System.out.printf(
                    Locale.ROOT,
                    "%n%d rounds of %d s per route (order alternating), %d clients (closed loop), %d cores, Java %s%n",
                    rounds,
                    secs,
                    clients,
                    Runtime.getRuntime().availableProcessors(),
                    Runtime.version());
            int phaseSecs = secs;
            for (String route : only != null ? List.of(only) : List.of("round_robin", "cart")) {
                System.out.printf(
                        Locale.ROOT,
                        "%-11s p50 %s ms, p99 %s ms, CPU %s ms/request (event loops %s), %s req/s%n",
                        route,
                        range(phases, route, Phase::p50Ms),
                        range(phases, route, Phase::p99Ms),
                        range(phases, route, Phase::cpuMsPerRequest),
                        range(phases, route, Phase::loopCpuMsPerRequest),
                        range(phases, route, p -> (double) p.requests() / phaseSecs));
            }
            if (only == null) {
                System.out.println(differences(phases));
            }
        } finally {
            if (gateway != null) {
                gateway.destroy();
                gateway.waitFor(20, TimeUnit.SECONDS);
            }
            replica.getOutputStream().close();
            replica.destroy();
        }
        System.exit(0);
    }

    /** Per round, CART's phase against the round-robin phase of the same round: p50 and CPU per request. */
    static String differences(List<Phase> phases) {
        int rounds = phases.size() / 2;
        double[] p50 = new double[rounds];
        double[] cpu = new double[rounds];
        double[] cpuPct = new double[rounds];
        double[] loopPct = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            Phase a = phases.get(2 * r);
            Phase b = phases.get(2 * r + 1);
            Phase cart = a.route().equals("cart") ? a : b;
            Phase rr = cart == a ? b : a;
            p50[r] = cart.p50Ms() - rr.p50Ms();
            cpu[r] = cart.cpuMsPerRequest() - rr.cpuMsPerRequest();
            cpuPct[r] = 100 * cpu[r] / rr.cpuMsPerRequest();
            loopPct[r] = 100 * (cart.loopCpuMsPerRequest() - rr.loopCpuMsPerRequest()) / rr.loopCpuMsPerRequest();
        }
        return String.format(
                Locale.ROOT,
                "CART - round robin, per round: p50 %s ms (median %+.3f); CPU %s ms/request (median %+.3f), "
                        + "%s %% (median %+.1f %%); event-loop CPU %s %% (median %+.1f %%)",
                list(p50, "%+.3f"),
                median(p50),
                list(cpu, "%+.3f"),
                median(cpu),
                list(cpuPct, "%+.1f"),
                median(cpuPct),
                list(loopPct, "%+.1f"),
                median(loopPct));
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
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static String range(List<Phase> phases, String route, java.util.function.ToDoubleFunction<Phase> f) {
        double[] v = phases.stream()
                .filter(p -> p.route().equals(route))
                .mapToDouble(f)
                .sorted()
                .toArray();
        return String.format(Locale.ROOT, "%.3f–%.3f", v[0], v[v.length - 1]);
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

    /** A closed loop of {@code clients} for {@code secs} seconds. */
    private static Phase phase(HttpClient http, HttpRequest[] requests, int clients, int secs, long pid, String route)
            throws Exception {
        long[] latencies = new long[2_000_000];
        AtomicInteger count = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger next = new AtomicInteger();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(secs);
        CountDownLatch done = new CountDownLatch(clients);
        long cpu0 = cpuTicks(pid);
        long loop0 = eventLoopTicks(pid);
        for (int c = 0; c < clients; c++) {
            loop(http, requests, next, end, latencies, count, failed, done);
        }
        done.await();
        long cpu1 = cpuTicks(pid);
        long loop1 = eventLoopTicks(pid);
        int n = Math.min(count.get(), latencies.length);
        long[] sorted = Arrays.copyOf(latencies, n);
        Arrays.sort(sorted);
        double ticksPerMs = 100.0 / 1000; // USER_HZ = 100
        return new Phase(
                route,
                n,
                failed.get(),
                sorted[n / 2] / 1e6,
                sorted[(int) (n * 0.99)] / 1e6,
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
            CountDownLatch done) {
        if (System.nanoTime() >= end) {
            done.countDown();
            return;
        }
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
                    loop(http, requests, next, end, latencies, count, failed, done);
                });
    }

    /** utime + stime of the process's Reactor Netty threads ({@code reactor-http-*}), in clock ticks. */
    private static long eventLoopTicks(long pid) throws IOException {
        long ticks = 0;
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                String stat;
                try {
                    stat = Files.readString(task.resolve("stat"));
                } catch (IOException gone) {
                    continue; // the thread ended
                }
                String comm = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                if (comm.startsWith("reactor-http")) {
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                }
            }
        }
        return ticks;
    }

    /** utime + stime of a process, in clock ticks. */
    private static long cpuTicks(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }
}
