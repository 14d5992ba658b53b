package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A gateway stopped while a stream is in flight, with Spring Boot's graceful shutdown: the web server stops
 * taking connections at once, the stream goes on to its last byte, and CART leaves nothing behind (the
 * lease closed as a success, nothing in flight, the routers closed after the web server stopped). And when the
 * grace period ends first, the stream is cut and its lease still closes.
 */
class GracefulShutdownTest {

    private static final int CHUNKS = 20;

    private SlowStream replica;
    private ConfigurableApplicationContext gateway;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    /** The registry the gateway's CART metrics go to. */
    @Configuration(proxyBeanMethods = false)
    static class Metrics {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @AfterEach
    void stop() {
        if (replica != null) {
            replica.release();
            replica.close();
        }
        if (gateway != null) {
            gateway.close();
        }
        threads.shutdownNow();
    }

    private void start(String graceTimeout) throws IOException {
        replica = new SlowStream();
        gateway = Backends.gateway(List.of(
                "spring.main.sources=" + Metrics.class.getName(),
                "server.shutdown=graceful",
                "spring.lifecycle.timeout-per-shutdown-phase=" + graceTimeout,
                "cart.services=llm",
                "spring.cloud.discovery.client.simple.instances.llm[0].uri=" + replica.uri(),
                "spring.cloud.gateway.server.webflux.routes[0].id=llm",
                "spring.cloud.gateway.server.webflux.routes[0].uri=lb://llm",
                "spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/v1/**"));
    }

    @Test
    void aStreamInFlightFinishesWholeWhileNewConnectionsAreRefused() throws Exception {
        start("60s");
        CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
        MeterRegistry registry = gateway.getBean(MeterRegistry.class);
        ApplicationAvailability availability = gateway.getBean(ApplicationAvailability.class);
        int port = Backends.port(gateway);

        Stream stream = Stream.open(port, threads);
        Backends.await("the stream's first chunk reached the client", () -> stream.lines.get() > 0);
        assertEquals(1, routing.inFlight("llm"), "the stream holds its slot");

        CompletableFuture<Void> closed = CompletableFuture.runAsync(gateway::close, threads);
        Backends.await("the gateway refuses new connections", () -> refused(port));
        assertEquals(
                ReadinessState.REFUSING_TRAFFIC,
                availability.getReadinessState(),
                "readiness reports the stop (the health group's readiness probe answers 503)");
        assertEquals(1, routing.inFlight("llm"), "the stream is still in flight while the gateway drains");
        assertFalse(closed.isDone(), "the stop waits for the stream");
        assertFalse(routing.isClosed(), "the routers stay open while the web server drains");

        replica.release();
        assertEquals(SlowStream.body(), stream.body.get(60, TimeUnit.SECONDS), "the client got the whole stream");
        closed.get(60, TimeUnit.SECONDS);

        assertEquals(0, routing.inFlight("llm"), "nothing left in flight");
        assertEquals(1, replica.requests.get(), "the replica had the one request");
        assertEquals(1.0, outcome(registry, "success"), 0.0, "the stream's lease closed as a success");
        assertEquals(0.0, outcome(registry, "cancelled"), 0.0);
        assertTrue(routing.isClosed(), "the routers closed with the application, after the web server stopped");
    }

    @Test
    void aStreamThatOutlastsTheGracePeriodIsCutAndItsLeaseStillCloses() throws Exception {
        start("1s");
        CartGatewayRouting routing = gateway.getBean(CartGatewayRouting.class);
        MeterRegistry registry = gateway.getBean(MeterRegistry.class);
        int port = Backends.port(gateway);

        Stream stream = Stream.open(port, threads);
        Backends.await("the stream's first chunk reached the client", () -> stream.lines.get() > 0);

        gateway.close(); // returns once the grace period has ended and the web server has stopped
        Backends.await("the client's stream ended", stream.body::isDone);
        assertTrue(
                stream.body.isCompletedExceptionally() || !stream.body.join().equals(SlowStream.body()),
                "the stream was cut");
        Backends.await("nothing left in flight", () -> routing.inFlight("llm") == 0);
        Backends.await("the lease closed as cancelled", () -> outcome(registry, "cancelled") == 1);
        assertEquals(0.0, outcome(registry, "failure"), 0.0, "the replica is not blamed for the gateway's stop");
        assertEquals(0.0, outcome(registry, "success"), 0.0);
        assertTrue(routing.isClosed());
    }

