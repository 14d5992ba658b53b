package dev.cart.kvevents;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Asks an engine for a request's tokens: vLLM's {@code POST /tokenize} with the request's messages (its chat
 * template applied by the engine) or prompt, on one of the replicas serving the model, taken in turn. The
 * call's cost is measured and reported ({@link KvIndex#tokenized}, and so the listener's
 * {@link KvEventsListener#onTokenized}); a replica failing it several times in a row drops to approximate.
 * One attempt per request, bounded by the timeout: a request whose tokens cannot be had routes approximately.
 *
 * <p>Thread-safe; one instance serves every request. Uses the JDK's {@link HttpClient} (its own, or the
 * host's: {@link Builder#httpClient}) and Jackson's streaming parser for the answer
 * ({@code {"count": n, "max_model_len": m, "tokens": [...]}}). The call carries the request's body and
 * {@code content-type} alone: no header of the client's request (its credentials included) reaches the engine.
 */
public final class EngineTokenizer implements PromptTokenizer {

    private static final JsonFactory JSON = new JsonFactory();

    private final KvIndex index;
    private final HttpClient http;
    private final Duration timeout;
    private final Function<String, URI> baseUri;
    private final AtomicInteger turn = new AtomicInteger();

    private EngineTokenizer(Builder b) {
        this.index = b.index;
        this.timeout = b.timeout;
        this.baseUri = b.baseUri;
        this.http = b.http != null
                ? b.http
                : HttpClient.newBuilder()
                        .connectTimeout(b.connectTimeout)
                        .version(HttpClient.Version.HTTP_1_1)
                        .build();
    }

    /**
     * A builder reporting to {@code index}.
     *
     * @param index where tokenization outcomes are recorded (per replica)
     * @return a new builder with the defaults (500 ms per call, 200 ms to connect, the replica's id as its
     *     base URI)
     * @throws NullPointerException if {@code index} is null
     */
    public static Builder builder(KvIndex index) {
        return new Builder(index);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Posts the request's body to {@code /tokenize} on one of {@code replicas}, taken in turn and preferring
     * one whose last tokenization did not fail; records the outcome in the index ({@link KvIndex#tokenized}).
     * Blocks the calling thread for at most the timeout (plus the connection's). An interrupt ends the call
     * with the failure {@code interrupted} and the thread's interrupt flag set again.
     */
    @Override
    public PromptTokens tokenize(TokenizeRequest request, List<String> replicas) {
        if (replicas.isEmpty()) {
            return PromptTokens.failed(null, 0, "no replica");
        }
        String replica = pick(replicas);
        long t0 = System.nanoTime();
        String failure;
        try {
            HttpRequest req = HttpRequest.newBuilder(baseUri.apply(replica).resolve("/tokenize"))
                    .timeout(timeout)
                    .header("content-type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(request.body()))
                    .build();
            HttpResponse<InputStream> resp = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = resp.body()) {
                if (resp.statusCode() != 200) {
                    in.readAllBytes();
                    failure = "status " + resp.statusCode();
                } else {
                    int[] tokens = parse(in);
                    long nanos = System.nanoTime() - t0;
                    index.tokenized(replica, true, nanos, null);
                    return PromptTokens.of(tokens, replica, nanos);
                }
            }
        } catch (HttpTimeoutException e) {
            failure = "timeout";
        } catch (ConnectException e) {
            failure = "connect";
        } catch (IOException e) {
            failure = e instanceof BodyException ? "body" : "io";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = "interrupted";
        } catch (IllegalArgumentException e) {
            failure = "bad replica uri";
        }
        long nanos = System.nanoTime() - t0;
        index.tokenized(replica, false, nanos, failure);
        return PromptTokens.failed(replica, nanos, failure);
    }

    /** The next replica in turn, preferring one whose tokenization is not failing. */
    private String pick(List<String> replicas) {
        int n = replicas.size();
        int start = Math.floorMod(turn.getAndIncrement(), n);
        for (int i = 0; i < n; i++) {
            String r = replicas.get((start + i) % n);
            ReplicaEntry e = index.entry(r);
            if (e == null || e.tokenizeFailures == 0) {
                return r;
            }
        }
        return replicas.get(start);
    }

    /** A {@code /tokenize} answer without a readable {@code tokens} array. */
    private static final class BodyException extends IOException {
        private static final long serialVersionUID = 1L;

        BodyException(String message) {
            super(message);
        }
    }

    static int[] parse(InputStream in) throws IOException {
        try (JsonParser p = JSON.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new BodyException("not an object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                if (name.equals("tokens") && t == JsonToken.START_ARRAY) {
                    int[] out = new int[256];
                    int n = 0;
                    while ((t = p.nextToken()) == JsonToken.VALUE_NUMBER_INT) {
                        if (n == out.length) {
                            out = java.util.Arrays.copyOf(out, n * 2);
                        }
                        out[n++] = p.getIntValue();
                    }
                    if (t != JsonToken.END_ARRAY) {
                        throw new BodyException("tokens are not integers");
                    }
                    return java.util.Arrays.copyOf(out, n);
                }
                p.skipChildren();
            }
            throw new BodyException("no tokens");
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new BodyException("not JSON");
        }
    }

    /** Builds an {@link EngineTokenizer}. */
    public static final class Builder {
        private final KvIndex index;
        private Duration timeout = Duration.ofMillis(500);
        private Duration connectTimeout = Duration.ofMillis(200);
        private Function<String, URI> baseUri = URI::create;
        private @Nullable HttpClient http;

        private Builder(KvIndex index) {
            this.index = Objects.requireNonNull(index);
        }

        /**
         * The whole call's limit: past it the request routes approximately. Default 500 ms.
         *
         * @param d positive
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is zero or negative
         */
        public Builder timeout(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("timeout must be positive, was " + d);
            }
            this.timeout = d;
            return this;
        }

        /**
         * The limit for opening a connection to a replica. Default 200 ms.
         *
         * @param d positive
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is zero or negative
         */
        public Builder connectTimeout(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("connectTimeout must be positive, was " + d);
            }
            this.connectTimeout = d;
            return this;
        }

        /**
         * How a replica's base URI is found from its id; {@code /tokenize} is resolved against it. Default: the
         * id is the base URI (e.g. {@code http://node1:8000}). A function that throws
         * {@link IllegalArgumentException} fails that call with {@code bad replica uri}.
         *
         * @param f called on the request's thread, so thread-safe
         * @return this builder
         * @throws NullPointerException if {@code f} is null
         */
        public Builder baseUri(Function<String, URI> f) {
            this.baseUri = Objects.requireNonNull(f);
            return this;
        }

        /**
         * The HTTP client to call the engines with: a host that builds tokenizers again (on every reload of its
         * workers) passes one client it owns, so no tokenizer starts a client (and its selector thread) of its
         * own. The client's connect timeout then applies instead of {@link #connectTimeout}; the tokenizer never
         * closes it. Default: each tokenizer builds its own HTTP/1.1 client.
         *
         * @param client the client; used from the requests' threads (the JDK's client is thread-safe)
         * @return this builder
         * @throws NullPointerException if {@code client} is null
         */
        public Builder httpClient(HttpClient client) {
            this.http = Objects.requireNonNull(client);
            return this;
        }

        /**
         * Builds the tokenizer (and its HTTP client, unless {@link #httpClient} gave one).
         *
         * @return a new tokenizer; builders may be reused
         */
        public EngineTokenizer build() {
            return new EngineTokenizer(this);
        }
    }
}
