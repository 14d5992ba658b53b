package dev.cart.examples;

import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
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
import dev.cart.policy.Policies;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Embedding CART in your own server: one router and one extractor for the whole process, and for each
 * request: extract the key, choose, forward, report the first bytes, close the lease. Here the
 * "forwarding" is a stand-in that answers in three chunks, so the program runs on its own, after the
 * build command of the README: {@code java -jar examples/embedded/target/cart-embedded.jar}.
 *
 * <p>Two users chat behind the same long system prompt; a last request sends a broken body. Watch the
 * first turn miss, the follow-ups hit the replica holding their conversation, and the bad body get the
 * error your server would turn into a 400. {@link #handle} is the code the README's "Using the library"
 * shows, kept here so that the build compiles it.
 */
public final class EmbeddedRouter {

    private EmbeddedRouter() {}

    /** Runs the demonstration. */
    public static void main(String[] args) {
        ManagedReplicaSet pool = ManagedReplicaSet.builder()
                .add(new ReplicaSpec("http://gpu-0:8000", 32, 0)) // id (base URL), max in flight, load penalty
                .add(new ReplicaSpec("http://gpu-1:8000", 32, 0))
                .add(new ReplicaSpec("http://gpu-2:8000", 32, 0))
                .build();
        PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
        String system = "You are the support assistant of an online bookshop. ".repeat(30);
        try (Router router = Router.builder()
                .replicas(pool) // or your own ReplicaSet (service discovery, breakers)
                .policy(Policies.cacheAware()) // or .policy("cache_aware") by name
                .firstTokenReports(true) // this host calls lease.firstToken(): count prefill at once
                .build()) {
            String alice = "";
            String bob = "";
            for (int turn = 1; turn <= 3; turn++) {
                alice += message("user", "Alice, turn " + turn + ": where is my order?") + ",";
                bob += message("user", "Bob, turn " + turn + ": do you ship to Norway?") + ",";
                System.out.println(handle(router, extractor, bytes(chat(system, alice))));
                System.out.println(handle(router, extractor, bytes(chat(system, bob))));
                alice += message("assistant", "Answer " + turn + " for Alice.") + ",";
                bob += message("assistant", "Answer " + turn + " for Bob.") + ",";
            }
            System.out.println(handle(router, extractor, bytes("{\"model\":\"m\",\"messages\":\"not an array\"}")));
            System.out.printf("tree: %s; in flight now: %d%n", router.treeStats(), pool.totalInFlight());
        }
    }

    /** What a request handler does; returns what the handler would answer, as one line. */
    @SuppressWarnings("UnusedVariable") // a host writes each chunk to its client where the comment says
    static String handle(Router router, PromptExtractor extractor, byte[] body) {
        ExtractedRequest req;
        try {
            req = extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
        } catch (ExtractionException e) {
            return e.status() + " " + e.code() + ": " + e.getMessage(); // answer the client with it (a 4xx)
        }
        RouteDecision d = router.choose(RouteRequest.of(req.key()).withModel(req.model()));
        if (d.reason() == Reason.MODEL_NOT_SERVED) {
            return "404: no replica serves the model " + req.model(); // no lease to close
        }
        if (!d.routed()) {
            return "503: no replica can take the request now"; // no lease to close
        }
        try (Lease lease = d.lease()) { // owns the replica's in-flight slot
            Response r = forward(d.replica().id(), body);
            lease.status(r.status());
            boolean first = true;
            for (String chunk : r.chunks()) {
                if (first) {
                    lease.firstToken(); // the first bytes arrived: the prefill is done
                    first = false;
                }
                // write the chunk to the client here
            }
            if (r.status() >= 500) {
                lease.failed(); // counts towards opening the replica's circuit
            } else {
                lease.succeeded();
            }
            return String.format(
                    "%-14s -> %s  matched %5d of %5d chars (%.0f%%), decided in %d us",
                    d.reason(),
                    d.replica().id(),
                    d.matchedLength(),
                    d.keyLength(),
                    100 * d.matchedRatio(),
                    d.decisionNanos() / 1000);
        } // a retry: RouteRequest.of(key).excluding(d.replica())
    }

    /** A replica's answer: its status and its body in chunks (a stream's events). */
    record Response(int status, List<String> chunks) {}

    /** Stands in for the HTTP call to the replica at {@code baseUrl}. */
    static Response forward(String baseUrl, byte[] body) {
        return new Response(200, List.of("data: {...}\n\n", "data: {...}\n\n", "data: [DONE]\n\n"));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String chat(String system, String turns) {
        return "{\"model\":\"llama\",\"messages\":[" + message("system", system) + ","
                + turns.substring(0, turns.length() - 1) + "]}";
    }

    private static String message(String role, String content) {
        return "{\"role\":\"" + role + "\",\"content\":\"" + content + "\"}";
    }
}
