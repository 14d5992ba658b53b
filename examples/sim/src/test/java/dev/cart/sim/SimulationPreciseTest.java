package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Precise mode in the discrete-event simulation: the engines' events (encoded, decoded, sequenced, indexed
 * by the production code) reach the router through every request's confirmed view.
 */
class SimulationPreciseTest {

    private static Simulation.Builder sim(boolean precise) {
        return Simulation.builder()
                .replicas(4)
                .seed(1)
                .policy("cache_aware", Map.of())
                .replicaTokenizer(true)
                .reportUsage(true)
                .learnAnswers(true)
                .precise(precise);
    }

    @Test
    void oneClientAtATimeIsPredictedExactly() {
        Workload w = Workloads.multiTurn(3).poisson(1, 3);
        RunResult precise = sim(true).closedLoop(1).build().run(w);
        RunResult.Feedback f = precise.feedback();
        assertEquals(precise.completed(), f.reports());
        // nothing else in flight: what the engines reported is what they deliver (key units round down only)
        assertEquals(0, f.overpredicted());
        assertTrue(f.delivered() >= f.predicted(), f.toString());
        assertTrue(f.delivered() - f.predicted() < f.reports() * 64L, f.toString());
    }

    @Test
    void aRestartedReplicaIsNoLongerBelievedToHoldItsPrefixes() {
        Workload w = Workloads.hotPrefix(2, 0.8).poisson(20, 2);
        RunResult approximate = sim(false).restartMidRun(0).build().run(w);
        RunResult precise = sim(true).restartMidRun(0).build().run(w);
        // the tree keeps claiming what replica 0 lost until feedback corrects it; the events say so at once
        assertTrue(
                precise.feedback().overpredicted() <= approximate.feedback().overpredicted(),
                precise.feedback() + " vs " + approximate.feedback());
        assertEquals(approximate.completed(), precise.completed());
    }

    @Test
    void preciseModeNeedsTheReplicasTokens() {
        Workload w = Workloads.hotPrefix(2, 0.8).poisson(20, 2);
        assertThrows(
                IllegalArgumentException.class,
                () -> sim(true).replicaTokenizer(false).build().run(w));
    }
}
