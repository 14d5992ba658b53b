package dev.cart.proxy.upstream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.core.ModelsCache;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.HeaderList;
import dev.cart.proxy.http.HeaderView;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.http.Responses;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * {@code GET /v1/models} of the whole pool: the client's request is sent to every healthy replica at once
 * (to every replica when none is healthy), with the client's headers, so each answers as it would answer
 * that client; the {@code data} entries of the 200 JSON answers are merged in worker order, an {@code id}
 * seen before dropped (the first replica's entry wins, so an adapter's {@code parent} and a model's
 * {@code max_model_len} come from one replica). The answer is {@code {"object": "list", "data": [...]}}.
 *
 * <p>When no replica gives a 200 JSON list, the first replica's own answer (status, body, content type) is
 * relayed, or a 502 when none answered at all. The union may be cached ({@link Answer#cacheable()}) only
 * when every replica asked gave a cacheable 200 JSON list: a union missing a replica that failed this once
 * must not be served for ten minutes. Answers are asked for uncompressed ({@code Accept-Encoding:
 * identity}), since they are parsed; each is read up to {@link Forwarder#MODELS_CACHE_LIMIT} bytes.
 *
 * <p>Bypasses the router: listing models takes no replica's slot and teaches the tree nothing.
 * Thread-safe; {@link #fetch} blocks the calling request thread for at most the timeout.
 */
public final class ModelsUnion {

    /** One merged (or relayed) answer. */
    public record Answer(
            int status, HeaderList headers, byte[] body, boolean cacheable, int replicasAsked, int listed) {}

    private static HeaderList json() {
        HeaderList h = new HeaderList();
        h.set("Content-Type", "application/json");
        return h;
    }

    private final HttpClient client;
    private final Duration timeout;

    public ModelsUnion(HttpClient client, Duration timeout) {
        this.client = client;
        this.timeout = timeout;
    }

    /**
     * Asks the replicas of {@code set} for {@code path} with {@code clientHeaders}, and merges the answers.
     * Never blocks: the future completes on the HTTP client's threads once every replica answered, failed or
     * timed out (a replica without an answer counts as {@code null} in the merge).
     */
    public CompletableFuture<Answer> fetch(ManagedReplicaSet set, String path, HeaderView clientHeaders) {
        List<ManagedReplicaSet.Member> asked = new ArrayList<>();
        for (ManagedReplicaSet.Member m : set.replicas()) {
            if (m.isHealthy()) {
                asked.add(m);
            }
        }
        if (asked.isEmpty()) {
            asked.addAll(set.replicas());
        }
        List<CompletableFuture<HttpResponse<byte[]>>> answers = new ArrayList<>();
        for (ManagedReplicaSet.Member m : asked) {
            answers.add(send(m, path, clientHeaders).exceptionally(e -> null)); // no answer from that replica
        }
        return CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new))
                .thenApply(done -> {
                    List<HttpResponse<byte[]>> got = new ArrayList<>();
                    for (CompletableFuture<HttpResponse<byte[]>> f : answers) {
                        got.add(f.join());
                    }
                    return merge(got);
                });
    }

    private CompletableFuture<HttpResponse<byte[]>> send(ManagedReplicaSet.Member m, String path, HeaderView headers) {
        HttpRequest request;
        try {
            HttpRequest.Builder b =
                    HttpRequest.newBuilder(URI.create(m.id() + path)).timeout(timeout);
            HopByHop.copyTo(headers, b);
            b.setHeader("Accept-Encoding", "identity");
            request = b.GET().build();
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        return client.sendAsync(request, info -> ModelDiscovery.limited(Forwarder.MODELS_CACHE_LIMIT));
    }

    /** The union of {@code answers} (one per replica asked, null where none came), or the first one relayed. */
    static Answer merge(List<HttpResponse<byte[]>> answers) {
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("object", "list");
        ArrayNode data = root.putArray("data");
        Set<String> ids = new HashSet<>();
        int listed = 0;
        boolean complete = true;
        for (HttpResponse<byte[]> r : answers) {
            JsonNode list = r == null ? null : list(r);
            if (list == null) {
                complete = false;
                continue;
            }
            listed++;
            complete &= cacheable(r);
            for (JsonNode entry : list) {
                JsonNode id = entry.path("id");
                if (entry.isObject() && id.isTextual() && ids.add(id.asText())) {
                    data.add(entry);
                }
            }
        }
        if (listed > 0) {
            byte[] body = (root.toString() + "\n").getBytes(StandardCharsets.UTF_8);
            return new Answer(200, json(), body, complete, answers.size(), listed);
        }
        for (HttpResponse<byte[]> r : answers) {
            if (r != null && r.body() != null) {
                HeaderList h = new HeaderList();
                HopByHop.forEachResponseHeader(HeaderView.of(r.headers()), null, h::add);
                return new Answer(r.statusCode(), h, r.body(), false, answers.size(), 0);
            }
        }
        ObjectNode err = Responses.JSON.createObjectNode();
        ObjectNode e = err.putObject("error");
        e.put("message", "no replica answered GET /v1/models");
        e.put("type", Responses.typeFor(502));
        e.put("code", "upstream_unreachable");
        e.putNull("param");
        byte[] body = (err.toString() + "\n").getBytes(StandardCharsets.UTF_8);
        return new Answer(502, json(), body, false, answers.size(), 0);
    }

    /** The {@code data} list of a 200 JSON answer (not encoded), or null. */
    private static JsonNode list(HttpResponse<byte[]> r) {
        if (r.statusCode() != 200 || r.body() == null) {
            return null;
        }
        String encoding = r.headers().firstValue("Content-Encoding").orElse("identity");
        if (!encoding.equalsIgnoreCase("identity")) {
            return null; // asked for identity; an encoded body cannot be merged, so it is relayed if alone
        }
        try {
            JsonNode root = Responses.JSON.readTree(r.body());
            return root != null && root.isObject() && root.path("data").isArray() ? root.get("data") : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static boolean cacheable(HttpResponse<byte[]> r) {
        return ModelsCache.cacheable(HeaderView.of(r.headers()));
    }
}
