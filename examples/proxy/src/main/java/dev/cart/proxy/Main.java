package dev.cart.proxy;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * The {@code cache-aware-router} command line.
 *
 * <pre>
 * cache-aware-router -c config.yaml [-c overlay.yaml ...]    run the proxy
 * cache-aware-router -c config.yaml --config-check           validate and exit
 * cache-aware-router --demo                                  run against simulated replicas
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
                  --demo          start 4 simulated replicas in this process and route to them
                                  (no configuration needed; -c files still apply except workers)
                  --version       print the version and exit
              -h, --help          print this help and exit

            Signals: SIGHUP re-reads the configuration files; only 'workers' may change.
            Reference: docs/configuration.md and config.example.yaml.
            """;

    private Main() {
    }

    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        if (code != OK) {
            System.exit(code);
        }
    }

    /** Parsed command line. */
    record Args(List<Path> configs, boolean check, boolean demo, boolean version, boolean help) {
    }

    static Args parse(String[] args) throws IllegalArgumentException {
        List<Path> configs = new ArrayList<>();
        boolean check = false;
        boolean demo = false;
        boolean version = false;
        boolean help = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-c", "--config" -> {
                    if (i + 1 >= args.length || args[i + 1].isEmpty()) {
                        throw new IllegalArgumentException(a + " needs a file name");
                    }
                    configs.add(Path.of(args[++i]));
                }
                case "--config-check" -> check = true;
                case "--demo" -> demo = true;
                case "--version", "-V" -> version = true;
                case "-h", "--help" -> help = true;
                default -> {
                    if (a.startsWith("--config=")) {
                        configs.add(Path.of(a.substring("--config=".length())));
                    } else {
                        throw new IllegalArgumentException("unknown option '" + a + "'");
                    }
                }
            }
        }
        return new Args(configs, check, demo, version, help);
    }

    /** Runs the command; returns the exit status. Blocks while the proxy runs. */
    static int run(String[] argv, PrintStream out, PrintStream err) {
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
            config = ConfigLoader.load(args.configs(), !args.demo());
        } catch (ConfigException e) {
            err.println("cache-aware-router: invalid configuration (" + e.problems().size() + " problem"
                    + (e.problems().size() == 1 ? "" : "s") + "):");
            for (String p : e.problems()) {
                err.println("  - " + p);
            }
            return INVALID;
        }
        if (args.check()) {
            out.println("configuration OK: " + (args.demo() ? "demo workers" : config.workers().size()
                    + " worker(s)") + ", policy " + config.cache().policy() + ", listening on "
                    + config.server().host() + ":" + config.server().port());
            return OK;
        }
        return serve(args, config, err);
    }

    private static int serve(Args args, ProxyConfig config, PrintStream err) {
        ProxyServer.warnAboutOpenFileLimit();
        ServerLimits.apply(config); // before any HttpServer of this process exists (demo replicas too)
        Demo demo = null;
        ProxyServer server;
        try {
            ProxyServer.Options options = new ProxyServer.Options();
            if (args.demo()) {
                demo = Demo.start(4);
                config = config.withWorkers(demo.workers());
                List<ProxyConfig.Worker> demoWorkers = demo.workers();
                options.configSource(() -> ConfigLoader.load(args.configs(), false).withWorkers(demoWorkers));
            } else {
                options.configSource(() -> ConfigLoader.load(args.configs()));
            }
            server = ProxyServer.start(config, options);
        } catch (IOException | RuntimeException e) {
            err.println("cache-aware-router: cannot start: " + e.getMessage());
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
        SignalReload.install(running::reload);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running.close();
            if (runningDemo != null) {
                runningDemo.close();
            }
            stopped.countDown();
        }, "cart-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return OK;
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
