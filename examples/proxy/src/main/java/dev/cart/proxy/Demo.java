package dev.cart.proxy;

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

    private Demo(List<SimulatedReplicaServer> servers) {
        this.servers = servers;
    }

    static Demo start(int replicas) throws IOException {
        List<SimulatedReplicaServer> started = new ArrayList<>();
        try {
            for (int i = 1; i <= replicas; i++) {
                started.add(SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("sim-" + i)
                        .port(0)
                        .model(MODEL)
                        .speedup(SPEEDUP)));
            }
        } catch (IOException | RuntimeException e) {
            for (SimulatedReplicaServer s : started) {
                s.close();
            }
            throw e;
        }
        return new Demo(started);
    }

    List<ProxyConfig.Worker> workers() {
        List<ProxyConfig.Worker> out = new ArrayList<>();
        for (SimulatedReplicaServer s : servers) {
            String url = s.baseUri().toString();
            while (url.endsWith("/")) {
                url = url.substring(0, url.length() - 1);
            }
            out.add(ProxyConfig.Worker.of(url));
        }
        return out;
    }

    void printWelcome(URI proxy, PrintStream out) {
        out.println();
        out.println("CART demo: " + servers.size() + " simulated replicas behind " + proxy);
        out.println("  try:  curl -N " + proxy + "/v1/chat/completions -d '{\"model\":\"" + MODEL
                + "\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'");
        out.println("        curl " + proxy + "/workers");
        out.println("  stop: Ctrl-C");
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
