package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.testing.HostReplicaSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * CART's circuit breaker as a host uses it: its public API directly, and through the router in a replica
 * the host wrote ({@link HostReplicaSet}): it opens after the failures, half-opens after the timeout and
 * closes after the trials, and the host hears each transition.
 */
class CircuitBreakerTest {

    private static final PromptKey KEY = PromptKey.ofText("a system prompt ".repeat(20), 64);
    private static final CircuitBreaker.Config CONFIG = new CircuitBreaker.Config(3, 2, Duration.ofSeconds(10), 1);

    private final MutableClock clock = new MutableClock();

    @Test
    void aHostWrittenReplicaOpensHalfOpensAndClosesThroughTheRouter() {
        HostReplicaSet set = new HostReplicaSet(List.of(ReplicaSpec.of("a")), CONFIG, clock);
        HostReplicaSet.Node a = set.replicas().get(0);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .build()) {
            for (int i = 0; i < 3; i++) {
                assertEquals(CircuitBreaker.State.CLOSED, a.circuitState(), "failure " + i);
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                d.lease().failed();
                d.lease().close();
            }
            assertEquals(CircuitBreaker.State.OPEN, a.circuitState(), "opens after three failures");
            assertEquals(Reason.NO_REPLICA, router.choose(RouteRequest.of(KEY)).reason());

            clock.advance(Duration.ofSeconds(9));
            assertEquals(Reason.NO_REPLICA, router.choose(RouteRequest.of(KEY)).reason(), "open for the timeout");
            clock.advance(Duration.ofSeconds(1));
            assertEquals(CircuitBreaker.State.HALF_OPEN, a.circuitState(), "half-opens after the timeout");

            for (int trial = 0; trial < 2; trial++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                assertTrue(d.routed(), "trial " + trial);
                assertEquals(
                        Reason.NO_REPLICA, router.choose(RouteRequest.of(KEY)).reason(), "one trial at a time");
                assertEquals(CircuitBreaker.State.HALF_OPEN, a.circuitState());
                d.lease().succeeded();
                d.lease().close();
            }
            assertEquals(CircuitBreaker.State.CLOSED, a.circuitState(), "closes after two successful trials");
            assertEquals(List.of("closed->open", "open->half_open", "half_open->closed"), a.transitions());
            for (int i = 0; i < 3; i++) {
                RouteDecision d = router.choose(RouteRequest.of(KEY));
                assertTrue(d.routed());
                d.lease().close();
            }
            assertEquals(0, a.inFlight());
        }
    }

    @Test
    void thePublicApiAdmitsRecordsAndCancels() {
        List<String> heard = new ArrayList<>();
        CircuitBreaker b = CircuitBreaker.builder()
                .config(CONFIG)
                .clock(clock)
                .listener((from, to) -> heard.add(from + "->" + to))
                .build();
        assertEquals(CONFIG, b.config());
        CircuitBreaker.Permit old = b.tryAcquire(); // admitted while closed; ends after the circuit opened
        for (int i = 0; i < 3; i++) {
            CircuitBreaker.Permit p = b.tryAcquire();
            assertNotNull(p);
            p.record(Outcome.FAILURE);
        }
        assertFalse(b.wouldAdmit());
        assertNull(b.tryAcquire(), "open: refused");
        clock.advance(Duration.ofSeconds(10));
        assertTrue(b.wouldAdmit());
        CircuitBreaker.Permit trial = b.tryAcquire();
        assertNotNull(trial);
        assertFalse(b.wouldAdmit(), "the one trial slot is taken");
        assertNull(b.tryAcquire());
        old.record(Outcome.FAILURE);
        assertEquals(CircuitBreaker.State.HALF_OPEN, b.state(), "an outcome from before the opening is ignored");
        trial.cancel();
        assertTrue(b.wouldAdmit(), "a cancelled permit frees its trial slot");
        CircuitBreaker.Permit again = b.tryAcquire();
        again.record(Outcome.FAILURE);
        assertEquals(CircuitBreaker.State.OPEN, b.state(), "a failed trial reopens it");
        assertEquals(List.of("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->OPEN"), heard);
    }
}
