package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.spi.Choice;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The policy's lease observations: timed on the router's ticker, once each, never breaking a lease. */
class PolicyObservationTest {

    /** Least loaded with a detail; records what it observes, and throws from both hooks if told to. */
    static final class Observing implements RoutingPolicy {
        final List<String> seen = new ArrayList<>();
        final boolean fail;

        Observing(boolean fail) {
            this.fail = fail;
        }

        @Override
        public Choice choose(RoutingContext ctx) {
            return new Choice(
                    ctx.leastLoaded(), Reason.POLICY, 0, "detail-" + ctx.key().length());
        }

        @Override
        public void onFirstToken(RouteDecision d, long nanos) {
            seen.add("first " + d.detail() + " " + nanos);
            if (fail) {
                throw new IllegalStateException("boom");
            }
        }

        @Override
        public void onLeaseClosed(RouteDecision d, Outcome outcome, boolean firstToken, long nanos) {
            seen.add("closed " + d.detail() + " " + outcome + " " + firstToken + " " + nanos);
            if (fail) {
                throw new IllegalStateException("boom");
            }
        }

        @Override
        public String name() {
            return "observing";
        }
    }

    static Router router(ReplicaSet set, RoutingPolicy p, AtomicLong now, List<LeaseCompletion> done) {
        return Router.builder()
                .replicas(set)
                .policy(p)
                .ticker(now::get)
                .evictionInterval(Duration.ZERO)
                .listener(new RoutingListener() {
                    @Override
                    public void onLeaseCompleted(LeaseCompletion c) {
                        done.add(c);
                    }
                })
                .build();
    }

    @Test
    void observationsCarryTheDetailAndTheTickersElapsedTime() {
        Observing p = new Observing(false);
        AtomicLong now = new AtomicLong(1_000);
        List<LeaseCompletion> done = new ArrayList<>();
        try (Router r = router(ReplicaSets.MANAGED.of("a"), p, now, done)) {
            RouteDecision d = r.choose(RouteRequest.of(PromptKey.ofText("x".repeat(100), 64)));
            assertEquals("detail-100", d.detail());
            now.addAndGet(250);
            d.lease().firstToken();
            d.lease().firstToken(); // once
            now.addAndGet(750);
            d.lease().succeeded();
            d.lease().close();
            d.lease().close(); // once
            RouteDecision cancelled = r.choose(RouteRequest.of(PromptKey.ofText("y", 64)));
            now.addAndGet(5);
            cancelled.lease().close();
        }
        assertEquals(
                List.of(
                        "first detail-100 250",
                        "closed detail-100 SUCCESS true 1000",
                        "closed detail-1 CANCELLED false 5"),
                p.seen);
        assertEquals(1000, done.get(0).durationNanos(), "lease durations are on the same ticker");
    }

    @Test
    void aThrowingObservationNeverBreaksALease() {
        Observing p = new Observing(true);
        AtomicLong now = new AtomicLong();
        List<LeaseCompletion> done = new ArrayList<>();
        ReplicaSet set = ReplicaSets.MANAGED.of("a");
        try (Router r = router(set, p, now, done)) {
            for (int i = 0; i < 3; i++) {
                RouteDecision d = r.choose(RouteRequest.of(PromptKey.ofText("x".repeat(100), 64)));
                d.lease().firstToken();
                d.lease().succeeded();
                d.lease().close();
            }
            assertEquals(0L, r.pendingPrefill(set.replicas().get(0)));
        }
        assertEquals(6, p.seen.size());
        assertEquals(3, done.size(), "the listener heard every close");
        assertEquals(0, ReplicaSets.totalInFlight(set), "every slot released");
    }
}
