package dev.cart.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The proxy overhead benchmark: one fast fake replica ({@link FakeReplica}, 4 ports), the CART proxy in
 * front of it, and nginx as a plain reverse proxy in front of the same replica, all child processes on
 * loopback; the same request mix sent straight to the replica, through CART and through nginx, in one run.
 *
 * <p>{@code overhead} mode (the default), for each body size and streaming choice, and each target in turn:
 * <ol>
 *   <li>warm-up: closed loop for {@code --warmup-secs};</li>
 *   <li>open loop at {@code --rate} requests per second for {@code --open-secs}: request {@code i} is due at
 *       {@code start + i / rate}; latency is measured from when it was due, not from when a connection was
 *       free to send it, so a stall delays every request that should have been sent meanwhile and shows in
 *       the percentiles (no coordinated omission). {@code --open-workers} connections carry the requests;</li>
 *   <li>closed loop with {@code --connections} connections for {@code --closed-secs}, each sending its next
 *       request as soon as the answer is in: the highest rate the target sustains at that concurrency.</li>
 * </ol>
 * CPU time of every process (from {@code /proc/<pid>/stat}) is taken around each measured phase, and split by
 * the kind of thread that spent it (event loops and request handling, JIT, GC, other: {@link ThreadCpu}); each
 * phase prints its target's user and system time and that split in µs per request, and {@code results.md} has
 * them for every watched process.
 * {@code --targets} picks and orders the targets: {@code direct}, {@code cart} (the proxy's defaults),
 * {@code cart-base} (another build of the proxy, {@code --base-jar}, or
 * the same one with {@code --base-yaml} appended to its configuration or {@code --base-opts} to its JVM
 * options, for before/after pairs in one run), {@code nginx}, and the pass-throughs with no routing {@code ref-netty}
 * ({@link RefNetty}), {@code ref-jdk} and {@code ref-socket} ({@link RefProxy}).
 * {@code --parts} records each proxy target's closed loop (and {@code ref-netty}'s, which pays the recording's cost
 * too) with JFR and prints its event loops' CPU per request split by part of the request path ({@link PhaseParts}),
 * also as a table at the end of {@code results.md}.
 * {@code --cart-yaml} appends to the CART proxy's configuration (for instance
 * {@code 'cache:\n  learn_answer: false'}, {@code \n} for a line break).
 *
 * <p>{@code idle} mode: the proxy (best on Java 21+, {@code --proxy-java}) with raised limits; opens
 * {@code --streams} streams (in the steps of {@code --steps}) whose replica sends the head and one event and
 * then nothing; at each step, the proxy's heap after a full GC ({@code jcmd GC.run}, {@code GC.heap_info}),
 * its thread count and resident size ({@code /proc/<pid>/status}), and the in-flight count it reports.
 *
 * <p>Never part of the tests: run by hand, see {@code docs/benchmarks.md}.
 */
@SuppressWarnings({"ReferenceEquality", "IncrementInForLoopAndHeader"
}) // the direct target is compared by identity; flags take their value by i++
public final class ProxyBench {

    private static final PrintStream OUT = System.out;

    private ProxyBench() {}

    // ------------------------------------------------------------------------------------------------
    // options

    static final class Options {
        String mode = "overhead";
        String proxyJar = "cart-proxy/target/cart-proxy.jar";
        String proxyJava =
                Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String proxyOpts = "";
        /** The jar of the {@code cart-base} target: another build of the proxy, measured in the same run. */
        String baseJar;
        /** YAML appended to the {@code cart-base} target's configuration only (after {@code --cart-yaml}). */
        String baseYaml = "";
        /** JVM options of the {@code cart-base} target only (after {@code --proxy-opts}). */
        String baseOpts = "";
        /** YAML appended to the CART proxy's configuration (sections other than server and workers). */
        String cartYaml = "";

        String nginx = "nginx";
        int rate = 500;
        int openSecs = 20;
        int closedSecs = 10;
        int warmupSecs = 8;
        int firstWarmupSecs = 30;
        int connections = 64;
        int openWorkers = 64;
        int[] sizes = {1024, 32 * 1024};
        boolean[] streams = {false, true};
        List<String> targets = List.of("direct", "cart", "nginx");
        int streamsToHold = 9_900;
        int[] steps = {1_000, 5_000};
        int holdSecs = 5;
        /** Record each proxy target's closed loop with JFR and split its loops' CPU by part ({@link PhaseParts}). */
        boolean parts;

