package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.ServedUsage;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.client.DefaultServiceInstance;

/** The DEBUG decision log: a line per decision and per usage verdict, with what a diagnosis needs and no prompt. */
class DecisionLogTest {

    @Test
    void decisionsAndVerdictsAreLoggedWithoutPromptText() {
        Logger log = (Logger) LoggerFactory.getLogger("dev.cart.gateway.decisions");
        Level before = log.getLevel();
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        log.addAppender(lines);
        log.setLevel(Level.DEBUG);
        CartProperties p = new CartProperties();
        p.setServices(List.of("llm"));
        p.setEvictionIntervalSecs(0);
        try (CartGatewayRouting routing = new CartGatewayRouting(p, new SimpleMeterRegistry())) {
            ServiceRouting service = routing.service("llm");
            service.replicas()
                    .update(List.of(
                            new DefaultServiceInstance("a", "llm", "10.0.0.1", 8000, false, Map.of()),
                            new DefaultServiceInstance("b", "llm", "10.0.0.2", 8000, false, Map.of())));
            String secret = "the-secret-word-".repeat(200); // 3,200 characters: 50 blocks
            RouteDecision d = service.router().choose(RouteRequest.of(PromptKey.ofText(secret, p.getBlockChars())));
            d.lease().succeeded(new ServedUsage(800, 0));
            d.lease().close();
            RouteDecision again = service.router().choose(RouteRequest.of(PromptKey.ofText(secret, p.getBlockChars())));
            again.lease().succeeded(new ServedUsage(800, 0)); // predicted the whole prompt, delivered nothing
            again.lease().close();

            List<String> messages =
                    lines.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
            assertEquals(4, messages.size(), messages.toString());
            assertTrue(
                    messages.get(0).startsWith("decision ") && messages.get(0).contains("reason=miss"),
                    messages.get(0));
            assertTrue(messages.get(0).contains("replica=" + d.replica().id()), messages.get(0));
            assertTrue(messages.get(0).contains("length=3200"), messages.get(0));
            assertTrue(messages.get(2).contains("reason=cache_hit")
                    && messages.get(2).contains("matched=3200"));
            assertTrue(
                    messages.get(3).startsWith("feedback ") && messages.get(3).contains("stale=true"), messages.get(3));
            assertTrue(messages.get(3).contains("delivered=0"), messages.get(3));
            for (String m : messages) {
                assertFalse(m.contains("secret"), "no prompt text in " + m);
            }
        } finally {
            log.detachAppender(lines);
            log.setLevel(before);
        }
    }
}
