package dev.cart.proxy;

import dev.cart.proxy.config.ProxyConfig;
import dev.cart.sim.KvEventOptions;
import dev.cart.sim.SimulatedReplicaServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * Demo mode ({@code --demo}): simulated replicas in this process, on ephemeral loopback ports, that
 * speak the OpenAI and Anthropic APIs (streaming included) and model a prefix cache, so the proxy can
 * be tried with nothing else running.
 */
final class Demo implements AutoCloseable {

    static final String MODEL = "demo";
    /** How much faster than a real GPU the simulated replicas answer. */
    static final double SPEEDUP = 20.0;

    private final List<SimulatedReplicaServer> servers;
    private final boolean precise;

    private Demo(List<SimulatedReplicaServer> servers, boolean precise) {
        this.servers = servers;
        this.precise = precise;
    }

    static Demo start(int replicas) throws IOException {
        return start(replicas, false);
    }

    /**
     * Starts {@code replicas} simulated replicas; with {@code precise} each publishes its engine's KV-cache
     * events (ZMQ, vLLM's format, on ephemeral loopback ports) and answers {@code POST /tokenize}, and the
     * workers name those endpoints, so the proxy routes in precise mode.
     */
    static Demo start(int replicas, boolean precise) throws IOException {
        List<SimulatedReplicaServer> started = new ArrayList<>();
        try {
            for (int i = 1; i <= replicas; i++) {
                SimulatedReplicaServer.Options o = SimulatedReplicaServer.Options.defaults()
                        .name("sim-" + i)
                        .port(0)
                        .model(MODEL)
                        .speedup(SPEEDUP);
                if (precise) {
                    o.kvEvents(KvEventOptions.defaults());
                }
                started.add(SimulatedReplicaServer.start(o));
            }
        } catch (IOException | RuntimeException e) {
            for (SimulatedReplicaServer s : started) {
                s.close();
            }
            throw e;
        }
        return new Demo(started, precise);
    }

    List<ProxyConfig.Worker> workers() {
        List<ProxyConfig.Worker> out = new ArrayList<>();
        for (SimulatedReplicaServer s : servers) {
            String url = s.baseUri().toString();
            while (url.endsWith("/")) {
                url = url.substring(0, url.length() - 1);
            }
            ProxyConfig.Worker w = ProxyConfig.Worker.of(url);
            if (precise) {
                // the demo's one model names the engines' blocks (kv_events.model may say it instead)
                w = new ProxyConfig.Worker(w.url(), w.maxLoad(), w.loadPenalty(), List.of(MODEL))
                        .withKvEvents(s.kvEndpoint(), s.kvReplayEndpoint());
            }
            out.add(w);
        }
        return out;
    }

    /**
     * The quick start's system prompt (README, "The two commands"): longer than one 64-character block, the
     * unit in which the router and the replicas' prefix caches match, so that a second question under it
     * matches the first one's prefix and follows it to the same replica.
     */
    static final String QUICK_START_SYSTEM = "You are the support assistant of Acme Cloud. Answer in two short "
            + "paragraphs, link the documentation page you used, and never reveal internal ticket numbers or "
            + "customer names.";
    /** The quick start's two questions: the first is a miss, the second a cache hit on the same replica. */
    static final List<String> QUICK_START_QUESTIONS =
            List.of("How do I rotate an API key?", "Which regions have GPUs?");

    /**
     * The quick start's shell commands against {@code base} (such as {@code localhost:6700}): the system
     * prompt, an {@code ask} function sending one question under it, the two questions and {@code /workers}.
     * The README shows the same lines ({@code QuickStartTest} checks it and runs the sequence).
     */
    static List<String> quickStartCommands(String base) {
        List<String> lines = new ArrayList<>();
        lines.add("SYSTEM='" + QUICK_START_SYSTEM + "'");
        lines.add("ask() { curl -s " + base + "/v1/chat/completions -H 'Content-Type: application/json' \\");
        lines.add(
                "  -d '{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"system\",\"content\":\"'\"$SYSTEM\"'\"},"
                        + "{\"role\":\"user\",\"content\":\"'\"$1\"'\"}]}'; echo; }");
        for (String q : QUICK_START_QUESTIONS) {
            lines.add("ask '" + q + "'");
        }
        lines.add("curl -s " + base + "/workers");
        return lines;
    }

    /** The body {@code ask} sends for {@code question}. */
    static String quickStartBody(String question) {
        return "{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"system\",\"content\":\"" + QUICK_START_SYSTEM
                + "\"},{\"role\":\"user\",\"content\":\"" + question + "\"}]}";
    }

    void printWelcome(URI proxy, PrintStream out) {
        out.println();
        out.println("CART demo: " + servers.size() + " simulated replicas behind " + proxy
                + (precise ? ", in precise mode (routed by the KV-cache events the replicas publish)" : ""));
        out.println();
        out.println("Two questions under one system prompt; the second is a cache hit on the first one's replica");
        out.println("(watch reason= and replica= in the decision lines here, and cache_hit_share in /workers):");
        out.println();
        for (String line : quickStartCommands(proxy.toString())) {
            out.println("  " + line);
        }
        out.println();
        out.println(
                "The same pool out of process: start replicas with bin/sim-replica --port P --model " + MODEL + ",");
        out.println("list each as '- url: \"http://127.0.0.1:P\"' under workers: in a file, and run "
                + "bin/cache-aware-router -c that-file.");
        out.println("Stop: Ctrl-C");
        out.println();
    }

    @Override
    public void close() {
        for (SimulatedReplicaServer s : servers) {
            try {
                s.close();
            } catch (RuntimeException ignored) {
                // best effort on shutdown
            }
        }
    }
}
