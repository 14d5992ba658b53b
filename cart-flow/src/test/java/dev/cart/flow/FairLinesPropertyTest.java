package dev.cart.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.RouteRequest;
import dev.cart.core.spi.Replica;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The queue's order against a naive model, over random sequences of arrivals, cancellations and hand-outs:
 * no request handed out twice or lost, bands strictly respected, first come first served within a tenant,
 * and the lines' bookkeeping intact after every step; and fair shares within one request's cost.
 */
class FairLinesPropertyTest {

    private static final int BANDS = 3;
    private static final String[] TENANTS = {"a", "b", "c", "d"};

    /** One step: 0-5 an arrival (band, tenant, cost from the ints), 6 a cancellation, 7-9 a hand-out. */
    record Step(int kind, int x, int y) {}

    private static Waiting waiting(int band, String tenant, long cost) {
        return new Waiting(
                null, RouteRequest.empty(), new FlowRequest(band, tenant, 0, cost), band, 0, 0, new Replica[0]);
    }

    @Test
    void noRequestLostOrHandedOutTwiceBandsFirstAndArrivalOrderWithinATenant() {
        qt().withFixedSeed(11L)
                .withExamples(400)
                .forAll(lists().of(integers()
                                .between(0, 9)
                                .zip(integers().between(0, 1000), integers().between(1, 50), Step::new))
                        .ofSizeBetween(1, 120))
                .checkAssert(steps -> {
                    FairLines lines = new FairLines(BANDS, 1000);
                    List<Waiting> model = new ArrayList<>(); // in arrival order
                    Map<Waiting, Integer> order = new IdentityHashMap<>();
                    Set<Waiting> out = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
                    int added = 0;
                    for (Step s : steps) {
                        if (s.kind() <= 5) {
                            Waiting w = waiting(s.x() % BANDS, TENANTS[s.x() % TENANTS.length], s.y());
                            order.put(w, added++);
                            lines.add(w);
                            model.add(w);
                        } else if (s.kind() == 6) {
                            if (!model.isEmpty()) {
                                Waiting w = model.remove(s.x() % model.size());
                                lines.remove(w);
                                assertTrue(out.add(w));
                            }
                        } else {
                            Waiting w = lines.first(x -> true);
                            if (model.isEmpty()) {
                                assertEquals(null, w);
                                continue;
                            }
                            assertNotNull(w);
                            assertTrue(model.contains(w), "handed out a request that was not waiting");
                            int minBand =
                                    model.stream().mapToInt(x -> x.band).min().orElseThrow();
                            assertEquals(minBand, w.band, "a higher band waited");
                            for (Waiting x : model) {
                                if (x.band == w.band && x.flow.tenant().equals(w.flow.tenant())) {
                                    assertFalse(order.get(x) < order.get(w), "an earlier request of its tenant waited");
                                }
                            }
                            lines.remove(w);
                            lines.charge(w);
                            model.remove(w);
                            assertTrue(out.add(w), "handed out twice");
                        }
                        lines.check();
                        assertEquals(model.size(), lines.size());
                    }
                    // drain: everything comes out exactly once
                    for (Waiting w; (w = lines.first(x -> true)) != null; ) {
                        lines.remove(w);
                        assertTrue(model.remove(w));
                        assertTrue(out.add(w));
                    }
                    assertTrue(model.isEmpty());
                    assertEquals(added, out.size(), "every arrival left exactly once");
                    lines.check();
                });
    }

    @Test
    void backloggedTenantsGetSharesOfWorkWithinOneRequestsCost() {
        qt().withFixedSeed(12L)
                .withExamples(300)
                .forAll(
                        lists().of(integers().between(1, 40)).ofSizeBetween(2, 200),
                        integers().between(2, 4),
                        integers().between(0, 30))
                .checkAssert((costs, tenants, lateStart) -> {
                    FairLines lines = new FairLines(1, 10_000);
                    Map<String, Long> served = new HashMap<>();
                    int i = 0;
                    // every tenant keeps two requests waiting; the last tenant starts after lateStart hand-outs
                    for (int t = 0; t < tenants - 1; t++) {
                        for (int k = 0; k < 2; k++) {
                            lines.add(waiting(0, TENANTS[t], costs.get(i++ % costs.size())));
                        }
                    }
                    Set<String> started = new HashSet<>();
                    for (int n = 0; n < 400; n++) {
                        if (n == lateStart) {
                            for (int k = 0; k < 2; k++) {
                                lines.add(waiting(0, TENANTS[tenants - 1], costs.get(i++ % costs.size())));
                            }
                        }
                        Waiting w = lines.first(x -> true);
                        lines.remove(w);
                        lines.charge(w);
                        String t = w.flow.tenant();
                        started.add(t);
                        served.merge(t, w.flow.cost(), Long::sum);
                        lines.add(waiting(0, t, costs.get(i++ % costs.size()))); // it stays backlogged
                        lines.check();
                    }
                    // since the last tenant started, the work each got differs by at most one request's cost:
                    // compare the work served after that point
                    long max =
                            costs.stream().mapToLong(Integer::longValue).max().orElseThrow();
                    assertEquals(tenants, started.size());
                    for (int a = 0; a < tenants - 1; a++) {
                        for (int b = 0; b < tenants - 1; b++) {
                            long d = served.get(TENANTS[a]) - served.get(TENANTS[b]);
                            assertTrue(d <= 2 * max, "tenants backlogged alike differ by " + d + " > 2 x " + max);
                        }
                    }
                    long late = served.get(TENANTS[tenants - 1]);
                    for (int t = 0; t < tenants - 1; t++) {
                        long early = served.get(TENANTS[t]);
                        // the early tenants also had the work before the late one started; it was lifted to
                        // their level, so from then on each got the same share, within 2 costs (the lift
                        // goes to the least counter, a tenant may be ahead by one)
                        assertTrue(early - late <= lateStart * max + 2 * max, "early " + early + " late " + late);
                        assertTrue(late - early <= 2 * max, "the late tenant banked credit: " + late + " vs " + early);
                    }
                });
    }
}