        Path out;

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[i + 1] : null;
                switch (a) {
                    case "overhead", "idle" -> {
                        o.mode = a;
                        continue;
                    }
                    case "--proxy-jar" -> o.proxyJar = v;
                    case "--proxy-java" -> o.proxyJava = v;
                    case "--proxy-opts" -> o.proxyOpts = v;
                    case "--base-jar" -> o.baseJar = v;
                    case "--base-opts" -> o.baseOpts = v;
                    case "--base-yaml" -> o.baseYaml = v.replace("\\n", "\n");
                    case "--cart-yaml" -> o.cartYaml = v.replace("\\n", "\n");
                    case "--nginx" -> o.nginx = v;
                    case "--rate" -> o.rate = Integer.parseInt(v);
                    case "--open-secs" -> o.openSecs = Integer.parseInt(v);
                    case "--closed-secs" -> o.closedSecs = Integer.parseInt(v);
                    case "--warmup-secs" -> o.warmupSecs = Integer.parseInt(v);
                    case "--first-warmup-secs" -> o.firstWarmupSecs = Integer.parseInt(v);
                    case "--connections" -> o.connections = Integer.parseInt(v);
                    case "--open-workers" -> o.openWorkers = Integer.parseInt(v);
                    case "--sizes" ->
                        o.sizes = Arrays.stream(v.split(","))
                                .mapToInt(Integer::parseInt)
                                .toArray();
                    case "--stream" -> {
                        String[] s = v.split(",");
                        o.streams = new boolean[s.length];
                        for (int k = 0; k < s.length; k++) {
                            o.streams[k] = Boolean.parseBoolean(s[k]);
                        }
                    }
                    case "--targets" -> o.targets = List.of(v.split(","));
                    case "--streams" -> o.streamsToHold = Integer.parseInt(v);
                    case "--steps" ->
                        o.steps = v.isEmpty()
                                ? new int[0]
                                : Arrays.stream(v.split(","))
                                        .mapToInt(Integer::parseInt)
                                        .toArray();
                    case "--hold-secs" -> o.holdSecs = Integer.parseInt(v);
                    case "--out" -> o.out = Path.of(v);
                    case "--parts" -> {
                        o.parts = true;
                        continue;
                    }
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
                i++;
            }
            if (o.out == null) {
                o.out = Path.of(
                        "target",
                        "proxy-bench-"
                                + LocalDateTime.now(ZoneOffset.UTC)
                                        .format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
            }
            return o;
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = Options.parse(args);
        Files.createDirectories(o.out);
        OUT.printf("output in %s%n", o.out.toAbsolutePath());
        try {
            if (o.mode.equals("idle")) {
                idle(o);
            } else {
                overhead(o);
            }
        } finally {
            Children.stopAll();
        }
        System.exit(0);
    }

    // ------------------------------------------------------------------------------------------------
    // the request mix

    private static final String[] WORDS = ("the of and to in is that for it as with was on be by this are from at "
                    + "or an which have not but they his her their one all were there been has when who will more no if "
                    + "out so said what up its about into than them can only other new some could time these two may then "
                    + "order address month second shipment invoice refund customer account")
            .split(" ");

    private static String words(SplittableRandom rnd, int chars) {
        StringBuilder sb = new StringBuilder(chars + 16);
        while (sb.length() < chars) {
            sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
        }
        sb.setLength(chars);
        return sb.toString();
    }

    /**
     * 256 chat requests of about {@code size} bytes each: a system prompt shared by a sixteenth of them (16
     * prompts of half the body), then a user message of its own; {@code "stream"} as asked.
     */
    static byte[][] requests(int size, boolean stream, String responseKind) {
        SplittableRandom rnd = new SplittableRandom(size * 31L + (stream ? 1 : 0));
        String[] systems = new String[16];
        for (int i = 0; i < systems.length; i++) {
            systems[i] = "You are assistant number " + i + ". " + words(rnd, size / 2 - 40);
        }
        byte[][] all = new byte[256][];
        for (int i = 0; i < all.length; i++) {
            String head = "{\"model\":\"bench\",\"messages\":[{\"role\":\"system\",\"content\":\"" + systems[i % 16]
                    + "\"},{\"role\":\"user\",\"content\":\"";
            String tail = "\"}],\"stream\":" + stream + ",\"max_tokens\":32}";
            int userChars = Math.max(16, size - head.length() - tail.length());
            byte[] body = (head + words(rnd, userChars) + tail).getBytes(StandardCharsets.UTF_8);
            byte[] h = ("POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                            + "Accept: " + (stream ? "text/event-stream" : "application/json") + "\r\n"
                            + FakeReplica.HEADER + ": " + responseKind + "\r\nContent-Length: " + body.length
                            + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII);
            byte[] req = Arrays.copyOf(h, h.length + body.length);
            System.arraycopy(body, 0, req, h.length, body.length);
            all[i] = req;
        }
        return all;
    }

    // ------------------------------------------------------------------------------------------------
    // targets

    /** Where requests go: one or more addresses, connection {@code i} to address {@code i % n}. */
    record Target(String name, List<InetSocketAddress> addresses, long pid) {
        InetSocketAddress address(int i) {
            return addresses.get(i % addresses.size());
        }
    }

    /** JVM option of the {@code cart-nodelay} target: TCP_NODELAY on the JDK HTTP server's connections. */
    static final String NODELAY = "-Dsun.net.httpserver.nodelay=true";

