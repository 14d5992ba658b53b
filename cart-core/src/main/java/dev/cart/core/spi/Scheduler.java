package dev.cart.core.spi;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs the router's background tasks (eviction passes, the daily reset). Injected so tests can run a
 * task at a virtual time instead of sleeping.
 */
public interface Scheduler extends AutoCloseable {

    /** A scheduled task that can be called off. */
    interface Task {
        void cancel();
    }

    /** Runs {@code task} once after {@code delay}. */
    Task schedule(Runnable task, Duration delay);

    /** Stops the scheduler's own threads, if it has any. */
    @Override
    default void close() {}

    /** A scheduler on one daemon thread, shut down by {@link #close()}. */
    static Scheduler daemon(String threadName) {
        ScheduledExecutorService ex = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        return new Scheduler() {
            @Override
            public Task schedule(Runnable task, Duration delay) {
                ScheduledFuture<?> f = ex.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
                return () -> f.cancel(false);
            }

            @Override
            public void close() {
                ex.shutdownNow();
            }
        };
    }
}
