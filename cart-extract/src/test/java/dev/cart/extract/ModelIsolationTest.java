package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Where the per-model guarantee lives: the router and its tree know no model, but every key this module
 * makes starts with the model's marker, so a request's match only ever counts routes learned for the same
 * model. Checked end to end: the same conversation for two models, extracted and routed.
 */
class ModelIsolationTest {

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    /** Follows the longest holder; a miss goes to the least loaded. */
    private static final RoutingPolicy FOLLOW = new RoutingPolicy() {
        @Override
        public Choice choose(RoutingContext ctx) {
            for (Match.Holding h : ctx.match().holders()) {
                if (ctx.isCandidate(h.replica())) {
                    return new Choice(h.replica(), Reason.CACHE_HIT, h.matchedLength());
                }
            }
            return Choice.of(ctx.leastLoaded(), Reason.MISS);
        }

        @Override
        public String name() {
            return "follow";
        }
    };

    private RouteRequest request(String model) throws ExtractionException {
        String body = "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"system\",\"content\":\""
                + "You are a careful assistant. ".repeat(20) + "\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
        ExtractedRequest r = extractor.extract(Endpoint.CHAT_COMPLETIONS, body.getBytes(StandardCharsets.UTF_8));
        return RouteRequest.of(r.key()).withModel(r.model());
    }

    @Test
    void theSameConversationForAnotherModelMatchesNothingLearnedForTheFirst() throws Exception {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = Router.builder()
                .replicas(set)
                .policy(FOLLOW)
                .evictionInterval(Duration.ZERO)
                .build()) {
            RouteRequest base = request("llama-3-8b");
            assertTrue(base.key().blockCount() > 5);
            router.choose(base).lease().close();
            RouteDecision again = router.choose(request("llama-3-8b"));
            assertEquals(Reason.CACHE_HIT, again.reason());
            assertEquals(base.key().blockCount() * base.key().blockSize(), again.matchedLength());
            again.lease().close();
            RouteDecision adapter = router.choose(request("llama-3-8b-sql-lora"));
            assertEquals(Reason.MISS, adapter.reason());
            assertEquals(0, adapter.matchedLength(), "not one block of the other model's route counts");
            adapter.lease().close();
        }
    }
}