    private static Process startCart(Options o, List<Integer> replicaPorts, int port, boolean idle) throws IOException {
        return startCart(o, replicaPorts, port, idle, idle ? "cart-idle" : "cart", "");
    }

    private static Process startCart(
            Options o, List<Integer> replicaPorts, int port, boolean idle, String name, String extraOpts)
            throws IOException {
        StringBuilder yaml = new StringBuilder();
        yaml.append("server:\n  host: \"127.0.0.1\"\n  port: ").append(port).append('\n');
        if (idle) {
            yaml.append("  max_connections: 30000\n  max_concurrent_requests: 30000\n");
        }
        yaml.append("workers:\n");
        for (int p : replicaPorts) {
            yaml.append("  - url: \"http://127.0.0.1:").append(p).append("\"\n");
            if (idle) {
                yaml.append("    max_load: 30000\n");
            }
        }
        if (!o.cartYaml.isBlank()) {
            yaml.append(o.cartYaml).append('\n');
        }
        if (name.equals("cart-base") && !o.baseYaml.isBlank()) {
            yaml.append(o.baseYaml).append('\n');
        }
        Path cfg = o.out.resolve(name + ".yaml");
        Files.writeString(cfg, yaml.toString());
        List<String> cmd = new ArrayList<>();
        cmd.add(o.proxyJava);
        String opts = (o.proxyOpts + " " + extraOpts).trim();
        if (!opts.isEmpty()) {
            cmd.addAll(List.of(opts.split("\\s+")));
        }
        String jar = name.equals("cart-base") && o.baseJar != null ? o.baseJar : o.proxyJar;
        cmd.addAll(List.of("-jar", jar, "-c", cfg.toString()));
        Files.writeString(o.out.resolve(name + "-command.txt"), String.join(" ", cmd) + "\n");
        return Children.start(cmd, o.out.resolve(name + ".log"), false);
    }

    /**
     * Starts a reference pass-through ({@code main} of {@code mainClass}: its leading {@code args}, then the
     * port it listens on and the replica's ports, comma-separated) with the proxy's JVM and options, and waits
     * until it answers {@code /health}.
     */
    private static Target startReference(
            Options o, Children.Replica replica, String name, String classPath, Class<?> mainClass, String... args)
            throws IOException, InterruptedException {
        int port = Children.freePort();
        List<String> cmd = new ArrayList<>();
        cmd.add(o.proxyJava);
        if (!o.proxyOpts.isBlank()) {
            cmd.addAll(List.of(o.proxyOpts.trim().split("\\s+")));
        }
        StringBuilder ports = new StringBuilder();
        for (int p : replica.ports()) {
            ports.append(ports.length() == 0 ? "" : ",").append(p);
        }
        cmd.addAll(List.of("-cp", classPath, mainClass.getName()));
        cmd.addAll(List.of(args));
        cmd.addAll(List.of(Integer.toString(port), ports.toString()));
        Process p = Children.start(cmd, o.out.resolve(name + ".log"), false);
        Children.awaitOk("http://127.0.0.1:" + port + "/health", p, Duration.ofSeconds(30));
        return new Target(name, List.of(new InetSocketAddress("127.0.0.1", port)), p.pid());
    }

    private static Process startNginx(Options o, List<Integer> replicaPorts, int port) throws IOException {
        Path dir = o.out.resolve("nginx").toAbsolutePath();
        Files.createDirectories(dir.resolve("logs"));
        Files.createDirectories(dir.resolve("tmp"));
        StringBuilder upstream = new StringBuilder();
        for (int p : replicaPorts) {
            upstream.append("    server 127.0.0.1:").append(p).append(";\n");
        }
        String conf = """
                # generated by dev.cart.bench.ProxyBench: a plain reverse proxy, as a user would set one up
                # for an OpenAI-compatible pool (streaming answers passed through unbuffered).
                user root;
                worker_processes auto;
                pid %1$s/nginx.pid;
                error_log %1$s/logs/error.log warn;
                events { worker_connections 20000; }
                http {
                  access_log %1$s/logs/access.log;
                  client_body_temp_path %1$s/tmp/body;
                  proxy_temp_path %1$s/tmp/proxy;
                  fastcgi_temp_path %1$s/tmp/fastcgi;
                  uwsgi_temp_path %1$s/tmp/uwsgi;
                  scgi_temp_path %1$s/tmp/scgi;
                  client_max_body_size 32m;
                  client_body_buffer_size 64k;
                  keepalive_requests 1000000;
                  upstream replicas {
                %2$s    keepalive 256;
                  }
                  server {
                    listen 127.0.0.1:%3$d;
                    location / {
                      proxy_pass http://replicas;
                      proxy_http_version 1.1;
                      proxy_set_header Connection "";
                      proxy_buffering off;
                      proxy_read_timeout 600s;
                    }
                  }
                }
                """.formatted(dir, upstream, port);
        Path cfg = dir.resolve("nginx.conf");
        Files.writeString(cfg, conf);
        List<String> cmd = List.of(o.nginx, "-p", dir.toString(), "-c", cfg.toString(), "-g", "daemon off;");
        return Children.start(cmd, dir.resolve("logs/stdout.log"), false);
    }

