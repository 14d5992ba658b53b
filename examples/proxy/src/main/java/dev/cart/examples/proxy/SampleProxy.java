package dev.cart.examples.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingListener;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.answer.AnswerReader;
import dev.cart.policy.Policies;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The path a host writes around the CART library, on the JDK's own {@code HttpServer} and {@code HttpClient}, with
 * nothing else: for each chat request, <b>extract</b> the routing key from the body, <b>choose</b> a replica,
 * <b>forward</b> the request to it, <b>stream</b> its answer back chunk by chunk, report the <b>first token</b> (the
 * first bytes), close the <b>lease</b> with the usage the answer reported, and <b>learn</b> the answer as the start
 * of the conversation's next turn. The production proxy ({@code cart-proxy}) does the same on Netty with limits,
 * retries, metrics, health checks and reload; this sample leaves those out so that the path reads in one sitting.
 *
 * <pre>
 * java -jar examples/proxy/target/cart-example-proxy.jar 6700 http://127.0.0.1:8001 http://127.0.0.1:8002
 * </pre>
 *
 * <p>Concurrency: the server runs each exchange on a thread of its own (a cached pool); the router, the extractor
 * and the HTTP client are thread-safe and shared; a lease and an answer reader belong to one exchange.
 */
public final class SampleProxy implements AutoCloseable {

    /** Largest request body read. */
    static final int MAX_BODY_BYTES = 32 * 1024 * 1024;

    /** Headers that describe one connection, never copied across the proxy (RFC 9110 §7.6.1), and framing. */
    private static final Set<String> HOP_BY_HOP = Set.of(
            "connection",
            "keep-alive",
            "proxy-authenticate",
            "proxy-authorization",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "content-length",
            "host",
            "expect",
            "date");

    private static final JsonFactory JSON = new JsonFactory();

