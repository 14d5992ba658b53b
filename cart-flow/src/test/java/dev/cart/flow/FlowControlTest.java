package dev.cart.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import org.junit.jupiter.api.Test;

/** The admission queue's behaviour a host relies on, on virtual time with a real router. */
class FlowControlTest {

    private static final FlowConfig ON = FlowConfig.enabledDefaults();

    /** The ticket's result; fails (instead of waiting) when it is not completed yet. */
    static FlowResult done(FlowTicket t) {
        assertTrue(t.isDone(), "the ticket is completed");
        return t.join();
    }

    private static RouteRequest req() {
        return RouteRequest.empty();
    }

    private static FlowRequest of(int band, String tenant) {
        return new FlowRequest(band, tenant, 0, 100);
    }

    /** Fills every slot of the pool with requests admitted at once; returns them. */
    private static List<FlowResult> fill(Pool p, int slots) {
        List<FlowResult> out = new ArrayList<>();
        for (int i = 0; i < slots; i++) {
            FlowTicket t = p.flow.submit(req(), of(1, "filler"));
            assertTrue(t.isDone() && done(t).admitted(), "slot " + i + " admitted at once");
            out.add(done(t));
        }
        return out;
    }

    @Test
    void offByDefaultAFullPoolIsAnsweredAtOnceWithoutAReplica() {
        try (Pool p = new Pool(2, 1, FlowConfig.defaults())) {
            List<FlowResult> held = fill(p, 2);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            assertTrue(t.isDone());
            FlowResult r = done(t);
            assertFalse(r.admitted());
            assertEquals(Reason.NO_REPLICA, r.decision().reason());
            assertEquals(503, r.status());
            held.forEach(Pool::finish);
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aRequestWaitsAndGetsTheNextFreedSlot() {
        try (Pool p = new Pool(2, 1, ON)) {
            List<FlowResult> held = fill(p, 2);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            assertFalse(t.isDone(), "no room: it waits");
            assertEquals(1, p.flow.depth(null));
            assertEquals(1, p.flow.depth(null, 1));
            p.time.advanceMillis(30);
            Pool.finish(held.get(1));
            assertTrue(t.isDone());
            FlowResult r = done(t);
            assertTrue(r.admitted());
            assertSame(Pool.replicaOf(held.get(1)), r.decision().replica(), "the freed slot");
            assertEquals(30_000_000L, r.queuedNanos());
            assertEquals(0, p.flow.depth(null));
            Pool.finish(r);
            Pool.finish(held.get(0));
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void higherBandsGoFirstAndATenantsRequestsInArrivalOrder() {
        try (Pool p = new Pool(1, 1, ON)) {
            List<FlowResult> held = fill(p, 1);
            FlowTicket low1 = p.flow.submit(req(), of(2, "a"));
            FlowTicket low2 = p.flow.submit(req(), of(2, "a"));
            FlowTicket high = p.flow.submit(req(), of(0, "a"));
            Pool.finish(held.get(0));
            assertTrue(high.isDone() && !low1.isDone() && !low2.isDone(), "band 0 first");
            Pool.finish(done(high));
            assertTrue(low1.isDone() && !low2.isDone(), "then the earlier of band 2");
            Pool.finish(done(low1));
            Pool.finish(done(low2));
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aPoliteTenantIsServedBeforeAHeavyTenantsBacklog() {
        try (Pool p = new Pool(1, 1, ON)) {
            List<FlowResult> held = fill(p, 1);
            List<FlowTicket> heavy = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                heavy.add(p.flow.submit(req(), of(1, "heavy")));
            }
            // the heavy tenant is served twice, then the polite one arrives
            Pool.finish(held.get(0));
            Pool.finish(done(heavy.get(0)));
            Pool.finish(done(heavy.get(1)));
            FlowTicket polite = p.flow.submit(req(), of(1, "polite"));
            assertFalse(polite.isDone());
            Pool.finish(done(heavy.get(2)));
            assertTrue(polite.isDone(), "next slot to the tenant with the least work served");
            assertFalse(heavy.get(3).isDone());
            Pool.finish(done(polite));
            for (int i = 3; i < 6; i++) {
                Pool.finish(done(heavy.get(i)));
            }
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aTenantThatStartsWaitingIsLiftedToTheOthersLevelAndBanksNoCredit() {
        try (Pool p = new Pool(1, 1, ON)) {
            List<FlowResult> held = fill(p, 1);
            List<FlowTicket> a = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                a.add(p.flow.submit(req(), of(1, "a")));
            }
            Pool.finish(held.get(0));
            Pool.finish(done(a.get(0)));
            Pool.finish(done(a.get(1))); // a has had three slots while b did not wait: no credit for b
            FlowTicket b1 = p.flow.submit(req(), of(1, "b"));
            FlowTicket b2 = p.flow.submit(req(), of(1, "b"));
            FlowTicket b3 = p.flow.submit(req(), of(1, "b"));
            FlowTicket a5 = p.flow.submit(req(), of(1, "a"));
            List<FlowTicket> order = List.of(b1, a.get(3), b2, a5, b3);
            FlowResult current = done(a.get(2));
            for (FlowTicket next : order) {
                assertFalse(next.isDone());
                Pool.finish(current);
                current = done(next); // alternating from the same level: b is not served three times in a row
            }
            Pool.finish(current);
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aRequestThatWaitsPastItsDeadlineIsShedWith429() {
        try (Pool p = new Pool(1, 1, ON.withMaxWait(Duration.ofMillis(500)))) {
            List<FlowResult> held = fill(p, 1);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            p.time.advanceMillis(499);
            assertFalse(t.isDone());
            p.time.advanceMillis(1);
            FlowResult r = done(t);
            assertEquals(ShedReason.EXPIRED, r.shedReason());
            assertEquals(429, r.status());
            assertEquals(500_000_000L, r.queuedNanos());
            assertTrue(r.retryAfterSeconds() >= 1);
            assertNull(r.decision(), "a shed request has no lease");
            assertEquals(0, p.flow.depth(null));
            Pool.finish(held.get(0));
            assertEquals(0, p.inFlight());
            assertEquals(1, p.events.count("shed expired"));
        }
    }

    @Test
    void aRequestThatCannotMakeItsDeadlineIsShedAtOnce() {
        try (Pool p = new Pool(1, 1, ON)) {
            // teach the queue that a lease holds its slot 100 ms
            for (int i = 0; i < 3; i++) {
                FlowResult r = p.flow.submit(req(), of(1, "a")).join();
                p.time.advanceMillis(100);
                Pool.finish(r);
            }
            List<FlowResult> held = fill(p, 1);
            List<FlowTicket> waiting = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                waiting.add(p.flow.submit(req(), of(1, "a")));
            }
            // sixth in line for one slot of 100 ms: about 600 ms; a 300 ms deadline cannot be met
            FlowTicket late = p.flow.submit(req(), new FlowRequest(1, "a", 300, 100));
            assertTrue(late.isDone(), "shed at submission, not after the wait");
            assertEquals(ShedReason.DEADLINE, done(late).shedReason());
            assertEquals(0, done(late).queuedNanos());
            // another tenant's request is sooner in line (fair share): it may wait
            FlowTicket other = p.flow.submit(req(), new FlowRequest(1, "b", 300, 100));
            assertFalse(other.isDone(), "second in line for its band: about 200 ms");
            Pool.finish(held.get(0));
            assertTrue(other.isDone(), "b's first request goes before a's backlog");
            Pool.finish(done(other));
            for (FlowTicket w : waiting) {
                Pool.finish(done(w));
            }
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aFullQueueShedsTheNewcomerOrDisplacesALowerBand() {
        try (Pool p = new Pool(1, 1, ON.withMaxDepth(2))) {
            List<FlowResult> held = fill(p, 1);
            FlowTicket a1 = p.flow.submit(req(), of(2, "a"));
            FlowTicket a2 = p.flow.submit(req(), of(2, "a"));
            FlowTicket a3 = p.flow.submit(req(), of(2, "a"));
            assertEquals(ShedReason.QUEUE_FULL, done(a3).shedReason());
            FlowTicket high = p.flow.submit(req(), of(0, "a"));
            assertFalse(high.isDone());
            assertEquals(ShedReason.DISPLACED, done(a2).shedReason(), "the newest of the lower band makes room");
            assertFalse(a1.isDone());
            // a tenant with nothing waiting displaces the tenant with the longest line of its band
            FlowTicket b1 = p.flow.submit(req(), of(2, "b"));
            assertEquals(ShedReason.QUEUE_FULL, done(b1).shedReason(), "a's line (1) is not longer than b's + 1");
            Pool.finish(held.get(0));
            Pool.finish(done(high));
            Pool.finish(done(a1));
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aCancelledRequestLeavesTheQueueAtOnceAndNeverGetsALease() {
        try (Pool p = new Pool(1, 1, ON)) {
            List<FlowResult> held = fill(p, 1);
            FlowTicket gone = p.flow.submit(req(), of(1, "a"));
            FlowTicket next = p.flow.submit(req(), of(1, "a"));
            assertTrue(gone.cancel(true));
            assertEquals(1, p.flow.depth(null));
            assertThrows(CancellationException.class, gone::join);
            Pool.finish(held.get(0));
            assertTrue(done(next).admitted(), "the slot went to the next in line");
            assertEquals(1, p.inFlight());
            Pool.finish(done(next));
            assertEquals(0, p.inFlight());
            assertEquals(1, p.events.count("cancelled"));
            assertEquals(0, p.time.live() - liveRechecks(p), "its deadline timer was called off");
        }
    }

    /** The recheck timer stays while requests wait; with none waiting, at most the one scheduled. */
    private static long liveRechecks(Pool p) {
        return p.time.live();
    }

    @Test
    void aRequestBeingHandedASlotCannotBeCancelledAndCompletesAdmitted() {
        try (Pool p = new Pool(1, 1, ON)) {
            List<FlowResult> held = fill(p, 1);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            boolean[] cancelled = {true};
            p.duringChoice = c -> cancelled[0] = t.cancel(true); // the client goes away while the router chooses
            Pool.finish(held.get(0));
            p.duringChoice = c -> {};
            assertFalse(cancelled[0], "too late: cancel answers false");
            assertTrue(done(t).admitted(), "and the ticket completes admitted, for the host to close");
            Pool.finish(done(t));
            assertEquals(0, p.inFlight());
            assertEquals(0, p.events.count("cancelled"));
        }
    }

    @Test
    void aTicketFailedFromOutsideWhileBeingRoutedHasItsSlotGivenBackUnused() {
        try (Pool p = new Pool(1, 1, ON)) {
            List<FlowResult> held = fill(p, 1);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            p.duringChoice = c -> t.completeExceptionally(new IllegalStateException("gone"));
            Pool.finish(held.get(0));
            p.duringChoice = c -> {};
            assertTrue(t.isCompletedExceptionally());
            assertEquals(0, p.inFlight(), "the lease taken for it was closed");
            assertEquals(0, p.flow.depth(null));
        }
    }

    @Test
    void requestsWaitingWhenEveryReplicaDiesAreShedAsUnavailable() {
        try (Pool p = new Pool(2, 1, ON)) {
            List<FlowResult> held = fill(p, 2);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            for (int i = 0; i < 2; i++) {
                for (int k = 0; k < 3; k++) {
                    p.replica(i).recordProbe(false);
                }
            }
            // the dead replicas' requests fail
            for (FlowResult r : held) {
                r.decision().lease().failed();
                r.decision().lease().close();
            }
            assertFalse(t.isDone(), "one look is not enough: down on two looks a recheck apart");
            p.time.advanceMillis(200);
            assertEquals(ShedReason.UNAVAILABLE, done(t).shedReason());
            assertEquals(503, done(t).status());
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void aRequestWaitingForADeadReplicaGoesToAnother() {
        try (Pool p = new Pool(2, 1, ON)) {
            List<FlowResult> held = fill(p, 2);
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            for (int k = 0; k < 3; k++) {
                p.replica(0).recordProbe(false);
            }
            FlowResult onDead = held.stream()
                    .filter(r -> r.decision().replica() == p.replica(0))
                    .findFirst()
                    .orElseThrow();
            onDead.decision().lease().failed();
            onDead.decision().lease().close();
            assertFalse(t.isDone(), "the dead replica's slot is no room");
            FlowResult onLive = held.stream()
                    .filter(r -> r.decision().replica() == p.replica(1))
                    .findFirst()
                    .orElseThrow();
            Pool.finish(onLive);
            assertSame(p.replica(1), done(t).decision().replica());
            Pool.finish(done(t));
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void closingShedsEveryWaitingRequest() {
        Pool p = new Pool(1, 1, ON);
        List<FlowResult> held = fill(p, 1);
        FlowTicket t = p.flow.submit(req(), of(1, "a"));
        p.close();
        assertEquals(ShedReason.CLOSED, done(t).shedReason());
        assertEquals(ShedReason.CLOSED, p.flow.submit(req(), of(1, "a")).join().shedReason());
        Pool.finish(held.get(0));
        assertEquals(0, p.inFlight());
    }

    @Test
    void aTicketIsCompletedByFlowControlOnly() {
        try (Pool p = new Pool(1, 1, ON)) {
            FlowTicket t = p.flow.submit(req(), of(1, "a"));
            assertThrows(UnsupportedOperationException.class, () -> t.complete(null));
            Pool.finish(done(t));
        }
    }

    @Test
    void aModelNotServedIsAnsweredAt404AndQueuesNothing() {
        try (Pool p = new Pool(1, 1, ON, null, List.of("m"))) {
            FlowResult r = p.flow.submit(
                            RouteRequest.of(PromptKey.ofText("hello", 64)).withModel("nope"), of(1, "a"))
                    .join();
            assertEquals(404, r.status(), r.toString());
            assertNotNull(r.decision());
            assertEquals(0, p.flow.depth("nope"));
            assertTrue(p.flow.models().isEmpty(), "nothing was routed or queued");
        }
    }
}