    // ------------------------------------------------------------------------------------------------
    // overhead

    /** What one measured phase gave. */
    record Phase(
            String target,
            int size,
            boolean stream,
            String kind,
            int sent,
            int ok,
            int errors,
            double seconds,
            long[] latencyNanos,
            long[] firstByteNanos,
            Map<String, ThreadCpu.Split> cpu,
            double load) {
        double rate() {
            return ok / seconds;
        }

        /**
         * Each watched process's CPU time in ms per request (user plus system of the process, with its
         * descendants', from {@code /proc/<pid>/stat}; 100 ticks per second).
         */
        Map<String, Double> cpuMsPerRequest() {
            Map<String, Double> m = new LinkedHashMap<>();
            cpu.forEach((k, c) -> m.put(k, ok == 0 ? 0 : c.total() * 10.0 / ok));
            return m;
        }

        /** The CPU split of the process that served the phase: the proxy, or the replica for {@code direct}. */
        ThreadCpu.Split targetCpu() {
            return cpu.get(target.equals("direct") ? "replica" : target);
        }

        double pct(double p) {
            return percentile(latencyNanos, p) / 1000.0;
        }

        double ttfb(double p) {
            return percentile(firstByteNanos, p) / 1000.0;
        }
    }

    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return -1;
        }
        int idx = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, idx))];
    }

    private static void overhead(Options o) throws Exception {
        Children.Replica replica = Children.replica(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), 4, o.out);
        Map<String, Target> targets = new LinkedHashMap<>();
        List<InetSocketAddress> direct = new ArrayList<>();
        for (int p : replica.ports()) {
            direct.add(new InetSocketAddress("127.0.0.1", p));
        }
        targets.put("direct", new Target("direct", direct, replica.process().pid()));
        if (o.targets.contains("cart")) {
            int port = Children.freePort();
            Process cart = startCart(o, replica.ports(), port, false);
            Children.awaitOk("http://127.0.0.1:" + port + "/health", cart, Duration.ofSeconds(60));
            targets.put("cart", new Target("cart", List.of(new InetSocketAddress("127.0.0.1", port)), cart.pid()));
        }
        if (o.targets.contains("cart-base")) {
            if (o.baseJar == null && o.baseYaml.isBlank() && o.baseOpts.isBlank()) {
                throw new IllegalArgumentException("the cart-base target needs --base-jar, --base-yaml or --base-opts");
            }
            int port = Children.freePort();
            Process cart = startCart(o, replica.ports(), port, false, "cart-base", o.baseOpts);
            Children.awaitOk("http://127.0.0.1:" + port + "/health", cart, Duration.ofSeconds(60));
            targets.put(
                    "cart-base",
                    new Target("cart-base", List.of(new InetSocketAddress("127.0.0.1", port)), cart.pid()));
        }
        if (o.targets.contains("cart-nodelay")) {
            int port = Children.freePort();
            Process cart = startCart(o, replica.ports(), port, false, "cart-nodelay", NODELAY);
            Children.awaitOk("http://127.0.0.1:" + port + "/health", cart, Duration.ofSeconds(60));
            targets.put(
                    "cart-nodelay",
                    new Target("cart-nodelay", List.of(new InetSocketAddress("127.0.0.1", port)), cart.pid()));
        }
        if (o.targets.contains("nginx")) {
            int port = Children.freePort();
            Process nginx = startNginx(o, replica.ports(), port);
            Children.awaitOk("http://127.0.0.1:" + port + "/health", nginx, Duration.ofSeconds(30));
            targets.put("nginx", new Target("nginx", List.of(new InetSocketAddress("127.0.0.1", port)), nginx.pid()));
        }
        for (String ref : List.of("ref-jdk", "ref-socket")) {
            if (o.targets.contains(ref)) {
                targets.put(
                        ref,
                        startReference(
                                o,
                                replica,
                                ref,
                                System.getProperty("java.class.path"),
                                RefProxy.class,
                                ref.substring(4)));
            }
        }
        if (o.targets.contains("ref-netty")) {
            // Netty comes from the proxy's shaded jar: the same Netty, and native epoll, as the proxy's
            String cp = System.getProperty("java.class.path") + java.io.File.pathSeparator + o.proxyJar;
            targets.put("ref-netty", startReference(o, replica, "ref-netty", cp, RefNetty.class));
        }
        Map<String, Long> pids = new LinkedHashMap<>();
        pids.put("generator", -ProcessHandle.current().pid()); // negative: this process only, not its children
        pids.put("replica", replica.process().pid());
        targets.values().stream().filter(t -> !t.name().equals("direct")).forEach(t -> pids.put(t.name(), t.pid()));

        StringBuilder report = new StringBuilder();
        report.append(environment(o)).append('\n');
        List<Phase> phases = new ArrayList<>();
        PhaseParts parts = o.parts ? PhaseParts.create(o.proxyJava, o.out) : null;
        java.util.Set<String> warm = new java.util.HashSet<>();
        for (int size : o.sizes) {
            for (boolean stream : o.streams) {
                byte[][] reqs = requests(size, stream, stream ? "sse" : "json");
                for (String name : o.targets) {
                    Target t = targets.get(name);
                    int warmup = warm.add(name) ? Math.max(o.warmupSecs, o.firstWarmupSecs) : o.warmupSecs;
                    // ref-netty is recorded too: the recording costs its loops CPU as well, so the excess stays fair
                    boolean recorded = parts != null && (name.startsWith("cart") || name.equals("ref-netty"));
                    if (recorded) {
                        parts.arm(t.pid());
                    }
                    OUT.printf("%n== %s, %d B, stream=%s: warm-up %d s%n", name, size, stream, warmup);
                    closedLoop(t, reqs, Math.min(16, o.connections), warmup, size, stream, pids);
                    OUT.printf("   open loop %d req/s for %d s (load %.2f)%n", o.rate, o.openSecs, Children.load());
                    Phase open = openLoop(t, reqs, o.rate, o.openSecs, o.openWorkers, size, stream, pids);
                    phases.add(open);
                    print(open);
                    OUT.printf(
                            "   closed loop, %d connections, %d s (load %.2f)%n",
                            o.connections, o.closedSecs, Children.load());
                    if (recorded) {
                        parts.start();
                    }
                    Phase closed = closedLoop(t, reqs, o.connections, o.closedSecs, size, stream, pids);
                    phases.add(closed);
                    print(closed);
                    if (recorded) {
                        parts.stop(closed).forEach(OUT::println);
                    }
                }
            }
        }
        report.append(tables(o, phases));
        if (parts != null) {
            report.append(parts.table());
        }
        Path md = o.out.resolve("results.md");
        Files.writeString(md, report.toString());
        OUT.println();
        OUT.println(report);
    }

    private static void print(Phase p) {
        OUT.printf(
                Locale.ROOT,
                "   %-6s %-6s ok=%d err=%d rate=%.0f/s p50=%.0fus p90=%.0fus p99=%.0fus p99.9=%.0fus "
                        + "max=%.0fus ttfb50=%.0fus cpu(ms/req)=%s%n",
                p.target(),
                p.kind(),
                p.ok(),
                p.errors(),
                p.rate(),
                p.pct(50),
                p.pct(90),
                p.pct(99),
                p.pct(99.9),
                p.pct(100),
                p.ttfb(50),
                fmt(p.cpuMsPerRequest()));
        ThreadCpu.Split c = p.targetCpu();
        if (c != null) {
            OUT.printf(
                    Locale.ROOT,
                    "   %-6s %-6s cpu user/sys us/req=%s loops/jit/gc/other us/req=%s unseen=%.1f%n",
                    p.target(),
                    p.kind(),
                    c.userSys(p.ok()),
                    c.kinds(p.ok()),
                    ThreadCpu.Split.perRequest(c.unseen(), p.ok()));
        }
    }

    private static String fmt(Map<String, Double> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : " ")
                .append(k)
                .append('=')
                .append(String.format(Locale.ROOT, "%.3f", v)));
        return sb.toString();
    }

    /**
     * Open loop: request {@code i} is due at {@code start + i / rate} and its latency runs from then, whether
     * or not a connection was free at that moment.
     */
    static Phase openLoop(
            Target t, byte[][] reqs, int rate, int secs, int workers, int size, boolean stream, Map<String, Long> pids)
            throws Exception {
        int total = rate * secs;
        long period = 1_000_000_000L / rate;
        long[] lat = new long[total];
        long[] ttfb = new long[total];
        AtomicInteger done = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        LinkedBlockingQueue<Long> due = new LinkedBlockingQueue<>();
        List<HttpConn> conns = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            conns.add(new HttpConn(t.address(i)));
        }
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        AtomicInteger next = new AtomicInteger();
        List<Future<?>> fs = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            int id = w;
            fs.add(pool.submit(() -> {
                Worker c = new Worker(t, id, conns.get(id));
                while (true) {
                    long at = due.take();
                    if (at == Long.MIN_VALUE) {
                        break;
                    }
                    byte[] req = reqs[next.getAndIncrement() & (reqs.length - 1)];
                    int status = c.send(req);
                    long end = System.nanoTime();
                    if (status == 200) {
                        int k = done.getAndIncrement();
                        lat[k] = end - at;
                        ttfb[k] = c.conn.firstByte - at;
                    } else {
                        errors.incrementAndGet();
                    }
                }
                c.close();
                return null;
            }));
        }
        double load = Children.load();
        Map<String, ThreadCpu.Sample> before = ThreadCpu.read(pids);
        long start = System.nanoTime() + 100_000_000L;
        for (int i = 0; i < total; i++) {
            long at = start + i * period;
            long wait;
            while ((wait = at - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            due.add(at);
        }
        for (int w = 0; w < workers; w++) {
            due.add(Long.MIN_VALUE);
        }
        for (Future<?> f : fs) {
            f.get();
        }
        long end = System.nanoTime();
        Map<String, ThreadCpu.Sample> after = ThreadCpu.read(pids);
        pool.shutdown();
        int ok = done.get();
        long[] l = Arrays.copyOf(lat, ok);
        long[] f = Arrays.copyOf(ttfb, ok);
        Arrays.sort(l);
        Arrays.sort(f);
        return new Phase(
                t.name(),
                size,
                stream,
                "open",
                total,
                ok,
                errors.get(),
                (end - start) / 1e9,
                l,
                f,
                ThreadCpu.between(before, after),
                load);
    }

    /** One load-generating connection: reopened before the next request when the last one failed. */
    private static final class Worker {
        private final Target target;
        private final int id;
        HttpConn conn;

        Worker(Target target, int id, HttpConn conn) {
            this.target = target;
            this.id = id;
            this.conn = conn;
        }

        /** The answer's status, or -1 when the exchange failed (the connection is then closed). */
        int send(byte[] req) {
            try {
                if (!conn.isOpen()) {
                    conn = new HttpConn(target.address(id));
                }
                return conn.exchange(req);
            } catch (IOException e) {
                conn.close();
                return -1;
            }
        }

        void close() {
            conn.close();
        }
    }

    /** Closed loop: each connection sends its next request as soon as it has the answer to the last one. */
    static Phase closedLoop(
            Target t, byte[][] reqs, int connections, int secs, int size, boolean stream, Map<String, Long> pids)
            throws Exception {
        int cap = 4_000_000;
        long[] lat = new long[cap];
        long[] ttfb = new long[cap];
        AtomicInteger done = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        AtomicLong sent = new AtomicLong();
        List<HttpConn> conns = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            conns.add(new HttpConn(t.address(i)));
        }
        ExecutorService pool = Executors.newFixedThreadPool(connections);
        AtomicInteger next = new AtomicInteger();
        double load = Children.load();
        Map<String, ThreadCpu.Sample> before = ThreadCpu.read(pids);
        long start = System.nanoTime();
        long deadline = start + secs * 1_000_000_000L;
        List<Future<?>> fs = new ArrayList<>();
        for (int w = 0; w < connections; w++) {
            int id = w;
            fs.add(pool.submit(() -> {
                Worker c = new Worker(t, id, conns.get(id));
                while (System.nanoTime() < deadline) {
                    byte[] req = reqs[next.getAndIncrement() & (reqs.length - 1)];
                    sent.incrementAndGet();
                    long t0 = System.nanoTime();
                    int status = c.send(req);
                    long t1 = System.nanoTime();
                    if (status == 200) {
                        int k = done.getAndIncrement();
                        if (k < cap) {
                            lat[k] = t1 - t0;
                            ttfb[k] = c.conn.firstByte - t0;
                        }
                    } else {
                        errors.incrementAndGet();
                    }
                }
                c.close();
                return null;
            }));
        }
        for (Future<?> f : fs) {
            f.get();
        }
        long end = System.nanoTime();
        Map<String, ThreadCpu.Sample> after = ThreadCpu.read(pids);
        pool.shutdown();
        int ok = done.get();
        long[] l = Arrays.copyOf(lat, Math.min(ok, cap));
        long[] f = Arrays.copyOf(ttfb, Math.min(ok, cap));
        Arrays.sort(l);
        Arrays.sort(f);
        return new Phase(
                t.name(),
                size,
                stream,
                "closed",
                (int) sent.get(),
                ok,
                errors.get(),
                (end - start) / 1e9,
                l,
                f,
                ThreadCpu.between(before, after),
                load);
    }

    private static String environment(Options o) throws Exception {
        StringBuilder sb = new StringBuilder("# Proxy overhead run\n\n");
        sb.append("- date: ").append(LocalDateTime.now(ZoneOffset.UTC)).append('\n');
        sb.append("- generator and replica JVM: ")
                .append(System.getProperty("java.vm.name"))
                .append(' ')
                .append(System.getProperty("java.runtime.version"))
                .append('\n');
        sb.append("- proxy JVM: ")
                .append(o.proxyJava)
                .append(' ')
                .append(o.proxyOpts)
                .append('\n');
        sb.append("- nginx: ")
                .append(Children.run(List.of(o.nginx, "-v")).trim())
                .append('\n');
        sb.append("- replica answers: ").append(FakeReplica.describe()).append('\n');
        sb.append(String.format(
                Locale.ROOT,
                "- open loop: %d req/s for %d s on %d connections; closed loop: %d "
                        + "connections for %d s; warm-up (closed loop, 16 connections) %d s before each target's first "
                        + "measurement, %d s before the others%n",
                o.rate,
                o.openSecs,
                o.openWorkers,
                o.connections,
                o.closedSecs,
                Math.max(o.warmupSecs, o.firstWarmupSecs),
                o.warmupSecs));
        sb.append("- cores: ")
                .append(Runtime.getRuntime().availableProcessors())
                .append(", load at start: ")
                .append(Children.load())
                .append('\n');
        return sb.toString();
    }

    private static String tables(Options o, List<Phase> phases) {
        StringBuilder sb = new StringBuilder();
        sb.append("\n## Open loop at ")
                .append(o.rate)
                .append(" req/s: latency (µs) from when each request was due\n\n");
        sb.append("| body | stream | target | ok | errors | p50 | p90 | p99 | p99.9 | max | first byte p50 | "
                + "added p50 | added p99 | CPU ms/req (proxy) | load | CPU µs/req user/sys | "
                + "loops/jit/gc/other |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Phase p : phases) {
            if (!p.kind().equals("open")) {
                continue;
            }
            Phase d = find(phases, "direct", p.size(), p.stream(), "open");
            sb.append(String.format(
                    Locale.ROOT,
                    "| %d B | %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %.2f | %s |%n",
                    p.size(),
                    p.stream(),
                    p.target(),
                    p.ok(),
                    p.errors(),
                    p.pct(50),
                    p.pct(90),
                    p.pct(99),
                    p.pct(99.9),
                    p.pct(100),
                    p.ttfb(50),
                    d == null || d == p ? "" : String.format(Locale.ROOT, "%.0f", p.pct(50) - d.pct(50)),
                    d == null || d == p ? "" : String.format(Locale.ROOT, "%.0f", p.pct(99) - d.pct(99)),
                    proxyCpu(p),
                    p.load(),
                    splitCells(p)));
        }
        sb.append("\n## Closed loop, ").append(o.connections).append(" connections: throughput\n\n");
        sb.append(
                "| body | stream | target | req/s | errors | p50 µs | p99 µs | vs nginx | CPU ms/req generator | replica | proxy | load "
                        + "| CPU µs/req user/sys | loops/jit/gc/other |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Phase p : phases) {
            if (!p.kind().equals("closed")) {
                continue;
            }
            Phase n = find(phases, "nginx", p.size(), p.stream(), "closed");
            Map<String, Double> c = p.cpuMsPerRequest();
            sb.append(String.format(
                    Locale.ROOT,
                    "| %d B | %s | %s | %.0f | %d | %.0f | %.0f | %s | %.3f | %.3f | %s | %.2f | %s |%n",
                    p.size(),
                    p.stream(),
                    p.target(),
                    p.rate(),
                    p.errors(),
                    p.pct(50),
                    p.pct(99),
                    n == null ? "" : String.format(Locale.ROOT, "%.2f", p.rate() / n.rate()),
                    c.getOrDefault("generator", 0.0),
                    c.getOrDefault("replica", 0.0),
                    proxyCpu(p),
                    p.load(),
                    splitCells(p)));
        }
        sb.append("\n## CPU by thread kind, every watched process (µs per request)\n\n");
        sb.append("Per request of the phase. user + sys is the process's total (its ms/req above); loops + jit + gc + "
                + "other + unseen is the same total by thread (unseen: threads that ended during the phase, and the kernel "
                + "rounding each thread's time down to a tick, up to a tick per thread: the generator's 64 "
                + "connection threads). The split "
                + "columns of the tables above are the target's process's (the replica's for direct).\n\n");
        sb.append("| body | stream | target | phase | process | user | sys | loops | jit | gc | other | unseen |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Phase p : phases) {
            p.cpu()
                    .forEach((process, c) -> sb.append(String.format(
                            Locale.ROOT,
                            "| %d B | %s | %s | %s | %s | %s |%n",
                            p.size(),
                            p.stream(),
                            p.target(),
                            p.kind(),
                            process,
                            String.join(" | ", c.cells(p.ok())))));
        }
        return sb.toString();
    }

    /** The two split columns of a phase's table row: the target's {@code user/sys} and its {@code loops/jit/gc/other}. */
    private static String splitCells(Phase p) {
        ThreadCpu.Split c = p.targetCpu();
        return c == null ? " | " : c.userSys(p.ok()) + " | " + c.kinds(p.ok());
    }

    private static String proxyCpu(Phase p) {
        Double v = p.cpuMsPerRequest().get(p.target());
        return v == null ? "" : String.format(Locale.ROOT, "%.3f", v);
    }

    private static Phase find(List<Phase> phases, String target, int size, boolean stream, String kind) {
        for (Phase p : phases) {
            if (p.target().equals(target)
                    && p.size() == size
                    && p.stream() == stream
                    && p.kind().equals(kind)) {
                return p;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------------------------------------
    // idle streams

    private static void idle(Options o) throws Exception {
        Children.Replica replica = Children.replica(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), 4, o.out);
        int port = Children.freePort();
        Process cart = startCart(o, replica.ports(), port, true);
        String base = "http://127.0.0.1:" + port;
        Children.awaitOk(base + "/health", cart, Duration.ofSeconds(60));
        String jcmd = Path.of(o.proxyJava).getParent().resolve("jcmd").toString();
        long pid = cart.pid();
        Path heapLog = o.out.resolve("heap-info.txt");
        String version = Children.run(List.of(o.proxyJava, "-version"))
                .lines()
                .findFirst()
                .orElse("?");
        StringBuilder sb = new StringBuilder("# Idle streams through the CART proxy\n\n");
        sb.append("- date: ").append(LocalDateTime.now(ZoneOffset.UTC)).append('\n');
        sb.append("- proxy JVM: ")
                .append(version)
                .append(' ')
                .append(o.proxyOpts)
                .append('\n');
        sb.append("- open-file limit of the processes: ")
                .append(Children.run(List.of("sh", "-c", "ulimit -n")).trim())
                .append('\n');
        sb.append("- a stream: a streamed chat request (1 KB body) whose replica sent the head and one event, then "
                        + "nothing; held ")
                .append(o.holdSecs)
                .append(" s before measuring\n\n");
        sb.append(
                "| streams open | in flight (proxy /workers) | heap after GC (MiB) | per stream (KiB) | threads | RSS (MiB) | load |\n");
        sb.append("|---|---|---|---|---|---|---|\n");
        byte[][] reqs = requests(1024, true, "hold");
        // let the proxy settle (JIT, first health probes) with a few ordinary requests
        try (HttpConn c = new HttpConn(new InetSocketAddress("127.0.0.1", port))) {
            byte[][] warm = requests(1024, true, "sse");
            for (int i = 0; i < 2_000; i++) {
                c.exchange(warm[i & 255]);
            }
        }
        long base0 = Children.heapAfterGcKib(jcmd, pid, heapLog);
        row(sb, 0, inFlight(base), base0, base0, pid);
        List<HttpConn> held = new ArrayList<>();
        int[] steps = Arrays.copyOf(o.steps, o.steps.length + 1);
        steps[steps.length - 1] = o.streamsToHold;
        ExecutorService openers = Executors.newFixedThreadPool(16);
        try {
            for (int step : steps) {
                int need = step - held.size();
                if (need <= 0) {
                    continue;
                }
                OUT.printf("opening %d more streams (to %d)%n", need, step);
                List<Future<HttpConn>> fs = new ArrayList<>();
                AtomicInteger k = new AtomicInteger(held.size());
                for (int i = 0; i < need; i++) {
                    fs.add(openers.submit(() -> {
                        HttpConn c = new HttpConn(new InetSocketAddress("127.0.0.1", port));
                        int status = c.startStream(reqs[k.getAndIncrement() & 255]);
                        if (status != 200) {
                            c.close();
                            throw new IOException("stream refused with status " + status);
                        }
                        return c;
                    }));
                }
                int failed = 0;
                for (Future<HttpConn> f : fs) {
                    try {
                        held.add(f.get());
                    } catch (java.util.concurrent.ExecutionException e) {
                        failed++;
                        if (failed <= 3) {
                            OUT.println("  a stream failed: " + e.getCause());
                        }
                    }
                }
                if (failed > 0) {
                    OUT.printf("  %d streams could not be opened%n", failed);
                    sb.append("\n(")
                            .append(failed)
                            .append(" of the streams asked for at this step could not be " + "opened)\n\n");
                }
                Thread.sleep(o.holdSecs * 1000L);
                long heap = Children.heapAfterGcKib(jcmd, pid, heapLog);
                row(sb, held.size(), inFlight(base), heap, base0, pid);
                Files.writeString(
                        o.out.resolve("class-histogram-" + held.size() + ".txt"),
                        Children.run(List.of(jcmd, Long.toString(pid), "GC.class_histogram")));
                OUT.print(sb);
            }
        } finally {
            openers.shutdownNow();
            for (HttpConn c : held) {
                c.close();
            }
        }
        Files.writeString(o.out.resolve("idle.md"), sb.toString());
        OUT.println();
        OUT.println(sb);
    }

    private static void row(StringBuilder sb, int streams, long inFlight, long heapKib, long baseKib, long pid) {
        sb.append(String.format(
                Locale.ROOT,
                "| %d | %d | %.1f | %s | %d | %.0f | %.2f |%n",
                streams,
                inFlight,
                heapKib / 1024.0,
                streams == 0 ? "" : String.format(Locale.ROOT, "%.1f", (heapKib - baseKib) / (double) streams),
                Children.status(pid, "Threads"),
                Children.status(pid, "VmRSS") / 1024.0,
                Children.load()));
    }

    private static long inFlight(String base) throws IOException, InterruptedException {
        String workers = Children.get(base + "/workers");
        Matcher m = Pattern.compile("\"in_flight\"\\s*:\\s*(\\d+)").matcher(workers);
        long sum = 0;
        while (m.find()) {
            sum += Long.parseLong(m.group(1));
        }
        return sum;
    }
}
