package dev.cart.core.spi;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs the router's background tasks (eviction passes, the daily reset). Injected so tests can run a
 * task at a virtual time instead of sleeping.
 *
 * <p>Implementations must be thread-safe: a task may schedule the next one from the scheduler's own thread
 * while the router's owner closes it from another.
 */
public interface Scheduler extends AutoCloseable {

    /** A scheduled task that can be called off. */
    interface Task {
        /**
         * Calls the task off if it has not started; a task that started runs to its end. Idempotent.
         */
        void cancel();
    }

    /**
     * Runs {@code task} once after {@code delay}.
     *
     * @param task  what to run; an exception it throws is the scheduler's to log
     * @param delay how long to wait, zero or more
     * @return the handle to call it off
     */
    Task schedule(Runnable task, Duration delay);

    /** Stops the scheduler's own threads, if it has any. */
    @Override
    default void close() {}

    /**
     * A scheduler on one daemon thread, shut down by {@link #close()}.
     *
     * @param threadName the thread's name (shown in thread dumps)
     * @return a new scheduler, which starts its thread on the first task
     */
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
