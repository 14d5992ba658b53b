package dev.cart.examples.gateway;

import dev.cart.sim.SimulatedReplicaServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.Profiles;

/**
 * The {@code demo} profile: simulated vLLM replicas (cart-sim's {@link SimulatedReplicaServer}: OpenAI and
 * Anthropic APIs, streaming, a prefix cache that reports {@code cached_tokens}) started in this process on
 * ephemeral loopback ports, and listed as the instances of the services {@code llm} (balanced by CART) and
 * {@code llm-rr} (the same replicas under the gateway's default round robin, for comparison) through Spring Cloud's
 * simple discovery client — the gateway finds them as it would find any discovered instance.
 *
 * <p>Registered as an {@link ApplicationContextInitializer} (META-INF/spring.factories), so it runs before the
 * context is refreshed, both from {@code main} and in tests; the replicas close with the context. The count is
 * {@code demo.replicas} (default 4).
 */
public final class DemoReplicas implements AutoCloseable {

    static final String PROFILE = "demo";
    static final String MODEL = "demo";

    private final List<SimulatedReplicaServer> servers;

    private DemoReplicas(List<SimulatedReplicaServer> servers) {
        this.servers = List.copyOf(servers);
    }

    /** The running replicas, in the order they are listed as instances. */
    public List<SimulatedReplicaServer> servers() {
        return servers;
    }

    static DemoReplicas start(int count) {
        List<SimulatedReplicaServer> started = new ArrayList<>();
        try {
            for (int i = 1; i <= count; i++) {
                started.add(SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults()
                        .name("sim-" + i)
                        .port(0)
                        .model(MODEL)
                        .speedup(20)));
            }
        } catch (IOException | RuntimeException e) {
            started.forEach(SimulatedReplicaServer::close);
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
        return new DemoReplicas(started);
    }

    /** The discovery properties listing the replicas as instances of {@code llm} and {@code llm-rr}. */
    Map<String, Object> discoveryProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        for (String service : List.of("llm", "llm-rr")) {
            for (int i = 0; i < servers.size(); i++) {
                String prefix = "spring.cloud.discovery.client.simple.instances." + service + "[" + i + "].";
                p.put(prefix + "uri", servers.get(i).baseUri().toString());
                p.put(prefix + "instance-id", service + "-" + servers.get(i).name());
            }
        }
        return p;
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

    /** Starts the replicas when the {@code demo} profile is active. */
    public static final class Initializer implements ApplicationContextInitializer<ConfigurableApplicationContext> {
        @Override
        public void initialize(ConfigurableApplicationContext context) {
            ConfigurableEnvironment env = context.getEnvironment();
            if (!env.acceptsProfiles(Profiles.of(PROFILE))) {
                return;
            }
            DemoReplicas demo = start(env.getProperty("demo.replicas", Integer.class, 4));
            env.getPropertySources().addFirst(new MapPropertySource("cart-demo-replicas", demo.discoveryProperties()));
            context.getBeanFactory().registerSingleton("demoReplicas", demo);
            context.addApplicationListener(event -> {
                if (event instanceof ContextClosedEvent closed && closed.getApplicationContext() == context) {
                    demo.close();
                }
            });
        }
    }
}
