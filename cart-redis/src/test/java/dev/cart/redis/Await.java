package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Bounded waits for a state (the tests never sleep for a fixed time). */
final class Await {

    private Await() {}

    /** Polls {@code condition} until true; fails with {@code what} after 30 s. */
    static void until(BooleanSupplier condition, Supplier<String> what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not reached within 30 s: " + what.get());
            }
            LockSupport.parkNanos(2_000_000); // poll interval of a bounded wait on a condition
        }
    }
}
