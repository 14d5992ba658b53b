package dev.cart.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.cart.core.spi.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A scheduler that only records tasks; the test runs them when it wants, on its own thread. */
final class ManualScheduler implements Scheduler {

    static final class Pending implements Task {
        final Runnable task;
        final Duration delay;
        boolean cancelled;

        Pending(Runnable task, Duration delay) {
            this.task = task;
            this.delay = delay;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }
    }

    @GuardedBy("this")
    private final List<Pending> pending = new ArrayList<>();

    @Override
    public synchronized Task schedule(Runnable task, Duration delay) {
        Pending p = new Pending(task, delay);
        pending.add(p);
        return p;
    }

    /** Runs (and removes) the oldest live task scheduled with {@code delay}; returns false if none. */
    synchronized boolean runNext(Duration delay) {
        for (int i = 0; i < pending.size(); i++) {
            Pending p = pending.get(i);
            if (!p.cancelled && p.delay.equals(delay)) {
                pending.remove(i);
                p.task.run();
                return true;
            }
        }
        return false;
    }

    synchronized long live() {
        return pending.stream().filter(p -> !p.cancelled).count();
    }
}
