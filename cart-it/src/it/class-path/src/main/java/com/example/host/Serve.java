package com.example.host;

import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.answer.AnswerReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One request's whole path through a host that forwards over HTTP: extract, choose, forward, stream the answer
 * back while reading it, report the first bytes, close the lease with the usage the answer reported, and learn
 * the answer for the conversation's next turn. The README shows this code; the build runs it against a replica
 * that answers from memory and fails if the next turn does not find the learned answer.
 */
final class Serve {

    private Serve() {}

    /** The host's HTTP client: sends {@code body} to the replica {@code replicaId} and returns its answer. */
    interface Upstream {
        Answer forward(String replicaId, byte[] body) throws IOException;
    }

    /** An answer as it arrives: its {@code Content-Type} and its body in chunks. */
    record Answer(String contentType, List<byte[]> chunks) {}

    static void run() throws IOException, ExtractionException {
        Router router = newRouter();
        PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults()); // one per process, as the router
        try (router) {
            String reply = "An answer long enough to span blocks of the key. ".repeat(6);
            String question = "{\"role\":\"user\",\"content\":\"" + "Tell me about the bookshop's orders. ".repeat(8) + "\"}";
            byte[] body = ("{\"model\":\"llama\",\"messages\":[" + question + "]}").getBytes(StandardCharsets.UTF_8);
            byte[] json = ("{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"llama\",\"choices\":[{\"index\":0,"
                            + "\"message\":{\"role\":\"assistant\",\"content\":\"" + reply + "\"},\"finish_reason\":\"stop\"}],"
                            + "\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":60,\"prompt_tokens_details\":{\"cached_tokens\":0}}}")
                    .getBytes(StandardCharsets.UTF_8);
            Upstream upstream = (replicaId, b) -> new Answer("application/json", List.of(json));
            ByteArrayOutputStream client = new ByteArrayOutputStream();

            Host.check(handle(router, extractor, body, upstream, client) == 200, "the request served");
            Host.check(client.toString(StandardCharsets.UTF_8).equals(new String(json, StandardCharsets.UTF_8)),
                    "the client got the answer as the replica sent it");

            String next = "{\"model\":\"llama\",\"messages\":[" + question + ",{\"role\":\"assistant\",\"content\":\""
                    + reply + "\"},{\"role\":\"user\",\"content\":\"And the refunds?\"}]}";
            RouteDecision d = Host.route(router, extractor, next);
            int firstTurn = extractor.extract(Endpoint.CHAT_COMPLETIONS, body).key().length();
            Host.check(d.reason() == Reason.CACHE_HIT && d.matchedLength() > firstTurn,
                    "the next turn matches the learned answer too: " + d + " past " + firstTurn);
            Host.close(d.lease());
        }
    }

    /** The process's one router: a replica set and a policy, found by name. */
    static Router newRouter() {
        return Router.builder()
                .replicas(ManagedReplicaSet.builder().add(new ReplicaSpec("http://gpu-0:8000", 32, 0)).build())
                .policy("cache_aware") // cart-policy's, found by name
                .firstTokenReports(true)
                .build();
    }

    /** Serves one chat completions request; returns the HTTP status the host answers with. */
    static int handle(Router router, PromptExtractor extractor, byte[] body, Upstream upstream, OutputStream client)
            throws IOException {
        ExtractedRequest req;
        try {
            req = extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
        } catch (ExtractionException e) {
            return 400; // its message says what is wrong with the body
        }
        RouteDecision d = router.choose(RouteRequest.of(req.key()).withModel(req.model()));
        if (!d.routed()) {
            return d.reason() == Reason.MODEL_NOT_SERVED ? 404 : 503;
        }
        try (Lease lease = d.lease()) { // holds the replica's in-flight slot until closed
            Answer answer = upstream.forward(d.replica().id(), body); // a 5xx or an error: lease.failed()
            AnswerReader reader = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, answer.contentType(), null, true);
            for (byte[] chunk : answer.chunks()) {
                lease.firstToken(); // the prefill is over (idempotent)
                client.write(chunk);
                if (reader != null) {
                    reader.accept(chunk, 0, chunk.length); // the same bytes, only read
                }
            }
            if (reader == null) {
                lease.succeeded(); // an answer it cannot read: served, usage unknown
                return 200;
            }
            lease.succeeded(reader.finish()); // the usage the replica reported
            List<? extends CharSequence> reply = reader.text(); // null: no plain text (reader.textProblem())
            PromptKey next = reply == null ? null : extractor.continuationKey(req, reply);
            if (next != null) {
                router.record(next, d.replica()); // the conversation's next turn starts with this answer
            }
        }
        return 200;
    }
}
