package dev.cart.sim;

import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

/**
 * Runs one simulated vLLM replica ({@link SimulatedReplicaServer}) over HTTP from the command line, for
 * trying CART against a pool of replicas out of process ({@code bin/sim-replica}):
 *
 * <pre>
 * bin/sim-replica --port 8001 [--host 127.0.0.1] [--model sim-llama-3.1-8b] [--blocks 9375] [--name r1]
 *                 [--speedup 20] [--output-tokens 64] [--max-num-seqs 256] [--max-batched-tokens 2048]
 * </pre>
 *
 * It prints one line when it listens and runs until interrupted (Ctrl-C or SIGTERM closes the server).
 * Bad flags exit with status 2 and a message; a port already taken exits with status 1 and says to pick
 * another {@code --port}.
 */
public final class ReplicaMain {

    static final String USAGE = """
            Usage: sim-replica --port PORT [options]

            Runs one simulated vLLM replica (Llama-3.1-8B on an A100 as modelled in examples/sim/README.md)
            speaking the OpenAI API (/v1/chat/completions, /v1/completions, /v1/models), the Anthropic
            Messages API (/v1/messages) and /health, with a prefix cache of 16-token KV blocks that reports
            usage.prompt_tokens_details.cached_tokens as vLLM does.

            Options:
              --port PORT                port to listen on, 0 for any free port (required)
              --host HOST                address to bind (default 127.0.0.1; 0.0.0.0 for every interface)
              --model NAME               model name served and listed by /v1/models (default sim-llama-3.1-8b)
              --name NAME                replica name, in the x-sim-replica response header (default r-PORT,
                                         sim-replica with --port 0)
              --blocks N                 KV-cache size in 16-token blocks (default 9375, i.e. 150,000 tokens)
              --speedup X                engine time runs X times faster than the modelled GPU (default 20;
                                         1 is realistic)
              --output-tokens N          tokens generated when a request sets no max_tokens (default 64)
              --max-num-seqs N           running requests at most (default 256)
              --max-batched-tokens N     tokens per engine step (default 2048)
              --adapters A,B             LoRA adapters loaded at start, listed by /v1/models with their parent
                                         (more with POST /v1/load_lora_adapter, fewer with /v1/unload_lora_adapter)
              --strict-models true       serve only --model and the loaded adapters; others get a 404
                                         (default false: any model name is served)
              --base-paths N             also answer under the base URLs /b/0 ... /b/N-1 (a request to
                                         /b/K/health is answered as /health): one process stands for N
                                         workers of a pool (default 0); GET /sim/counts says how many
                                         /health and /v1/models requests it has had
              -h, --help                 print this help

            Example, a pool of three for the proxy:
              bin/sim-replica --port 8001 & bin/sim-replica --port 8002 & bin/sim-replica --port 8003 &
            """;

    /** A problem starting the replica: its message for the user and the exit status. */
    static final class LaunchException extends Exception {
        final int status;

        LaunchException(String message, int status) {
            super(message);
            this.status = status;
        }
    }

    private ReplicaMain() {}

