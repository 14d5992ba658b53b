package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Several router instances behind a random balancer ({@link Instances}): one instance routes exactly as
 * the single router; instances sharing nothing lose a conversation's affinity, synced instances keep it;
 * a killed instance's traffic moves to the others and every run ends with nothing in flight (the
 * simulation checks that itself and throws otherwise).
 */
class InstancesTest {

    /** Conversations whose turns arrive while earlier ones are answered, at a moderate rate. */
    private static Workload chats() {
        return Workloads.multiTurn(7, new Workloads.ChatSpec(40, 4, 512, 32, 64, 32, 64))
                .poisson(20, 7);
    }

    private static RunResult run(Workload w, Instances.ScaleOut spec) {
        return Simulation.builder()
                .replicas(4)
                .seed(3)
                .policy("cache_aware", Map.of())
                .scaleOut(spec)
                .build()
                .run(w);
    }

    @Test
    void oneInstanceRoutesExactlyAsTheSingleRouter() {
        Workload w = chats();
        RunResult single = Simulation.builder()
                .replicas(4)
                .seed(3)
                .policy("cache_aware", Map.of())
                .build()
                .run(w);
        RunResult one = run(w, Instances.ScaleOut.of(1, true));
        assertArrayEquals(single.trace().replica(), one.trace().replica());
        assertArrayEquals(single.trace().finished(), one.trace().finished());
        assertEquals(single.cachedTokens(), one.cachedTokens());
    }

    @Test
    void syncedInstancesKeepTheAffinityThatInstancesSharingNothingLose() {
        Workload w = chats();
        RunResult single = run(w, Instances.ScaleOut.SINGLE);
        RunResult alone = run(w, Instances.ScaleOut.of(4, false));
        RunResult synced = run(w, Instances.ScaleOut.of(4, true));
        assertEquals(w.size(), synced.completed());
        assertTrue(
                alone.hitRatio() < single.hitRatio() - 0.05,
                "four instances sharing nothing: " + alone.hitRatio() + " vs one " + single.hitRatio());
        assertTrue(
                synced.hitRatio() > single.hitRatio() - 0.02,
                "four synced instances: " + synced.hitRatio() + " vs one " + single.hitRatio());
    }

    @Test
    void withAnInstanceKilledMidRunEveryRequestIsStillAnswered() {
        Workload w = chats();
        long middle = w.requests().get(w.size() / 2).arrivalNanos();
        RunResult r = run(w, Instances.ScaleOut.of(4, true).killing(3, middle));
        assertEquals(w.size(), r.completed(), "every request answered");
        assertEquals(0, r.noReplica());
    }

    @Test
    void theWireCountsTheInstancesRouteEventsAsTheirPublishersWouldBatchThem() {
        Workload w = chats();
        Instances.Wire wire = new Instances.Wire();
        RunResult r = run(w, Instances.ScaleOut.of(4, true).counting(wire));
        assertEquals(w.size(), r.completed());
        assertTrue(
                wire.entries > 0 && wire.events >= wire.entries, "entries " + wire.entries + ", events " + wire.events);
        assertTrue(wire.events <= w.size() * 2L, "at most a route and an answer per request: " + wire.events);
        assertTrue(wire.learnedBlocks > 0, "learned " + wire.learnedBlocks);
        // an XADD carries at least its framing and its 8 bytes per block sent
        assertTrue(wire.bytes > wire.entries * 60L, "bytes " + wire.bytes);
        assertTrue(wire.perLearnedBlock() > 8, "a block is 8 bytes on the wire: " + wire.perLearnedBlock());
    }
}
