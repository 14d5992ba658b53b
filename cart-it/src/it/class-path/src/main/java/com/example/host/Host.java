package com.example.host;

import dev.cart.core.Lease;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

/**
 * A host embedding CART: its own replicas (from its own service discovery), its own policy plugged in by
 * name, and for each request: extract the prompt key, choose a replica, forward, close the lease. Three
 * conversations start at once and spread over the pool by load; their follow-ups go where their prefix
 * went. The build runs this and fails if a follow-up goes elsewhere.
 */
public final class Host {

    private Host() {}

    /**
     * Runs the example.
     *
     * @param args the path the build put the library on: {@code module-path} or {@code class-path}
     * @throws ExtractionException if a body the example builds is not a valid request (a bug)
     * @throws IOException never: the example's replica answers from memory
     */
    public static void main(String[] args) throws ExtractionException, IOException {
        DiscoveredReplicas pool = new DiscoveredReplicas();
        pool.update(List.of("http://gpu-0:8000", "http://gpu-1:8000", "http://gpu-2:8000"), 32);
        PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
        List<String> topics = List.of("bookshop orders", "travel bookings", "tax returns");

        try (Router router = Router.builder()
                .replicas(pool) // the host's own ReplicaSet
                .policy("prefix_affinity") // the host's own policy, found by name
                .build()) {
            List<RouteDecision> first = new ArrayList<>();
            for (String topic : topics) { // three first turns in flight at once: placed by load
                first.add(route(router, extractor, chat(topic, 1)));
            }
            for (RouteDecision d : first) {
                check(d.reason() == Reason.MISS, "a first turn is a miss: " + d);
                close(d.lease());
            }
            check(new HashSet<>(replicas(first)).size() == 3, "first turns spread by load: " + replicas(first));

            for (int i = 0; i < topics.size(); i++) { // the follow-ups repeat their conversation's prefix
                RouteDecision d = route(router, extractor, chat(topics.get(i), 2));
                check(d.reason() == Reason.CACHE_HIT, "a follow-up hits: " + d);
                check(d.replica() == first.get(i).replica(), "a follow-up goes where its prefix went: " + d);
                close(d.lease());
                System.out.printf("%s: turn 1 -> %s, turn 2 -> %s (%s, %d of %d chars)%n",
                        topics.get(i), first.get(i).replica().id(), d.replica().id(), d.reason(),
                        d.matchedLength(), d.keyLength());
            }
        }
        Serve.run();
        PathCheck.expect(args.length > 0 ? args[0] : "class-path", pool);
    }

    /** What a request handler does before it forwards the body to {@code decision.replica().id()}. */
    static RouteDecision route(Router router, PromptExtractor extractor, String body) throws ExtractionException {
        ExtractedRequest request = extractor.extract(Endpoint.CHAT_COMPLETIONS, body.getBytes(StandardCharsets.UTF_8));
        RouteDecision decision = router.choose(RouteRequest.of(request.key()).withModel(request.model()));
        check(decision.routed(), "routed: " + decision);
        return decision;
    }

    /** What a request handler does when the replica's answer is complete. */
    static void close(Lease lease) {
        try (lease) {
            lease.firstToken();
            lease.succeeded();
        }
    }

    static void check(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException("expected " + what);
        }
    }

    private static List<String> replicas(List<RouteDecision> decisions) {
        return decisions.stream().map(d -> d.replica().id()).toList();
    }

    /** A chat completions body: a long system prompt about {@code topic}, then {@code turns} user turns. */
    private static String chat(String topic, int turns) {
        StringBuilder messages = new StringBuilder(message("system",
                ("You answer questions about " + topic + ", briefly and politely. ").repeat(20)));
        for (int t = 1; t <= turns; t++) {
            messages.append(',').append(message("user", "Question " + t + " about " + topic + "?"));
            if (t < turns) {
                messages.append(',').append(message("assistant", "Answer " + t + "."));
            }
        }
        return "{\"model\":\"llama\",\"messages\":[" + messages + "]}";
    }

    private static String message(String role, String content) {
        return "{\"role\":\"" + role + "\",\"content\":\"" + content + "\"}";
    }
}