    public static void main(String[] args) {
        SimulatedReplicaServer server;
        try {
            server = launch(args, System.out);
        } catch (LaunchException e) {
            System.err.println("sim-replica: " + e.getMessage());
            System.exit(e.status);
            return;
        }
        if (server == null) {
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            server.close();
                            stopped.countDown();
                        },
                        "sim-replica-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.close();
        }
    }

    /**
     * Parses {@code args} and starts the replica, printing where it listens to {@code out}; prints the help
     * and returns null for {@code --help}.
     */
    static SimulatedReplicaServer launch(String[] args, PrintStream out) throws LaunchException {
        SimulatedReplicaServer.Options o = parse(args);
        if (o == null) {
            out.print(USAGE);
            return null;
        }
        SimulatedReplicaServer server;
        try {
            server = SimulatedReplicaServer.start(o);
        } catch (BindException e) {
            throw new LaunchException(
                    String.format(
                            Locale.ROOT,
                            "cannot listen on %s:%d: Address already in use: " + "pick another --port",
                            o.host(),
                            o.port()),
                    1);
        } catch (IOException e) {
            throw new LaunchException(
                    String.format(Locale.ROOT, "cannot listen on %s:%d: %s", o.host(), o.port(), e.getMessage()), 1);
        }
        out.printf(
                Locale.ROOT,
                "sim-replica %s listening on %s (model %s, %,d-token cache, speedup %s)%n",
                server.name(),
                server.baseUri(),
                o.model(),
                o.cacheTokens(),
                trim(o.speedup()));
        out.flush();
        return server;
    }

    /** The options {@code args} ask for; null for {@code --help}. */
    static SimulatedReplicaServer.Options parse(String[] args) throws LaunchException {
        SimulatedReplicaServer.Options o = SimulatedReplicaServer.Options.defaults();
        Integer port = null;
        String name = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                return null;
            }
            String flag = a;
            String v;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                flag = a.substring(0, eq);
                v = a.substring(eq + 1);
            } else if (!KNOWN.contains(a)) {
                throw usage("unknown option " + a);
            } else if (i + 1 >= args.length) {
                throw usage(a + " needs a value");
            } else {
                v = args[++i];
            }
            try {
                switch (flag) {
                    case "--port" -> {
                        port = integer(v, 0, 65_535);
                        o.port(port);
                    }
                    case "--host" -> o.host(nonBlank(v));
                    case "--model" -> o.model(nonBlank(v));
                    case "--name" -> name = nonBlank(v);
                    case "--blocks" ->
                        o.cacheTokens((long) integer(v, 1, Integer.MAX_VALUE / 16) * EngineConfig.BLOCK_TOKENS);
                    case "--speedup" -> o.speedup(number(v));
                    case "--output-tokens" -> o.outputTokens(integer(v, 1, 1_000_000));
                    case "--max-num-seqs" -> o.maxNumSeqs(integer(v, 1, 1_000_000));
                    case "--max-batched-tokens" -> o.maxBatchedTokens(integer(v, 1, 10_000_000));
                    case "--adapters" ->
                        o.adapters(java.util.Arrays.stream(v.split(","))
                                .map(String::trim)
                                .filter(x -> !x.isEmpty())
                                .toList());
                    case "--strict-models" -> o.strictModels(bool(v));
                    case "--base-paths" -> o.basePaths(integer(v, 0, 100_000));
                    default -> throw usage("unknown option " + flag);
                }
            } catch (IllegalArgumentException e) {
                throw usage(flag + ": " + e.getMessage());
            }
        }
        if (port == null) {
            throw usage("--port is required (0 picks any free port)");
        }
        o.name(name != null ? name : port == 0 ? "sim-replica" : "r-" + port);
        return o;
    }

    private static final java.util.Set<String> KNOWN = java.util.Set.of(
            "--port",
            "--host",
            "--model",
            "--name",
            "--blocks",
            "--speedup",
            "--output-tokens",
            "--max-num-seqs",
            "--max-batched-tokens",
            "--adapters",
            "--strict-models",
            "--base-paths");

    private static boolean bool(String v) {
        return switch (v.trim()) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("must be true or false, was " + v);
        };
    }

    private static LaunchException usage(String message) {
        return new LaunchException(message + " (see --help)", 2);
    }

    private static int integer(String v, int min, int max) {
        int n;
        try {
            n = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a whole number: " + v);
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "must be in [%d, %d], was %d", min, max, n));
        }
        return n;
    }

    private static double number(String v) {
        try {
            return Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a number: " + v);
        }
    }

    private static String nonBlank(String v) {
        if (v.isBlank()) {
            throw new IllegalArgumentException("must not be empty");
        }
        return v;
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
