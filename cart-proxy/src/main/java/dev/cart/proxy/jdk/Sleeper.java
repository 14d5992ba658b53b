package dev.cart.proxy.jdk;

import java.time.Duration;

/** Waits between retries. Injected so tests record the backoff instead of sleeping. */
@FunctionalInterface
public interface Sleeper {

    /** The real thing: {@link Thread#sleep}. */
    Sleeper SYSTEM = d -> {
        if (!d.isZero() && !d.isNegative()) {
            Thread.sleep(d.toMillis(), (int) (d.toNanos() % 1_000_000));
        }
    };

    void sleep(Duration duration) throws InterruptedException;
}
