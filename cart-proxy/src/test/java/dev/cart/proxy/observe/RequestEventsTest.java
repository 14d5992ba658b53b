package dev.cart.proxy.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.CacheFeedback;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import dev.cart.policy.Policies;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A request's metric events carried by its record (one writer entry at its end) count exactly as the same events
 * handed over one by one: each once, none lost, whether it came before the record's end, after it, from the
 * router's listener while the record closes its lease, or about a decision the record does not hold.
 */
class RequestEventsTest {

    private static final String PROMPT = "You are a careful assistant who answers in one line. ".repeat(8);
    private static final String CHAT = "/v1/chat/completions";

    /** What the router told its listener, in order: each lease's end and each usage verdict. */
    private final List<LeaseCompletion> completions = new ArrayList<>();

    private final List<Object[]> verdicts = new ArrayList<>();

    private static Router router(RoutingListener listener) {
        ManagedReplicaSet pool = ManagedReplicaSet.builder()
                .add(new ReplicaSpec("http://127.0.0.1:8001", 64, 0))
                .add(new ReplicaSpec("http://127.0.0.1:8002", 64, 0))
                .build();
        return Router.builder()
                .replicas(pool)
                .policy(Policies.roundRobin())
                .listener(listener)
                .build();
    }

    /** The request-path series of a scrape (every {@code cart_} line), as a sorted set of lines. */
    private static Set<String> cartSeries(ProxyMetrics m) {
        Set<String> lines = new TreeSet<>();
        for (String line : m.scrape().split("\n")) {
            if (line.startsWith("cart_")) {
                lines.add(line);
            }
        }
        return lines;
    }

    private static double sum(Set<String> series, String name) {
        double total = 0;
        for (String line : series) {
            if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }

    @Test
    void eventsCarriedByRecordsCountAsTheSameEventsHandedOverOneByOne() {
        try (ProxyMetrics carried = new ProxyMetrics(() -> null, 64, new DecisionWindow());
                ProxyMetrics alone = new ProxyMetrics(() -> null, 64, new DecisionWindow())) {
            Router router = router(new RoutingListener() {
                @Override
                public void onLeaseCompleted(LeaseCompletion c) {
                    completions.add(c);
                    carried.leaseCompleted(c);
                }

                @Override
                public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                    verdicts.add(new Object[] {d, f});
                    carried.cacheFeedback(d, f);
                }
            });
            RouteRequest chat = RouteRequest.of(PromptKey.ofText(PROMPT, 64));

            // a routed request: a failed attempt, a retry that succeeds with a usage report, its answer learned
            DecisionLog first = new DecisionLog(false, CHAT, "POST");
            RouteDecision d1 = router.choose(chat);
            carried.decision(first, d1, false);
            d1.lease().failed();
            d1.lease().status(502);
            first.close(d1.lease());
            RouteDecision d2 = router.choose(chat.excluding(d1.replica()).attempt(1));
            carried.decision(first, d2, false);
            first.decision(d2, false); // the line's (the last attempt's), as the forwarder keeps it
            carried.firstByte(first, d2.replica().id(), 2_000_000);
            d2.lease().status(200);
            CacheFeedback f = first.succeeded(d2.lease(), new ServedUsage(250, 100));
            first.close(d2.lease());
            carried.answerLearned(first, "learned");
            // inside the record's scope, a lease of a decision the record does not hold: counted on its own
            RouteDecision stranger = router.choose(RouteRequest.empty());
            carried.decision(null, stranger, true);
            first.close(stranger.lease());
            carried.finished(first, CHAT, 200, 5_000_000);
            assertTrue(first.handedOver());
            // after the end: refused by the record, counted on their own
            carried.answerLearned(first, "stale_route");
            carried.firstByte(first, d2.replica().id(), 3_000_000);

            // a pass-through request whose lease closes outside any record's scope
            DecisionLog second = new DecisionLog(false, "/v1/embeddings", "POST");
            RouteDecision d3 = router.choose(RouteRequest.empty());
            carried.decision(second, d3, true);
            second.decision(d3, true);
            d3.lease().close();
            carried.finished(second, "/v1/embeddings", 502, 1_000_000);
            // a request without a record
            carried.request("/health", 200, null, 1_000);

            assertEquals(4, completions.size(), "each lease closed once");
            assertEquals(1, verdicts.size(), "the usage was compared");
            assertSame(f, verdicts.get(0)[1]);
            assertNull(RequestEvents.current(), "no record is current outside its calls");

            // the same events, one by one
            alone.decision(null, d1, false);
            alone.decision(null, d2, false);
            alone.decision(null, stranger, true);
            alone.decision(null, d3, true);
            for (LeaseCompletion c : completions) {
                alone.leaseCompleted(c);
            }
            alone.firstByte(null, d2.replica().id(), 2_000_000);
            alone.firstByte(null, d2.replica().id(), 3_000_000);
            alone.cacheFeedback((RouteDecision) verdicts.get(0)[0], (CacheFeedback) verdicts.get(0)[1]);
            alone.answerLearned(null, "learned");
            alone.answerLearned(null, "stale_route");
            alone.request(CHAT, 200, d2.replica().id(), 5_000_000);
            alone.request("/v1/embeddings", 502, d3.replica().id(), 1_000_000);
            alone.request("/health", 200, null, 1_000);

            Set<String> c = cartSeries(carried);
            Set<String> a = cartSeries(alone);
            assertEquals(3, sum(a, "cart_requests_total"), String.join("\n", a));
            assertEquals(4, sum(a, "cart_decisions_total"));
            assertEquals(4, sum(a, "cart_upstream_requests_total"));
            assertEquals(2, sum(a, "cart_upstream_first_byte_seconds_count"));
            assertEquals(1, sum(a, "cart_cache_feedback_total"));
            assertEquals(2, sum(a, "cart_learned_answers_total"));
            assertEquals(a, c);
        }
    }

    @Test
    void aRecordTakesNoEventOnceHandedOverAndOnlyItsOwnDecisionsEnds() {
        Router router = router(new RoutingListener() {});
        DecisionLog record = new DecisionLog(false, CHAT, "POST");
        RouteDecision mine = router.choose(RouteRequest.of(PromptKey.ofText(PROMPT, 64)));
        RouteDecision other = router.choose(RouteRequest.empty());
        assertTrue(record.decided(mine, false));
        LeaseCompletion ofOther = new LeaseCompletion(other, dev.cart.core.Outcome.CANCELLED, 0, 1, 0);
        assertFalse(record.completed(ofOther), "another request's attempt");
        assertTrue(record.completed(new LeaseCompletion(mine, dev.cart.core.Outcome.SUCCESS, 200, 1, 0)));
        assertTrue(record.firstByte("r", 1));
        assertFalse(record.firstByte("r", 2), "one first byte per record; a second goes on its own");
        record.handOver();
        assertFalse(record.decided(other, true));
        assertFalse(record.learned("learned"));
        mine.lease().close();
        other.lease().close();
    }
}
