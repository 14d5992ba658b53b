package dev.cart.flow;

import dev.cart.core.spi.Scheduler;
import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A virtual clock and a scheduler on it: nothing runs until the test advances time, and then every task
 * due runs in due order on the test's thread. Thread-safe, for the concurrency tests too.
 */
final class VirtualTime implements Scheduler, LongSupplier {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final PriorityQueue<Pending> pending = new PriorityQueue<>();
    private long seq;

    private static final class Pending implements Comparable<Pending>, Task {
        final long due;
        final long seq;
        final Runnable task;
        volatile boolean cancelled;

        Pending(long due, long seq, Runnable task) {
            this.due = due;
            this.seq = seq;
            this.task = task;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }

        @Override
        public int compareTo(Pending o) {
            int c = Long.compare(due, o.due);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    @Override
    public long getAsLong() {
        return now.get();
    }

    @Override
    public synchronized Task schedule(Runnable task, Duration delay) {
        Pending p = new Pending(now.get() + delay.toNanos(), seq++, task);
        pending.add(p);
        return p;
    }

    /** Moves time forward by {@code millis}, running every task due on the way, each at its due time. */
    void advanceMillis(long millis) {
        advanceNanos(millis * 1_000_000L);
    }

    void advanceNanos(long nanos) {
        long end = now.get() + nanos;
        for (; ; ) {
            Pending p;
            synchronized (this) {
                p = pending.peek();
                if (p == null || p.due > end) {
                    break;
                }
                pending.poll();
            }
            if (p.due > now.get()) {
                now.set(p.due);
            }
            if (!p.cancelled) {
                p.task.run();
            }
        }
        now.set(end);
    }

    /** Tasks scheduled and not cancelled. */
    synchronized long live() {
        return pending.stream().filter(p -> !p.cancelled).count();
    }
}
