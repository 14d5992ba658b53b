package dev.cart.proxy.upstream;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.http.Responses;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Learns which models a replica serves from its {@code GET /v1/models}, for workers whose
 * {@code workers[].models} is not configured; the health checker calls it after a replica's first good probe,
 * after a good probe that follows a failed one, and every {@code health.models_interval_secs}.
 *
 * <p>What counts: a 200 answer whose body is a JSON object with a {@code data} list; the models are the
 * {@code id} of each entry (vLLM lists every LoRA adapter loaded at run time as an entry of its own, with
 * {@code parent} naming its base model, which is listed too), so an adapter loaded or unloaded is seen the
 * next time the replica is asked. Anything else (a connection error, a timeout, another status, a body that is not such
 * JSON, a list with no usable id, a body over {@link #MAX_BODY_BYTES}) teaches nothing: the replica keeps
 * the models it had, which for a replica that never answered is "any model" (so a replica whose
 * {@code /v1/models} needs credentials the proxy does not have still takes every request; configure its
 * models then). At most {@link ProxyConfig.Worker#MAX_MODELS} ids are kept.
 *
 * <p>Concurrency: stateless apart from the client; each call is asynchronous and never completes
 * exceptionally. {@link ManagedReplicaSet.Member#models} publishes the new set atomically.
 */
public final class ModelDiscovery {

    private static final Logger LOG = LoggerFactory.getLogger(ModelDiscovery.class);

    /** Largest {@code /v1/models} body read; a larger one teaches nothing. */
    static final int MAX_BODY_BYTES = 4 * 1024 * 1024;

    /** The {@code User-Agent} of discovery requests, so a replica's access log tells them from clients'. */
    public static final String USER_AGENT = "cart-model-discovery";

    private final HttpClient client;
    private final Duration timeout;

    ModelDiscovery(HttpClient client, Duration timeout) {
        this.client = client;
        this.timeout = timeout;
    }

    /**
     * Fetches {@code m}'s models and, if the answer lists any, makes them the models it serves.
     *
     * @param accept false once the caller no longer wants the result (a closed health checker)
     * @return completes, never exceptionally, once the result is applied or dropped
     */
    CompletableFuture<Void> refresh(ManagedReplicaSet.Member m, java.util.function.BooleanSupplier accept) {
        HttpRequest request;
        try {
            request = HttpRequest.newBuilder(URI.create(m.id() + "/v1/models"))
                    .timeout(timeout)
                    .header("Accept", "application/json")
                    .header("User-Agent", USER_AGENT)
                    .GET()
                    .build();
        } catch (IllegalArgumentException e) {
            return CompletableFuture.completedFuture(null);
        }
        return client.sendAsync(request, info -> limited(MAX_BODY_BYTES)).handle((resp, err) -> {
            if (err != null) {
                LOG.debug("models of {} not learned: {}", m.id(), err.getClass().getSimpleName());
                return null;
            }
            if (resp.statusCode() != 200 || resp.body() == null) {
                LOG.debug(
                        "models of {} not learned: HTTP {}{}",
                        m.id(),
                        resp.statusCode(),
                        resp.body() == null ? " (body too large)" : "");
                return null;
            }
            List<String> ids = modelIds(resp.body());
            if (ids.isEmpty()) {
                LOG.debug("models of {} not learned: the answer lists no model id", m.id());
                return null;
            }
            if (accept.getAsBoolean()) {
                m.models(ids);
            }
            return null;
        });
    }

    /**
     * The distinct, non-blank {@code data[].id} strings of an OpenAI {@code /v1/models} body, in order, at
     * most {@link ProxyConfig.Worker#MAX_MODELS}; empty when the body is not such JSON.
     */
    public static List<String> modelIds(byte[] body) {
        JsonNode root;
        try {
            root = Responses.JSON.readTree(body);
        } catch (IOException e) {
            return List.of();
        }
        if (root == null || !root.isObject() || !root.path("data").isArray()) {
            return List.of();
        }
        LinkedHashSet<String> ids = new LinkedHashSet<>();
        for (JsonNode entry : root.get("data")) {
            JsonNode id = entry.path("id");
            if (id.isTextual() && !id.asText().isBlank()) {
                ids.add(id.asText());
                if (ids.size() == ProxyConfig.Worker.MAX_MODELS) {
                    break;
                }
            }
        }
        return List.copyOf(ids);
    }

    /** A body subscriber that keeps at most {@code limit} bytes and yields null (and cancels) past it. */
    static HttpResponse.BodySubscriber<byte[]> limited(int limit) {
        return new HttpResponse.BodySubscriber<>() {
            private final ByteArrayOutputStream buf = new ByteArrayOutputStream();
            private final CompletableFuture<byte[]> result = new CompletableFuture<>();
            private Flow.Subscription subscription;

            @Override
            public CompletionStage<byte[]> getBody() {
                return result;
            }

            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription = s;
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(List<ByteBuffer> items) {
                if (result.isDone()) {
                    return;
                }
                for (ByteBuffer b : items) {
                    if (buf.size() + (long) b.remaining() > limit) {
                        result.complete(null);
                        subscription.cancel();
                        return;
                    }
                    byte[] bytes = new byte[b.remaining()];
                    b.get(bytes);
                    buf.write(bytes, 0, bytes.length);
                }
            }

            @Override
            public void onError(Throwable t) {
                result.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                result.complete(buf.toByteArray());
            }
        };
    }
}
