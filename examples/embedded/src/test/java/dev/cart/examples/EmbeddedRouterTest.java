package dev.cart.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Router;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.PromptExtractor;
import dev.cart.policy.Policies;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The README's handler: a repeated prompt sticks, a bad body is a 400, every slot comes back. */
class EmbeddedRouterTest {

    @Test
    void theReadmeHandlerRoutesReportsAndReleases() {
        ManagedReplicaSet pool =
                ManagedReplicaSet.builder().add("http://a").add("http://b").build();
        PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\""
                + "the same long question, ".repeat(20) + "\"}]}";
        try (Router router = Router.builder()
                .replicas(pool)
                .policy(Policies.cacheAware())
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(true)
                .build()) {
            String first = EmbeddedRouter.handle(router, extractor, body.getBytes(StandardCharsets.UTF_8));
            String again = EmbeddedRouter.handle(router, extractor, body.getBytes(StandardCharsets.UTF_8));
            assertTrue(first.startsWith("miss "), first);
            assertTrue(again.startsWith("cache_hit "), again);
            assertEquals(
                    first.substring(first.indexOf("->"), first.indexOf("matched")),
                    again.substring(again.indexOf("->"), again.indexOf("matched")),
                    "the same replica");
            String bad = EmbeddedRouter.handle(router, extractor, "{\"messages\":1}".getBytes(StandardCharsets.UTF_8));
            assertTrue(bad.startsWith("400 "), bad);
            assertEquals(0, pool.totalInFlight());
            assertEquals(
                    0,
                    router.pendingPrefill(pool.replicas().get(0))
                            + router.pendingPrefill(pool.replicas().get(1)));
        }
    }
}
