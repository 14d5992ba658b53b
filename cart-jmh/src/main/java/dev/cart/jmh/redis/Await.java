package dev.cart.jmh.redis;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** A bounded wait for a state before a measurement starts (a sync connected, a peer heard). */
final class Await {

    private Await() {}

    /**
     * Polls {@code condition} every 2 ms until it holds.
     *
     * @throws IllegalStateException naming {@code what} if it does not hold within 30 s
     */
    static void until(BooleanSupplier condition, Supplier<String> what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("not reached within 30 s: " + what.get());
            }
            LockSupport.parkNanos(2_000_000);
        }
    }
}