    private final ManagedReplicaSet replicas;
    private final Router router;
    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
    private final HttpClient client;
    private final HttpServer server;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    private SampleProxy(int port, List<String> replicaUrls, RoutingListener listener) throws IOException {
        ManagedReplicaSet.Builder pool = ManagedReplicaSet.builder();
        for (String url : replicaUrls) {
            pool.add(new ReplicaSpec(url, 64, 0)); // the base URL is the replica's id; 64 requests at once
        }
        this.replicas = pool.build();
        this.router = Router.builder()
                .replicas(replicas)
                .policy(Policies.cacheAware())
                .firstTokenReports(true) // this host calls lease.firstToken()
                .listener(listener)
                .build();
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(2))
                .build();
        this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
        server.createContext("/", this::handle);
        server.setExecutor(threads);
    }

    /**
     * Starts a proxy on {@code port} of the loopback address (0: any free port) in front of {@code replicaUrls};
     * {@code listener} hears the router's decisions and cache feedback.
     */
    public static SampleProxy start(int port, List<String> replicaUrls, RoutingListener listener) throws IOException {
        SampleProxy p = new SampleProxy(port, replicaUrls, listener);
        p.server.start();
        return p;
    }

    /** Runs the sample: {@code PORT REPLICA_URL...}. */
    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: SampleProxy PORT REPLICA_URL...");
            System.exit(2);
        }
        SampleProxy p = start(Integer.parseInt(args[0]), List.of(args).subList(1, args.length), RoutingListener.NONE);
        System.out.println("sample proxy on http://127.0.0.1:" + p.port() + " in front of " + p.replicas.replicas());
    }

    /** The port it listens on. */
    public int port() {
        return server.getAddress().getPort();
    }

    /** The replica set (in-flight counts, for a test's checks). */
    public ManagedReplicaSet replicas() {
        return replicas;
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
        router.close();
    }

    /** One exchange: only the routed endpoints are served; every failure is answered as JSON. */
    private void handle(HttpExchange ex) {
        try {
            Optional<Endpoint> endpoint = Endpoint.forPath(ex.getRequestURI().getPath());
            if (endpoint.isEmpty() || !"POST".equals(ex.getRequestMethod())) {
                error(ex, null, 404, "not_found", "served: POST /v1/chat/completions, /v1/completions, /v1/messages");
                return;
            }
            byte[] body = ex.getRequestBody().readNBytes(MAX_BODY_BYTES + 1);
            if (body.length > MAX_BODY_BYTES) {
                error(ex, endpoint.get(), 413, "request_too_large", "the body is over " + MAX_BODY_BYTES + " bytes");
                return;
            }
            proxy(ex, endpoint.get(), body);
        } catch (IOException | RuntimeException e) {
            // the client went away, or the replica's answer broke after it started: nothing more can be written
        } finally {
            ex.close();
        }
    }

    /** Extract, choose, forward, stream, lease, first token, learn. */
    private void proxy(HttpExchange ex, Endpoint endpoint, byte[] body) throws IOException {
        // 1. extract: the prompt's key (and the model) from the body, or the client's error
        ExtractedRequest req;
        try {
            req = extractor.extract(endpoint, body);
        } catch (ExtractionException e) {
            error(ex, endpoint, e.status(), e.code(), e.getMessage());
            return;
        }
        // 2. choose: the replica most likely to hold the prompt's prefix, without overloading it
        RouteRequest route = RouteRequest.of(req.key()).withModel(req.model()).withTokenization(req.tokenization());
        for (int attempt = 0; ; attempt++) {
            RouteDecision d = router.choose(route.attempt(attempt));
            if (d.reason() == Reason.MODEL_NOT_SERVED) {
                error(ex, endpoint, 404, "model_not_found", "no replica serves this model");
                return;
            }
            if (!d.routed()) {
                error(ex, endpoint, 503, "no_replica_available", "no replica can take the request now; retry shortly");
                return;
            }
            // 3. the lease holds the replica's slot until the answer is over, whatever happens
            try (Lease lease = d.lease()) {
                HttpResponse<InputStream> answer;
                try {
                    answer = forward(d.replica(), endpoint, ex, body);
                } catch (IOException e) {
                    lease.failed(); // nothing was relayed yet: the next attempt avoids this replica
                    if (attempt == 0) {
                        route = route.excluding(d.replica());
                        continue;
                    }
                    error(ex, endpoint, 502, "upstream_failed", "the replica could not be reached");
                    return;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    lease.failed();
                    return;
                }
                relay(ex, endpoint, req, d.replica(), lease, answer);
            }
            return;
        }
    }

    /** 4. forward: the client's request, less its hop-by-hop headers, to the chosen replica. */
    private HttpResponse<InputStream> forward(Replica replica, Endpoint endpoint, HttpExchange ex, byte[] body)
            throws IOException, InterruptedException {
        HttpRequest.Builder up = HttpRequest.newBuilder(URI.create(replica.id() + endpoint.path()))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        ex.getRequestHeaders().forEach((name, values) -> {
            if (!HOP_BY_HOP.contains(name.toLowerCase(Locale.ROOT))) {
                values.forEach(v -> up.header(name, v));
            }
        });
        return client.send(up.build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    /**
     * 5. stream the answer to the client as it arrives, reading its usage and text on the way; 6. report the first
     * token; 7. close the lease with the usage; 8. learn the answer's text as the start of the next turn.
     */
    private void relay(
            HttpExchange ex,
            Endpoint endpoint,
            ExtractedRequest req,
            Replica replica,
            Lease lease,
            HttpResponse<InputStream> answer)
            throws IOException {
        int status = answer.statusCode();
        lease.status(status);
        Headers out = ex.getResponseHeaders();
        answer.headers().map().forEach((name, values) -> {
            if (!HOP_BY_HOP.contains(name.toLowerCase(Locale.ROOT)) && !name.startsWith(":")) {
                out.put(name, new ArrayList<>(values));
            }
        });
        AnswerReader reader = status != 200
                ? null
                : AnswerReader.create(
                        endpoint,
                        answer.headers().firstValue("content-type").orElse(null),
                        answer.headers().firstValue("content-encoding").orElse(null),
                        true, // keep the text: it is learned below
                        answer.headers().firstValueAsLong("content-length").orElse(-1));
        ex.sendResponseHeaders(status, 0); // chunked: the answer goes out as it comes
        byte[] chunk = new byte[16 * 1024];
        boolean first = true;
        try (InputStream in = answer.body();
                OutputStream client = ex.getResponseBody()) {
            for (int n; (n = in.read(chunk)) > 0; ) {
                if (first) {
                    lease.firstToken(); // the prefill is over: the replica's pending prefill count drops now
                    first = false;
                }
                client.write(chunk, 0, n);
                client.flush(); // each event reaches the client as the replica sent it
                if (reader != null) {
                    reader.accept(chunk, 0, n); // the same bytes, read, never changed
                }
            }
            // before the stream is closed: closing it sends the answer's end, and a client may send its next turn
            // the moment it has that; the turn must find this answer learned
            if (status >= 500) {
                lease.failed(); // counts towards the replica's circuit breaker
                return;
            }
            lease.succeeded(reader == null ? ServedUsage.unknown() : reader.finish());
            List<? extends CharSequence> text = reader == null ? null : reader.text();
            if (text != null) {
                // the replica now holds this conversation followed by its own reply: the next turn starts with it
                PromptKey next = extractor.continuationKey(req, text);
                if (next != null) {
                    router.record(next, replica);
                }
            }
        }
    }

    /** A JSON error in the shape of the API called: Anthropic's on {@code /v1/messages}, OpenAI's elsewhere. */
    private static void error(HttpExchange ex, Endpoint endpoint, int status, String code, String message)
            throws IOException {
        String type = status >= 500 ? "api_error" : "invalid_request_error";
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (JsonGenerator g = JSON.createGenerator(b)) {
            g.writeStartObject();
            if (endpoint == Endpoint.MESSAGES) {
                g.writeStringField("type", "error");
            }
            g.writeObjectFieldStart("error");
            g.writeStringField("type", type);
            g.writeStringField("message", message);
            if (endpoint != Endpoint.MESSAGES) {
                g.writeStringField("code", code);
                g.writeNullField("param");
            }
            g.writeEndObject();
            g.writeEndObject();
        }
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, b.size());
        try (OutputStream o = ex.getResponseBody()) {
            b.writeTo(o);
        }
    }
}
