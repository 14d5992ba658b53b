package dev.cart.proxy.observe;

import java.util.concurrent.TimeUnit;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Linearizability of the decision writer's queue: offers from several threads at once racing one consumer's polls
 * (the consumer's operations never run in parallel with each other, as the writer thread is alone) and looks at
 * its emptiness, on a queue of capacity 2 so that offers find it full. Every concurrent history must be explained
 * by some sequential order of the same queue: an element is taken once, in the order of the offers' claims, never
 * one offered after another's claim first; a full queue refuses; an empty one gives null.
 */
@Param(name = "e", gen = IntGen.class, conf = "1:9")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
public class BoundedMpscQueueLincheckTest {

    private final BoundedMpscQueue<Integer> queue = new BoundedMpscQueue<>(2);

    @Operation
    public boolean offer(@Param(name = "e") int e) {
        return queue.offer(e);
    }

    @Operation(nonParallelGroup = "consumer")
    public Integer poll() {
        return queue.poll();
    }

    @Operation
    public boolean isEmpty() {
        return queue.isEmpty();
    }

    @Test
    void modelChecking() {
        new ModelCheckingOptions()
                .iterations(30)
                .invocationsPerIteration(500)
                .threads(3)
                .actorsPerThread(3)
                .check(BoundedMpscQueueLincheckTest.class);
    }

    /** Lincheck's stress mode, tagged {@code stress}: left out of the default build (run with {@code -Pstress}). */
    @Test
    @Tag("stress")
    void stress() {
        new StressOptions()
                .iterations(50)
                .invocationsPerIteration(2_000)
                .threads(3)
                .actorsPerThread(4)
                .check(BoundedMpscQueueLincheckTest.class);
    }
}
