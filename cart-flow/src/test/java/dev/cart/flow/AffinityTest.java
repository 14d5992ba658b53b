package dev.cart.flow;

import static dev.cart.flow.FlowControlTest.done;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteRequest;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Cache affinity inside the queue: a waiting request holds out for the replica holding its prefix for a
 * bounded extra wait, then takes any; a hot prefix whose holders are saturated is spread at once, up to a
 * number of holders.
 */
class AffinityTest {

    private static final PromptKey P = PromptKey.ofText("p".repeat(2048), 64);
    private static final FlowRequest F = new FlowRequest(1, "a", 0, 100);

    /** The pool's 4 slots (2 replicas, 2 each) full; the first request holds P. */
    private static List<FlowResult> fullWithHolder(Pool p) {
        List<FlowResult> held = new ArrayList<>();
        held.add(done(p.flow.submit(RouteRequest.of(P), F)));
        for (int i = 0; i < 3; i++) {
            held.add(done(p.flow.submit(RouteRequest.empty(), F)));
        }
        assertEquals(4, p.inFlight());
        return held;
    }

    private static FlowResult on(List<FlowResult> held, Replica r) {
        for (FlowResult x : held) {
            if (x.decision().replica() == r && !x.decision().lease().isClosed()) {
                return x;
            }
        }
        throw new AssertionError("nothing held on " + r.id());
    }

    @Test
    void aWaitingRequestTakesItsHolderWhenItFreesNotAnotherReplicaFirst() {
        try (Pool p = new Pool(2, 2, FlowConfig.enabledDefaults())) {
            List<FlowResult> held = fullWithHolder(p);
            Replica holder = held.get(0).decision().replica();
            Replica other = holder == p.replica(0) ? p.replica(1) : p.replica(0);
            FlowTicket t = p.flow.submit(RouteRequest.of(P), F);
            Pool.finish(on(held, other));
            assertFalse(t.isDone(), "within the affinity window it does not take the other replica");
            p.time.advanceMillis(20);
            Pool.finish(on(held, holder));
            FlowResult r = done(t);
            assertSame(holder, r.decision().replica());
            assertEquals(Reason.CACHE_HIT, r.decision().reason());
            held.forEach(x -> x.decision().lease().close());
            r.decision().lease().close();
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void afterTheAffinityWaitItTakesTheReplicaWithRoom() {
        try (Pool p = new Pool(2, 2, FlowConfig.enabledDefaults())) {
            List<FlowResult> held = fullWithHolder(p);
            Replica holder = held.get(0).decision().replica();
            Replica other = holder == p.replica(0) ? p.replica(1) : p.replica(0);
            FlowTicket t = p.flow.submit(RouteRequest.of(P), F);
            p.time.advanceMillis(500); // waiting long, with no room anywhere: the window has not started
            Pool.finish(on(held, other));
            assertFalse(t.isDone());
            p.time.advanceMillis(49);
            assertFalse(t.isDone());
            p.time.advanceMillis(1);
            FlowResult r = done(t);
            assertSame(other, r.decision().replica(), "50 ms after the other replica had room");
            assertEquals(50_000_000L + 500_000_000L, r.queuedNanos());
            held.forEach(x -> x.decision().lease().close());
            r.decision().lease().close();
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void withAffinityOffTheFirstFreeReplicaTakesIt() {
        FlowConfig off = FlowConfig.enabledDefaults().withAffinity(Duration.ZERO, 4, 3);
        try (Pool p = new Pool(2, 2, off)) {
            List<FlowResult> held = fullWithHolder(p);
            Replica holder = held.get(0).decision().replica();
            Replica other = holder == p.replica(0) ? p.replica(1) : p.replica(0);
            FlowTicket t = p.flow.submit(RouteRequest.of(P), F);
            Pool.finish(on(held, other));
            assertSame(other, done(t).decision().replica());
            held.forEach(x -> x.decision().lease().close());
            done(t).decision().lease().close();
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aHotPrefixWhoseHolderIsSaturatedIsSpreadAtOnce() {
        FlowConfig hot = FlowConfig.enabledDefaults().withAffinity(Duration.ofMillis(50), 2, 2);
        try (Pool p = new Pool(2, 2, hot)) {
            List<FlowResult> held = fullWithHolder(p);
            Replica holder = held.get(0).decision().replica();
            Replica other = holder == p.replica(0) ? p.replica(1) : p.replica(0);
            List<FlowTicket> line = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                line.add(p.flow.submit(RouteRequest.of(P), F));
            }
            // three wait for one holder (more than hot_spot_depth 2): the first takes the other replica at once
            Pool.finish(on(held, other));
            FlowResult spread = done(line.get(0));
            assertSame(other, spread.decision().replica());
            assertEquals(2, p.router.prefixHolders(P).holders().size(), "the prefix has a second holder now");
            // now it has 2 holders (hot_spot_max_holders): the others wait for one of them, not a third
            Pool.finish(on(held, other));
            assertSame(other, done(line.get(1)).decision().replica(), "the new holder had room: a hit");
            assertEquals(Reason.CACHE_HIT, done(line.get(1)).decision().reason());
            held.forEach(x -> x.decision().lease().close());
            spread.decision().lease().close();
            done(line.get(1)).decision().lease().close();
            assertTrue(line.get(2).isDone());
            done(line.get(2)).decision().lease().close();
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aRequestWhoseHolderDiesTakesAnotherReplicaAtOnce() {
        try (Pool p = new Pool(2, 2, FlowConfig.enabledDefaults())) {
            List<FlowResult> held = fullWithHolder(p);
            Replica holder = held.get(0).decision().replica();
            Replica other = holder == p.replica(0) ? p.replica(1) : p.replica(0);
            FlowTicket t = p.flow.submit(RouteRequest.of(P), F);
            dev.cart.core.ManagedReplicaSet.Member h = (dev.cart.core.ManagedReplicaSet.Member) holder;
            for (int i = 0; i < 3; i++) {
                h.recordProbe(false);
            }
            FlowResult failed = on(held, holder);
            failed.decision().lease().failed();
            failed.decision().lease().close(); // the holder is below its cap and down: it frees nothing more
            Pool.finish(on(held, other));
            FlowResult r = done(t);
            assertNotSame(holder, r.decision().replica());
            held.forEach(x -> x.decision().lease().close());
            r.decision().lease().close();
            assertEquals(0, p.inFlight());
        }
    }
}
