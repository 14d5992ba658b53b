package dev.cart.proxy;

import dev.cart.proxy.config.ConfigException;
import dev.cart.proxy.config.ConfigLoader;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.observe.BatchedConsoleAppender;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

/**
 * The {@code cache-aware-router} command line.
 *
 * <pre>
 * cache-aware-router -c config.yaml [-c overlay.yaml ...]    run the proxy
 * cache-aware-router -c config.yaml --config-check           validate and exit
 * cache-aware-router --demo                                  run against simulated replicas
 * cache-aware-router --demo --precise                        ... that publish KV-cache events (precise mode)
 * cache-aware-router ... --port 8080 --host 127.0.0.1        override server.port / server.host
 * cache-aware-router --version | --help
 * </pre>
 *
 * Exit status: 0 success, 1 the proxy could not start (for example the port is taken), 2 bad usage or
 * an invalid configuration (every problem is printed, each naming its key).
 */
public final class Main {

    static final int OK = 0;
    static final int FAILED = 1;
    static final int INVALID = 2;

    static final String USAGE = """
            Usage: cache-aware-router [options]

            A cache-aware reverse proxy for LLM inference replicas (vLLM, SGLang, OpenAI-compatible).

            Options:
              -c, --config FILE   configuration file; repeatable, layered in order (last wins:
                                  mappings merge key by key, lists and scalars are replaced whole,
                                  an empty file changes nothing)
                  --config-check  validate the configuration, print every problem, and exit
                                  (0 valid, 2 invalid)
                  --port N        listen on port N (0-65535; overrides server.port, default 6700)
                  --host ADDR     listen on ADDR (overrides server.host, default 0.0.0.0)
                  --demo          start 4 simulated replicas in this process and route to them
                                  (no configuration needed; -c files may tune the other sections
                                  but must not list workers)
                  --precise       with --demo: the simulated replicas publish their KV-cache
                                  events and the proxy routes on them (precise mode)
                  --version       print the version and exit
              -h, --help          print this help and exit

            Signals: SIGHUP re-reads the configuration files; only 'workers' may change.
                     SIGTERM drains: new connections are refused and /health answers 503, requests
                     in flight finish (up to server.drain_timeout_ms), then the proxy exits.
            Reference: docs/configuration.md and config.example.yaml.
            """;

    private Main() {}

    public static void main(String[] args) {
        var unused = dev.cart.proxy.upstream.UpstreamHttpClient.avoidThreadPerTask(); // before anything else
        int code = run(args, System.out, System.err);
        if (code != OK) {
            System.exit(code);
        }
    }

    /** Parsed command line; {@code port} and {@code host} are null when not given. */
    record Args(
            List<Path> configs,
            boolean check,
            boolean demo,
            boolean precise,
            boolean version,
            boolean help,
            Integer port,
            String host) {

        /** {@code config} with the command line's {@code --port} and {@code --host} applied. */
        ProxyConfig overriding(ProxyConfig config) {
            if (port == null && host == null) {
                return config;
            }
            ProxyConfig.Server s = config.server();
            if (port != null) {
                s = s.withPort(port);
            }
            if (host != null) {
                s = s.withHost(host);
            }
            return config.withServer(s);
        }
    }

