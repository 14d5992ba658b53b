package dev.cart.proxy.observe;

import java.time.Duration;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Counts the request path's meters and formats and writes the decision lines on a thread of its own, so that the
 * event loop that finishes a request only hands its record to a queue: one entry per request, a {@link
 * RequestEvents} (a {@link DecisionLog} when the request has a decision line) whose fields are the request's
 * metric events and the line's values, nothing resolved or formatted yet.
 *
 * <p>How: a request's thread {@link #submit}s its record with one offer into a {@link BoundedMpscQueue} (a
 * compare-and-set and an ordered store, no lock). When the queue is full the caller counts the record's events
 * itself (slower, never lost, never waiting) and its line is dropped and counted ({@link #dropped}, exported as
 * {@code cart_decision_lines_dropped_total}). An event that came without a record to go into (see {@link
 * RequestEvents}) is {@link #defer}red as a small {@link Runnable}, queued the same way (run by its caller when
 * the queue is full). One writer thread takes the entries in the order their offers claimed their slots, counts
 * each record's events ({@link RequestEvents#count}), formats its line ({@link DecisionLog#line()}) and hands it
 * to its sink (the {@code cart.decision} logger): the lines of one thread come out in the order its requests
 * finished, and across threads in the order of their offers. The writer is not woken per record (a wake-up is a
 * system call on the caller's thread): while records come it polls the queue every 10 ms, and only after
 * {@link #IDLE_POLLS} empty polls does it park until a caller wakes it (the caller reads one volatile flag per
 * record, and wakes it only then). A poll is a wake-up of the writer (a few microseconds of the process's CPU
 * whether one record or hundreds came), so the interval sets that cost: at 1 ms, a proxy serving 2,000 requests a
 * second spent more CPU per request waking the writer than on its work (docs/benchmarks.md). So a line reaches its sink within
 * about 10 ms after its request ended under
 * load, at once after a quiet spell.
 *
 * <p>Flush: {@link #flush} reads how many offers have claimed a slot and waits, for a bounded time, until the
 * writer has handled that many entries: every record submitted before the call has then been counted and its
 * line handed to the sink (a scrape waits so: what it shows counts the requests that ended before it). {@link
 * #close} flushes and stops the thread.
 *
 * <p>Concurrency: {@link #submit} and {@link #defer} are called by any number of threads at once; a record must
 * not be changed after it is submitted (the queue's ordered store publishes its fields to the writer). The sink
 * and the records' meters are called by the writer thread (and by a caller whose entry found the queue full).
 */
final class DecisionWriter implements AutoCloseable {

    /** Entries the queue holds: at 20,000 requests per second (one entry each), 0.8 s. */
    static final int CAPACITY = 16_384;

    /** Empty polls, {@link #POLL_NANOS} apart, before the writer parks until woken (about 100 ms of quiet). */
    static final int IDLE_POLLS = 10;

    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final Duration IDLE_SLEEP = Duration.ofSeconds(1);
    private static final int BATCH = 256;

    private final BoundedMpscQueue<Object> queue;
    private final Consumer<String> sink;
    private final Thread thread;
    private final LongAdder dropped = new LongAdder();
    private final LongAdder failed = new LongAdder();
    /** True while the writer is parked until a caller wakes it (set before its last look at the queue). */
    private volatile boolean sleeping;
    /** Entries the writer has handled (counted, written) since the start; written by the writer only. */
    private volatile long handled;
    /** Threads in {@link #flush} waiting on {@link #flushed}: the writer notifies them after a batch. */
    private final AtomicInteger flushing = new AtomicInteger();

    private final Object flushed = new Object();

    private final long idleSleepNanos;

    private volatile boolean stopped;

    /**
     * Starts the writer thread.
     *
     * @param capacity entries queued at most (1 to 2^30)
     * @param sink     where each formatted line goes, called on the writer thread only
     * @param threads  makes the writer thread
     */
    DecisionWriter(int capacity, Consumer<String> sink, ThreadFactory threads) {
        this(capacity, sink, threads, IDLE_SLEEP);
    }

    /** As above, with the longest the idle writer parks before it looks at the queue again unwoken. */
    DecisionWriter(int capacity, Consumer<String> sink, ThreadFactory threads, Duration idleSleep) {
        this.idleSleepNanos = idleSleep.toNanos();
        this.queue = new BoundedMpscQueue<>(capacity);
        this.sink = sink;
        this.thread = threads.newThread(this::run);
        thread.start();
    }

    /**
     * Hands {@code record} over ({@link RequestEvents#handOver}) and queues it for the writer; when the queue is
     * full, counts its events on this thread and drops its line (counted). Never blocks.
     *
     * @return false when the queue was full
     */
    boolean submit(RequestEvents record) {
        record.handOver();
        if (!queue.offer(record)) {
            if (record.hasLine()) {
                dropped.increment();
            }
            count(record);
            return false;
        }
        if (sleeping) {
            LockSupport.unpark(thread);
        }
        return true;
    }

    /**
     * Queues a metric event for the writer thread.
     *
     * @return false when the queue was full: the caller runs {@code event} itself
     */
    boolean defer(Runnable event) {
        if (!queue.offer(event)) {
            return false;
        }
        if (sleeping) {
            LockSupport.unpark(thread);
        }
        return true;
    }

    /** True while the writer is parked until a caller wakes it. */
    boolean sleeping() {
        return sleeping;
    }

    /** Records whose line was dropped because the queue was full, since the start. */
    long dropped() {
        return dropped.sum();
    }

    /** Records whose events or line failed (a meter or the sink threw), or events that threw, since the start. */
    long failed() {
        return failed.sum();
    }

    /**
     * Waits until every entry submitted before this call has been handled (its events counted, its line written),
     * at most {@code timeout}.
     *
     * @return true when they were; false on timeout, on interruption (the flag is restored) or when stopped
     */
    boolean flush(Duration timeout) {
        if (stopped) {
            return false;
        }
        long target = queue.claimed();
        if (handled >= target) {
            return true;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        flushing.incrementAndGet();
        try {
            LockSupport.unpark(thread);
            synchronized (flushed) {
                while (handled < target) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0 || stopped) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(flushed, left);
                }
                return true;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            flushing.decrementAndGet();
        }
    }

    /** Writes what is queued (for up to five seconds) and stops the writer thread. */
    @Override
    public void close() {
        flush(Duration.ofSeconds(5));
        stopped = true;
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        int idle = 0;
        long done = 0;
        while (!stopped) {
            int n = 0;
            Object o;
            while (n < BATCH && (o = queue.poll()) != null) {
                write(o);
                n++;
            }
            if (n > 0) {
                idle = 0;
                done += n;
                handled = done;
                if (flushing.get() > 0) {
                    synchronized (flushed) {
                        flushed.notifyAll();
                    }
                }
            } else if (++idle < IDLE_POLLS) {
                LockSupport.parkNanos(this, POLL_NANOS);
            } else {
                sleeping = true;
                if (queue.isEmpty() && !stopped && flushing.get() == 0) {
                    LockSupport.parkNanos(this, idleSleepNanos); // a caller that queued after the look wakes it
                }
                sleeping = false;
            }
        }
        synchronized (flushed) {
            flushed.notifyAll(); // a flush still waiting sees the writer stopped
        }
    }

    private void write(Object o) {
        if (o instanceof RequestEvents record) {
            count(record);
            if (record instanceof DecisionLog log && log.hasLine()) {
                try {
                    sink.accept(log.line());
                } catch (RuntimeException e) {
                    failed.increment(); // a broken appender must not stop the lines after it
                }
            }
            return;
        }
        try {
            ((Runnable) o).run();
        } catch (RuntimeException e) {
            failed.increment();
        }
    }

    private void count(RequestEvents record) {
        try {
            record.count();
        } catch (RuntimeException e) {
            failed.increment();
        }
    }
}
