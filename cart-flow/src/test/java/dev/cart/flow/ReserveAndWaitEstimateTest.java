package dev.cart.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.RouteRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The reserve ({@code flow.reserve_ratio}): when free slots are down to it, band 0 and a tenant below its
 * share take a slot at once while a tenant above its share waits; and the expected wait of a newcomer,
 * taken from the gaps between freed slots while requests waited rather than from the mean lease time.
 */
class ReserveAndWaitEstimateTest {

    private static FlowResult admittedAtOnce(Pool p, int band, String tenant) {
        FlowTicket t = p.flow.submit(RouteRequest.empty(), new FlowRequest(band, tenant, 0, 100));
        assertTrue(t.isDone() && t.join().admitted(), tenant + " band " + band + " admitted at once");
        return t.join();
    }

    @Test
    void whenOnlyTheReserveIsFreeBandZeroAndALightTenantGetASlotAtOnceAndAHeavyTenantWaits() {
        // 20 slots, a tenth held back: 2
        try (Pool p = new Pool(1, 20, FlowConfig.enabledDefaults().withReserveRatio(0.1), Pool.first())) {
            List<FlowResult> heavy = new ArrayList<>();
            for (int i = 0; i < 18; i++) {
                heavy.add(admittedAtOnce(p, 1, "heavy"));
            }
            FlowTicket more = p.flow.submit(RouteRequest.empty(), new FlowRequest(1, "heavy", 0, 100));
            assertFalse(more.isDone(), "2 slots free, both reserved: the heavy tenant (all 18 others) waits");
            FlowResult light = admittedAtOnce(p, 1, "light");
            FlowResult urgent = admittedAtOnce(p, 0, "heavy");
            assertEquals(20, p.inFlight());
            Pool.finish(heavy.remove(0));
            Pool.finish(heavy.remove(0));
            assertFalse(more.isDone(), "2 free again: still the reserve");
            Pool.finish(heavy.remove(0));
            assertTrue(more.isDone() && more.join().admitted(), "3 free, one above the reserve: its turn");
            Pool.finish(more.join());
            Pool.finish(light);
            Pool.finish(urgent);
            heavy.forEach(Pool::finish);
            assertEquals(0, p.inFlight());
            assertEquals(0, p.flow.depth(null));
        }
    }

    @Test
    void withoutAReserveTheHeavyTenantTakesTheLastSlotsAndTheLightTenantWaits() {
        try (Pool p = new Pool(1, 20, FlowConfig.enabledDefaults().withReserveRatio(0), Pool.first())) {
            List<FlowResult> heavy = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                heavy.add(admittedAtOnce(p, 1, "heavy"));
            }
            FlowTicket light = p.flow.submit(RouteRequest.empty(), new FlowRequest(1, "light", 0, 100));
            assertFalse(light.isDone(), "every slot taken: the light tenant waits for one to free");
            Pool.finish(heavy.remove(0));
            assertTrue(light.isDone() && light.join().admitted());
            Pool.finish(light.join());
            heavy.forEach(Pool::finish);
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void tenantsHoldingTheirEvenShareWaitAlikeForTheReserve() {
        try (Pool p = new Pool(1, 20, FlowConfig.enabledDefaults().withReserveRatio(0.1), Pool.first())) {
            List<FlowResult> held = new ArrayList<>();
            for (int i = 0; i < 9; i++) {
                held.add(admittedAtOnce(p, 1, "a"));
                held.add(admittedAtOnce(p, 1, "b"));
            }
            // 18 held, 9 each: the even share of the 18 unreserved slots; neither takes the reserve
            FlowTicket a = p.flow.submit(RouteRequest.empty(), new FlowRequest(1, "a", 0, 100));
            FlowTicket b = p.flow.submit(RouteRequest.empty(), new FlowRequest(1, "b", 0, 100));
            assertFalse(a.isDone());
            assertFalse(b.isDone());
            held.add(admittedAtOnce(p, 1, "c")); // a third tenant holding nothing is below its share
            held.forEach(Pool::finish);
            assertTrue(a.isDone() && b.isDone());
            Pool.finish(a.join());
            Pool.finish(b.join());
            assertEquals(0, p.inFlight());
        }
    }

    @Test
    void theExpectedWaitFollowsTheGapsBetweenFreedSlotsNotTheMeanLeaseTime() {
        FlowConfig config = FlowConfig.enabledDefaults().withMaxWait(Duration.ofSeconds(60));
        try (Pool p = new Pool(1, 1, config)) {
            // unloaded, each lease held its slot a second: Little's law says a second per place in line
            for (int i = 0; i < 3; i++) {
                FlowResult r = admittedAtOnce(p, 1, "a");
                p.time.advanceMillis(1000);
                Pool.finish(r);
            }
            FlowResult current = admittedAtOnce(p, 1, "a");
            List<FlowTicket> waiting = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                waiting.add(p.flow.submit(RouteRequest.empty(), new FlowRequest(1, "a", 0, 100)));
            }
            // under load a slot frees every 50 ms
            for (int i = 0; i < 10; i++) {
                p.time.advanceMillis(50);
                Pool.finish(current);
                current = waiting.get(i).join();
            }
            // third in line: about 150 ms by the gaps (Little's law on the lease times: about 1.9 s)
            FlowTicket t = p.flow.submit(RouteRequest.empty(), new FlowRequest(1, "a", 1000, 100));
            assertFalse(t.isDone(), "queued: its deadline of a second can be met");
            Pool.finish(current);
            Pool.finish(waiting.get(10).join());
            Pool.finish(waiting.get(11).join());
            Pool.finish(t.join());
            assertEquals(0, p.inFlight());
        }
    }
}
