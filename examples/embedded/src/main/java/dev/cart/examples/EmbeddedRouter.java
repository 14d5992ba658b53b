package dev.cart.examples;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.policy.Policies;
import java.nio.charset.StandardCharsets;

/**
 * Embedding CART in your own server: one router and one extractor for the whole process, and for each
 * request: extract the key, choose, forward, close the lease. Here the "forwarding" is a print, so the
 * program runs on its own: {@code java -cp ... dev.cart.examples.EmbeddedRouter}.
 *
 * <p>Two users chat behind the same long system prompt; a third request sends a broken body. Watch the
 * first turn miss, the follow-ups hit the replica holding their conversation, and the bad body get the
 * error your server would turn into a 400.
 */
public final class EmbeddedRouter {

    private EmbeddedRouter() {
    }

    public static void main(String[] args) {
        ManagedReplicaSet pool = ManagedReplicaSet.builder()
                .add(new ReplicaSpec("http://gpu-0:8000", 32, 0))
                .add(new ReplicaSpec("http://gpu-1:8000", 32, 0))
                .add(new ReplicaSpec("http://gpu-2:8000", 32, 0))
                .build();
        PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
        String system = "You are the support assistant of an online bookshop. ".repeat(30);
        try (Router router = Router.builder().replicas(pool).policy(Policies.cacheAware()).build()) {
            String alice = "";
            String bob = "";
            for (int turn = 1; turn <= 3; turn++) {
                alice += message("user", "Alice, turn " + turn + ": where is my order?") + ",";
                bob += message("user", "Bob, turn " + turn + ": do you ship to Norway?") + ",";
                handle(router, extractor, chat(system, alice));
                handle(router, extractor, chat(system, bob));
                alice += message("assistant", "Answer " + turn + " for Alice.") + ",";
                bob += message("assistant", "Answer " + turn + " for Bob.") + ",";
            }
            handle(router, extractor, "{\"model\":\"m\",\"messages\":\"not an array\"}");
            System.out.printf("tree: %s; in flight now: %d%n", router.treeStats(), pool.totalInFlight());
        }
    }

    /** What a request handler does. */
    static void handle(Router router, PromptExtractor extractor, String body) {
        ExtractedRequest request;
        try {
            request = extractor.extract(Endpoint.CHAT_COMPLETIONS, body.getBytes(StandardCharsets.UTF_8));
        } catch (ExtractionException e) {
            System.out.printf("%d %s: %s (param %s)%n", e.status(), e.code(), e.getMessage(), e.param());
            return;
        }
        RouteDecision d = router.choose(RouteRequest.of(request.key()));
        if (!d.routed()) {
            System.out.println("503: no replica can take the request");
            return;
        }
        try (var lease = d.lease()) {
            // forward the body to d.replica().id() here; on a 5xx or an I/O error call lease.failed()
            System.out.printf("%-15s -> %s  matched %5d of %5d chars (%.0f%%), decided in %d us%n",
                    d.reason().code(), d.replica().id(), d.matchedLength(), d.keyLength(),
                    100 * d.matchedRatio(), d.decisionNanos() / 1000);
            lease.succeeded();
        }
    }

    private static String chat(String system, String turns) {
        return "{\"model\":\"llama\",\"messages\":[" + message("system", system) + ","
                + turns.substring(0, turns.length() - 1) + "]}";
    }

    private static String message(String role, String content) {
        return "{\"role\":\"" + role + "\",\"content\":\"" + content + "\"}";
    }
}