    static Args parse(String[] args) throws IllegalArgumentException {
        List<Path> configs = new ArrayList<>();
        boolean check = false;
        boolean demo = false;
        boolean precise = false;
        boolean version = false;
        boolean help = false;
        Integer port = null;
        String host = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-c", "--config" -> {
                    if (i + 1 >= args.length || args[i + 1].isEmpty()) {
                        throw new IllegalArgumentException(a + " needs a file name");
                    }
                    configs.add(Path.of(args[++i]));
                }
                case "--port" -> port = port(value(args, i++));
                case "--host" -> host = host(value(args, i++));
                case "--config-check" -> check = true;
                case "--demo" -> demo = true;
                case "--precise" -> precise = true;
                case "--version", "-V" -> version = true;
                case "-h", "--help" -> help = true;
                default -> {
                    if (a.startsWith("--config=")) {
                        configs.add(Path.of(a.substring("--config=".length())));
                    } else if (a.startsWith("--port=")) {
                        port = port(a.substring("--port=".length()));
                    } else if (a.startsWith("--host=")) {
                        host = host(a.substring("--host=".length()));
                    } else {
                        throw new IllegalArgumentException("unknown option '" + a + "'");
                    }
                }
            }
        }
        if (precise && !demo) {
            throw new IllegalArgumentException(
                    "--precise goes with --demo; to route a pool of your own in precise mode, give its workers"
                            + " kv_events endpoints (docs/precise-mode.md)");
        }
        return new Args(configs, check, demo, precise, version, help, port, host);
    }

    private static String value(String[] args, int i) {
        if (i + 1 >= args.length || args[i + 1].isEmpty()) {
            throw new IllegalArgumentException(args[i] + " needs a value");
        }
        return args[i + 1];
    }

    private static int port(String s) {
        try {
            int p = Integer.parseInt(s.trim());
            if (ProxyConfig.Server.PORT.contains(p)) {
                return p;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(
                "--port must be a port number " + ProxyConfig.Server.PORT + ", was '" + s + "'");
    }

    private static String host(String s) {
        if (s.isBlank()) {
            throw new IllegalArgumentException("--host must not be empty");
        }
        return s.trim();
    }

    /** Runs the command; returns the exit status. Blocks while the proxy runs. */
    public static int run(String[] argv, PrintStream out, PrintStream err) {
        Args args;
        try {
            args = parse(argv);
        } catch (IllegalArgumentException e) {
            err.println("cache-aware-router: " + e.getMessage());
            err.print(USAGE);
            return INVALID;
        }
        if (args.help()) {
            out.print(USAGE);
            return OK;
        }
        if (args.version()) {
            out.println("cache-aware-router " + version());
            return OK;
        }
        if (args.configs().isEmpty() && !args.demo()) {
            err.println("cache-aware-router: no configuration: give -c FILE (see config.example.yaml), "
                    + "or --demo to try it against simulated replicas");
            err.print(USAGE);
            return INVALID;
        }
        ProxyConfig config;
        try {
            config = args.overriding(ConfigLoader.load(args.configs(), !args.demo()));
        } catch (ConfigException e) {
            err.println("cache-aware-router: invalid configuration ("
                    + e.problems().size() + " problem" + (e.problems().size() == 1 ? "" : "s") + "):");
            for (String p : e.problems()) {
                err.println("  - " + p);
            }
            return INVALID;
        }
        if (args.demo() && !config.workers().isEmpty()) {
            err.println("cache-aware-router: --demo starts its own simulated replicas, but the configuration lists "
                    + config.workers().size() + " worker(s) ("
                    + config.workers().get(0).url() + (config.workers().size() > 1 ? ", ..." : "")
                    + "); drop --demo to use them, or the workers section to run the demo");
            return INVALID;
        }
        if (args.check()) {
            out.println("configuration OK: "
                    + (args.demo()
                            ? (args.precise() ? "demo workers (precise)" : "demo workers")
                            : config.workers().size() + " worker(s)")
                    + ", policy "
                    + config.cache().policy() + ", listening on "
                    + config.server().host() + ":" + config.server().port()
                    + (config.cluster().on() ? ", cluster " + config.cluster().describe() : ""));
            return OK;
        }
        return serve(args, config, err);
    }

    private static int serve(Args args, ProxyConfig config, PrintStream err) {
        ProxyServer.warnAboutOpenFileLimit(config.server());
        Demo demo = null;
        ProxyServer server;
        // SIGHUP is handled from before the server listens: the JVM's default action would end the process,
        // and an operator (or a test) may signal as soon as the listening line appears. A signal that comes
        // before the server exists is kept and acted on once it does (acting twice is harmless).
        AtomicReference<ProxyServer> reloadTarget = new AtomicReference<>();
        AtomicBoolean reloadPending = new AtomicBoolean();
        SignalReload.install(() -> {
            reloadPending.set(true);
            ProxyServer target = reloadTarget.get();
            if (target != null && reloadPending.getAndSet(false)) {
                target.reload();
            }
        });
        try {
            ProxyServer.Options options = new ProxyServer.Options()
                    .configNames(args.configs().stream().map(Path::toString).collect(Collectors.joining(", ")));
            if (args.demo()) {
                demo = Demo.start(4, args.precise());
                config = config.withWorkers(demo.workers());
                List<ProxyConfig.Worker> demoWorkers = demo.workers();
                options.configSource(() -> args.overriding(ConfigLoader.load(args.configs(), false))
                        .withWorkers(demoWorkers));
            } else {
                options.configSource(() -> args.overriding(ConfigLoader.load(args.configs())));
            }
            server = ProxyServer.start(config, options);
        } catch (IOException | RuntimeException e) {
            err.println("cache-aware-router: " + startFailure(e, config.server()));
            if (demo != null) {
                demo.close();
            }
            return FAILED;
        }
        if (demo != null) {
            demo.printWelcome(server.baseUri(), err);
        }
        ProxyServer running = server;
        Demo runningDemo = demo;
        reloadTarget.set(running);
        if (reloadPending.getAndSet(false)) {
            running.reload();
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            running.drain(); // SIGTERM: in-flight requests finish, up to server.drain_timeout_ms
                            running.close();
                            if (runningDemo != null) {
                                runningDemo.close();
                            }
                            stopLogging(); // writes the decision lines still buffered
                            stopped.countDown();
                        },
                        "cart-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return OK;
    }

    /** Stops logback, whose appenders write what they buffer ({@link BatchedConsoleAppender}); no-op otherwise. */
    static void stopLogging() {
        if (org.slf4j.LoggerFactory.getILoggerFactory() instanceof ch.qos.logback.classic.LoggerContext context) {
            context.stop();
        }
    }

    /** One line saying why the proxy could not start; for a taken port, which flag changes it. */
    static String startFailure(Exception e, ProxyConfig.Server server) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.net.BindException) {
                return "cannot listen on " + server.host() + ":" + server.port() + ": " + t.getMessage()
                        + "; choose another port with --port N (or server.port in the configuration)";
            }
        }
        return "cannot start: " + e.getMessage();
    }

    static String version() {
        Properties p = new Properties();
        try (InputStream in = Main.class.getResourceAsStream("/cart-proxy-version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            // fall through to "unknown"
        }
        String v = p.getProperty("version");
        return v == null || v.startsWith("${") ? "unknown" : v;
    }
}