    private static double outcome(MeterRegistry registry, String outcome) {
        return registry.find("cart.upstream.requests").tags("service", "llm", "outcome", outcome).counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }

    /** True when a new connection to the gateway's port is refused. */
    private static boolean refused(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
            return false;
        } catch (ConnectException e) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** A streaming chat request through the gateway, read line by line on its own thread. */
    private static final class Stream {
        final AtomicInteger lines = new AtomicInteger();
        final CompletableFuture<String> body = new CompletableFuture<>();

        static Stream open(int port, ExecutorService threads) {
            Stream s = new Stream();
            threads.execute(() -> s.read(port));
            return s;
        }

        /** A plain HTTP/1.1 request on a socket: the body as the client reads it, to the connection's end. */
        private void read(int port) {
            String json = "{\"model\":\"m\",\"stream\":true,\"max_tokens\":64,\"messages\":[{\"role\":\"system\","
                    + "\"content\":\"" + "Drain. ".repeat(40) + "\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
            byte[] payload = json.getBytes(StandardCharsets.UTF_8);
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
                OutputStream out = socket.getOutputStream();
                out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + port
                                + "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "
                                + payload.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(payload);
                out.flush();
                BufferedReader in =
                        new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null && !line.isEmpty()) {
                    // the status line and headers
                }
                body.complete(chunkedBody(in));
            } catch (IOException | RuntimeException e) {
                body.completeExceptionally(e);
            }
        }

        /** The SSE lines of a chunked body, joined with newlines; counts each {@code data:} line as it comes. */
        private String chunkedBody(BufferedReader in) throws IOException {
            StringBuilder text = new StringBuilder();
            StringBuilder pending = new StringBuilder();
            String size;
            while ((size = in.readLine()) != null) {
                int n = Integer.parseInt(size.trim(), 16);
                if (n == 0) {
                    return text.toString();
                }
                char[] chunk = new char[n];
                int read = 0;
                while (read < n) {
                    int r = in.read(chunk, read, n - read);
                    if (r < 0) {
                        throw new IOException("the body ended inside a chunk");
                    }
                    read += r;
                }
                in.readLine(); // the chunk's CRLF
                pending.append(chunk);
                int nl;
                while ((nl = pending.indexOf("\n")) >= 0) {
                    String line = pending.substring(0, nl);
                    pending.delete(0, nl + 1);
                    if (!line.isEmpty()) {
                        text.append(line).append('\n');
                        lines.incrementAndGet();
                    }
                }
            }
            throw new IOException("the connection closed before the body's last chunk");
        }
    }

    /**
     * A replica whose stream sends its first chunk at once and the rest only once the test releases it: a
     * stream in flight for as long as the test needs, without a timed wait.
     */
    private static final class SlowStream implements AutoCloseable {
        final AtomicInteger requests = new AtomicInteger();
        private final CountDownLatch released = new CountDownLatch(1);
        private final HttpServer server;

        SlowStream() throws IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
            server.setExecutor(Executors.newFixedThreadPool(4));
            server.createContext("/v1/", this::stream);
            server.start();
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        }

        void release() {
            released.countDown();
        }

        static List<String> chunks() {
            List<String> out = new ArrayList<>();
            for (int i = 0; i < CHUNKS; i++) {
                out.add("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":"
                        + "[{\"index\":0,\"delta\":{\"content\":\"t" + i + " \"},\"finish_reason\":null}]}");
            }
            out.add("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],"
                    + "\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":" + CHUNKS + ",\"total_tokens\":"
                    + (100 + CHUNKS) + "}}");
            out.add("data: [DONE]");
            return out;
        }

        /** The body the client must read: every event, each on its own line. */
        static String body() {
            return String.join("\n", chunks()) + "\n";
        }

        private void stream(HttpExchange ex) throws IOException {
            try (InputStream in = ex.getRequestBody()) {
                in.readAllBytes();
            }
            requests.incrementAndGet();
            ex.getResponseHeaders().set("Content-Type", "text/event-stream");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                List<String> chunks = chunks();
                out.write((chunks.get(0) + "\n\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
                try {
                    released.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                for (String c : chunks.subList(1, chunks.size())) {
                    out.write((c + "\n\n").getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
            } catch (IOException e) {
                // the gateway went away (the grace period ended): nothing to finish
            }
        }

        @Override
        public void close() {
            server.stop(0);
            ((ExecutorService) server.getExecutor()).shutdownNow();
        }
    }
}
