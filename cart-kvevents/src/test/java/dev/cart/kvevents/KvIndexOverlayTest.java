package dev.cart.kvevents;

import static dev.cart.kvevents.TestBatches.concat;
import static dev.cart.kvevents.TestBatches.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The overlay (the blocks a request just routed to a replica will create there) and what an engine reset does
 * to it: a routed request's prompt counts as held by its replica until its lease ends and the overlay's time
 * passes; a restart or {@code AllBlocksCleared} drops the replica's records at once and tells the host, a reset
 * for lost events does neither.
 */
class KvIndexOverlayTest {

    private final AtomicLong now = new AtomicLong(1_000);
    private final List<String> resets = new CopyOnWriteArrayList<>();
    private final KvIndex index = KvIndex.builder()
            .ticker(now::get)
            // the batches' engine time (1 s after the epoch) is the host's: no lag raises the overlay's time
            .clock(java.time.Clock.fixed(java.time.Instant.ofEpochSecond(1), java.time.ZoneOffset.UTC))
            .overlayTtl(Duration.ofMillis(500))
            .onEngineReset(resets::add)
            .build();
    private final Router router = Router.builder()
            .replicas(ManagedReplicaSet.builder().add("a").add("b").build())
            .policy(new First())
            .listener(index.leaseListener())
            .evictionInterval(Duration.ZERO)
            .build();

    @AfterEach
    void close() {
        router.close();
    }

    /** Always the first candidate. */
    private static final class First implements RoutingPolicy {
        @Override
        public Choice choose(RoutingContext ctx) {
            return Choice.of(ctx.candidates().get(0), Reason.POLICY);
        }

        @Override
        public String name() {
            return "first";
        }
    }

    private KvFeed stream(String replica) {
        KvFeed f = index.feed(KvStream.of(replica, "tcp://unused:1", null, "m"), null);
        f.start();
        return f;
    }

    private static int[] prompt(int[]... blocks) {
        return concat(concat(blocks), new int[] {7});
    }

    private RouteDecision routeToA(PreciseMatch m) {
        RouteDecision d = router.choose(RouteRequest.empty());
        assertEquals("a", d.replica().id());
        index.routed(d, m);
        return d;
    }

    @Test
    void aRoutedRequestCountsAsHeldUntilItsLeaseEndsAndTheOverlaysTime() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1), b1 = tokens(200, 1), b2 = tokens(300, 1);
        a.live(0, TestBatches.positional().stored(new long[] {1}, null, b0).build(1));
        RouteDecision d = routeToA(index.lookup(prompt(b0, b1, b2), "m", null));
        PreciseMatch later = index.lookup(prompt(b0, b1, tokens(999, 1)), "m", null);
        assertEquals(16, later.confirmedTokens("a"));
        assertEquals(32, later.heldTokens("a")); // the common prefix with the routed prompt
        assertEquals(0, later.heldTokens("b"));
        assertEquals(0, index.lookup(prompt(b0, b1), "other", null).heldTokens("a")); // another model's chain
        d.lease().close();
        now.addAndGet(Duration.ofMillis(400).toNanos());
        assertEquals(48, index.lookup(prompt(b0, b1, b2), "m", null).heldTokens("a"));
        now.addAndGet(Duration.ofMillis(200).toNanos());
        assertEquals(16, index.lookup(prompt(b0, b1, b2), "m", null).heldTokens("a"));
    }

    @Test
    void aRestartDropsTheReplicasOverlayAndTellsTheHost() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1), b1 = tokens(200, 1);
        a.live(0, TestBatches.positional().stored(new long[] {1}, null, b0).build(1));
        a.live(1, TestBatches.positional().stored(new long[] {2}, 1L, b1).build(1));
        RouteDecision d = routeToA(index.lookup(prompt(b0, b1, tokens(300, 1)), "m", null));
        assertEquals(48, index.lookup(prompt(b0, b1, tokens(300, 1)), "m", null).heldTokens("a"));
        a.live(
                0,
                TestBatches.positional()
                        .stored(new long[] {9}, null, tokens(500, 1))
                        .build(1)); // seq back
        assertEquals(List.of("a"), resets);
        assertEquals(0, index.lookup(prompt(b0, b1, tokens(300, 1)), "m", null).heldTokens("a"));
        d.lease().close();
    }

    @Test
    void allBlocksClearedDropsTheReplicasOverlayAndTellsTheHost() {
        KvFeed a = stream("a");
        int[] b0 = tokens(100, 1);
        RouteDecision d = routeToA(index.lookup(prompt(b0, tokens(200, 1)), "m", null));
        assertEquals(32, index.lookup(prompt(b0, tokens(200, 1)), "m", null).heldTokens("a"));
        a.live(0, TestBatches.positional().cleared().build(1));
        assertEquals(List.of("a"), resets);
        assertEquals(0, index.lookup(prompt(b0, tokens(200, 1)), "m", null).heldTokens("a"));
        d.lease().close();
    }

    @Test
    void lostEventsKeepTheOverlayAndTellNobody() {
        KvFeed a = stream("a"); // no replayer: a gap loses events for good
        int[] b0 = tokens(100, 1);
        a.live(0, TestBatches.positional().stored(new long[] {1}, null, b0).build(1));
        RouteDecision d = routeToA(index.lookup(prompt(b0, tokens(200, 1)), "m", null));
        a.live(
                5,
                TestBatches.positional()
                        .stored(new long[] {3}, null, tokens(400, 1))
                        .build(1));
        assertEquals(1, index.status("a").streams().get(0).resets());
        assertEquals(List.of(), resets);
        assertEquals(32, index.lookup(prompt(b0, tokens(200, 1)), "m", null).heldTokens("a"));
        d.lease().close();
    }
}
