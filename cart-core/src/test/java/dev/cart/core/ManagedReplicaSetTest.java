package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ManagedReplicaSetTest {

    private final MutableClock clock = new MutableClock();
    private final List<String> transitions = new ArrayList<>();

    private ManagedReplicaSet.Member member(int maxLoad) {
        return ManagedReplicaSet.builder()
                .add(new ReplicaSpec("a", maxLoad, 0))
                .clock(clock)
                .health(new ManagedReplicaSet.HealthConfig(3, 2))
                .circuitBreaker(new CircuitBreaker.Config(3, 2, Duration.ofSeconds(30), 1))
                .listener(new ManagedReplicaSet.Listener() {
                    @Override
                    public void onCircuitTransition(
                            ManagedReplicaSet.Member r, CircuitBreaker.State from, CircuitBreaker.State to) {
                        transitions.add(from.label() + "->" + to.label());
                    }

                    @Override
                    public void onHealthChange(ManagedReplicaSet.Member r, boolean healthy) {
                        transitions.add(healthy ? "healthy" : "unhealthy");
                    }
                })
                .build()
                .replicas()
                .get(0);
    }

    private static void request(Replica r, Outcome o) {
        Replica.Admission a = r.tryAcquire();
        assertNotNull(a);
        a.release(o);
    }

    @Test
    void admissionCapIsNeverExceeded() {
        ManagedReplicaSet.Member m = member(2);
        Replica.Admission first = m.tryAcquire();
        Replica.Admission second = m.tryAcquire();
        assertNotNull(first);
        assertNotNull(second);
        assertNull(m.tryAcquire());
        assertFalse(m.isAvailable());
        first.release(Outcome.SUCCESS);
        assertTrue(m.isAvailable());
        second.release(Outcome.SUCCESS);
        assertThrows(IllegalStateException.class, () -> second.release(Outcome.SUCCESS));
        assertEquals(0, m.inFlight());
    }

    @Test
    void circuitOpensHalfOpensAndCloses() {
        ManagedReplicaSet.Member m = member(10);
        request(m, Outcome.FAILURE);
        request(m, Outcome.FAILURE);
        request(m, Outcome.SUCCESS); // a success resets the count
        request(m, Outcome.FAILURE);
        request(m, Outcome.FAILURE);
        assertEquals(CircuitBreaker.State.CLOSED, m.circuitState());
        request(m, Outcome.FAILURE);
        assertEquals(CircuitBreaker.State.OPEN, m.circuitState());
        assertFalse(m.isAvailable());
        assertNull(m.tryAcquire());
        clock.advance(Duration.ofSeconds(29));
        assertNull(m.tryAcquire());
        clock.advance(Duration.ofSeconds(1));
        assertEquals(CircuitBreaker.State.HALF_OPEN, m.circuitState());
        Replica.Admission trial = m.tryAcquire();
        assertNotNull(trial, "one trial request");
        assertNull(m.tryAcquire(), "only one at a time while half-open");
        trial.release(Outcome.SUCCESS);
        assertEquals(CircuitBreaker.State.HALF_OPEN, m.circuitState());
        request(m, Outcome.SUCCESS);
        assertEquals(CircuitBreaker.State.CLOSED, m.circuitState());
        assertEquals(List.of("closed->open", "open->half_open", "half_open->closed"), transitions);
    }

    @Test
    void aFailedTrialReopens() {
        ManagedReplicaSet.Member m = member(10);
        for (int i = 0; i < 3; i++) {
            request(m, Outcome.FAILURE);
        }
        clock.advance(Duration.ofSeconds(30));
        request(m, Outcome.FAILURE);
        assertEquals(CircuitBreaker.State.OPEN, m.circuitState());
        clock.advance(Duration.ofSeconds(29));
        assertEquals(CircuitBreaker.State.OPEN, m.circuitState(), "the open period restarts");
    }

    @Test
    void aRequestFromBeforeTheCircuitOpenedNeitherTakesATrialSlotNorDecidesTheTrial() {
        ManagedReplicaSet.Member m = member(10);
        Replica.Admission old = m.tryAcquire(); // a long request admitted while closed
        assertNotNull(old);
        for (int i = 0; i < 3; i++) {
            request(m, Outcome.FAILURE);
        }
        assertEquals(CircuitBreaker.State.OPEN, m.circuitState());
        clock.advance(Duration.ofSeconds(30));
        Replica.Admission trial = m.tryAcquire();
        assertNotNull(trial, "the old request does not occupy the single trial slot");
        assertNull(m.tryAcquire(), "but only one trial at a time");
        old.release(Outcome.SUCCESS);
        assertEquals(CircuitBreaker.State.HALF_OPEN, m.circuitState(), "an old success proves nothing about now");
        trial.release(Outcome.SUCCESS);
        assertEquals(CircuitBreaker.State.HALF_OPEN, m.circuitState(), "two successful trials are needed");
        m.tryAcquire().release(Outcome.SUCCESS);
        assertEquals(CircuitBreaker.State.CLOSED, m.circuitState());
        assertEquals(0, m.inFlight());
    }

    @Test
    void anOldFailureDoesNotReopenAClosedCircuit() {
        ManagedReplicaSet.Member m = member(10);
        Replica.Admission old = m.tryAcquire();
        for (int i = 0; i < 3; i++) {
            request(m, Outcome.FAILURE);
        }
        clock.advance(Duration.ofSeconds(30));
        for (int i = 0; i < 2; i++) {
            request(m, Outcome.SUCCESS);
        }
        assertEquals(CircuitBreaker.State.CLOSED, m.circuitState());
        old.release(Outcome.FAILURE);
        m.tryAcquire().release(Outcome.FAILURE);
        m.tryAcquire().release(Outcome.FAILURE);
        assertEquals(
                CircuitBreaker.State.CLOSED,
                m.circuitState(),
                "two current failures, not three: the old one is ignored");
    }

    @Test
    void cancelledRequestsSayNothingAboutTheReplica() {
        ManagedReplicaSet.Member m = member(10);
        request(m, Outcome.FAILURE);
        request(m, Outcome.FAILURE);
        for (int i = 0; i < 10; i++) {
            request(m, Outcome.CANCELLED);
        }
        assertEquals(CircuitBreaker.State.CLOSED, m.circuitState(), "cancellations are not failures");
        request(m, Outcome.FAILURE);
        assertEquals(CircuitBreaker.State.OPEN, m.circuitState(), "nor successes: the two failures before still count");
        clock.advance(Duration.ofSeconds(30));
        Replica.Admission trial = m.tryAcquire();
        assertNotNull(trial);
        trial.release(Outcome.CANCELLED);
        assertEquals(CircuitBreaker.State.HALF_OPEN, m.circuitState(), "a cancelled trial decides nothing");
        Replica.Admission next = m.tryAcquire();
        assertNotNull(next, "and gives its trial slot back");
        next.release(Outcome.SUCCESS);
        assertEquals(List.of("closed->open", "open->half_open"), transitions);
        assertEquals(0, m.inFlight());
    }

    @Test
    void healthFlipsAfterConsecutiveProbes() {
        ManagedReplicaSet.Member m = member(10);
        m.recordProbe(false);
        m.recordProbe(false);
        m.recordProbe(true);
        m.recordProbe(false);
        m.recordProbe(false);
        assertTrue(m.isHealthy());
        m.recordProbe(false);
        assertFalse(m.isHealthy());
        assertNull(m.tryAcquire());
        m.recordProbe(true);
        assertFalse(m.isHealthy());
        m.recordProbe(true);
        assertTrue(m.isHealthy());
        assertEquals(List.of("unhealthy", "healthy"), transitions);
    }

    @Test
    void configErrorsNameTheSetting() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> new CircuitBreaker.Config(0, 1, Duration.ofSeconds(1), 1));
        assertTrue(e.getMessage().contains("CircuitBreaker.Config.failureThreshold"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ReplicaSpec("http://x", 0, 0));
        assertTrue(e.getMessage().contains("maxLoad"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ManagedReplicaSet.builder().build());
        assertTrue(e.getMessage().contains("at least one replica"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ManagedReplicaSet.builder().add("a").add("a").build());
        assertTrue(e.getMessage().contains("duplicate"), e.getMessage());
    }
}
