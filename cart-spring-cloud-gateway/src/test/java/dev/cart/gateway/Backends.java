package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * What the gateway tests of this module run against, all on loopback: LLM replicas as small JDK HTTP servers
 * (an OpenAI- or Anthropic-style JSON answer with usage, {@code GET /health} 200, the replica's name in
 * {@code x-replica}), dead ports, and the gateway itself (Spring Boot with this module's auto-configuration).
 */
final class Backends {

    private Backends() {}

    /** How a replica answers. */
    enum Mode {
        /** 200 with a short JSON completion. */
        OK,
        /** 500 with an OpenAI-style error body: the replica had the request. */
        ERROR_500,
        /** closes the connection after reading the request, without an answer. */
        CLOSE
    }

    /** A replica: answers every POST as its {@link Mode} says and counts the requests it got. */
    static final class Replica implements AutoCloseable {
        final String name;
        final AtomicInteger requests = new AtomicInteger();
        volatile Mode mode = Mode.OK;
        private final HttpServer server;

        Replica(String name) throws IOException {
            this.name = name;
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
            server.setExecutor(Executors.newFixedThreadPool(4));
            server.createContext("/health", ex -> answer(ex, 200, ""));
            server.createContext("/v1/", this::complete);
            server.start();
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        }

        private void complete(HttpExchange ex) throws IOException {
            ex.getRequestBody().readAllBytes();
            requests.incrementAndGet();
            if (mode == Mode.CLOSE) {
                ex.close(); // no status line: the server drops the connection
                return;
            }
            if (mode == Mode.ERROR_500) {
                ex.getResponseHeaders().set("Content-Type", "application/json");
                answer(ex, 500, "{\"error\":{\"message\":\"engine failed\",\"type\":\"server_error\"}}");
                return;
            }
            String body = ex.getRequestURI().getPath().endsWith("/messages")
                    ? "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":"
                            + "[{\"type\":\"text\",\"text\":\"ok\"}],\"stop_reason\":\"end_turn\",\"usage\":"
                            + "{\"input_tokens\":10,\"output_tokens\":1}}"
                    : "{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
                            + "\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}],"
                            + "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1,\"total_tokens\":11}}";
            ex.getResponseHeaders().set("x-replica", name);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            answer(ex, 200, body);
        }

        private static void answer(HttpExchange ex, int status, String body) throws IOException {
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(bytes);
            }
        }

        @Override
        public void close() {
            server.stop(0);
            ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
        }
    }

    /** A loopback port nothing listens on (bound, then closed): a connection to it is refused. */
    static URI deadPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return URI.create("http://127.0.0.1:" + s.getLocalPort());
        }
    }

    /** The test's gateway application: Spring Boot with the auto-configurations on the class path. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Gateway {}

    /** Starts the gateway on a free port with {@code properties} ({@code key=value}) as command-line arguments. */
    static ConfigurableApplicationContext gateway(List<String> properties) {
        List<String> args = new ArrayList<>(List.of("--server.port=0", "--spring.main.banner-mode=off"));
        properties.forEach(p -> args.add("--" + p));
        SpringApplication app = new SpringApplication(Gateway.class);
        app.setWebApplicationType(org.springframework.boot.WebApplicationType.REACTIVE);
        return app.run(args.toArray(String[]::new));
    }

    static int port(ConfigurableApplicationContext gateway) {
        return Integer.parseInt(gateway.getEnvironment().getProperty("local.server.port"));
    }

    /** POSTs {@code body} as JSON to the gateway's {@code path}. */
    static HttpResponse<String> post(int port, String path, String body) throws Exception {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                                .header("content-type", "application/json")
                                .timeout(Duration.ofSeconds(60))
                                .POST(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
    }

    /** A chat request whose system prompt is {@code system}, long enough to be routed by its key. */
    static String chat(String system) {
        return "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":\"" + system.repeat(20)
                + "\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
    }

    /** Polls {@code condition} until it holds, for at most 30 seconds. */
    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for: " + what);
            }
            LockSupport.parkNanos(5_000_000); // poll interval of a bounded wait on a condition
        }
    }
}
