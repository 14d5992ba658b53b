package dev.cart.proxy.observe;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Formats and writes the decision lines, and updates the request path's meters, on a thread of its own, so that
 * the event loop that finishes a request only hands its {@link DecisionLog} (the fields, not the text) and its
 * metric events (each a small {@link Runnable}, see {@link ProxyMetrics}) to a bounded queue.
 *
 * <p>How: a request's thread {@link #submit}s its record with one {@code offer} into an {@link
 * ArrayBlockingQueue}; when the queue is full the record is dropped and counted ({@link #dropped}, exported as
 * {@code cart_decision_lines_dropped_total}): the caller never blocks. A metric event is {@link #defer}red the
 * same way; when the queue is full, its caller runs it itself (slower, never lost, never waiting). One writer thread takes the records in
 * batches in the order they were queued, formats each ({@link DecisionLog#line()}) and hands the line to its sink
 * (the {@code cart.decision} logger), so the lines of a process come out in the order their requests finished;
 * it runs each metric event in the order it was queued.
 * The writer is not woken per record (a wake-up is a system call on the caller's thread): while records come it
 * polls the queue every millisecond, and only after {@link #IDLE_POLLS} empty polls does it park until a caller
 * wakes it (the caller reads one volatile flag per record, and wakes it only then). So a line reaches its sink
 * about a millisecond after its request ended under load, at once after a quiet spell.
 *
 * <p>Shutdown: {@link #flush} queues a marker behind the records already queued and waits, for a bounded time,
 * until the writer reaches it: every line submitted before the call has then been handed to the sink. {@link
 * #close} flushes and stops the thread.
 *
 * <p>Concurrency: {@link #submit} is called by any number of threads at once; a record must not be changed
 * after it is submitted (the queue's lock publishes its fields to the writer). The sink is called by the writer
 * thread only.
 */
final class DecisionWriter implements AutoCloseable {

    /** Entries the queue holds: at 20,000 requests per second (a line and about five metric events each), 0.5 s. */
    static final int CAPACITY = 65_536;

    /** Empty polls, a millisecond apart, before the writer parks until woken. */
    static final int IDLE_POLLS = 100;

    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final Duration IDLE_SLEEP = Duration.ofSeconds(1);
    private static final int BATCH = 256;

    private final ArrayBlockingQueue<Object> queue;
    private final Consumer<String> sink;
    private final Thread thread;
    private final LongAdder dropped = new LongAdder();
    private final LongAdder failed = new LongAdder();
    /** True while the writer is parked until a caller wakes it (set before its last look at the queue). */
    private volatile boolean sleeping;

    private final long idleSleepNanos;

    private volatile boolean stopped;

    /**
     * Starts the writer thread.
     *
     * @param capacity records queued at most (at least 1)
     * @param sink     where each formatted line goes, called on the writer thread only
     * @param threads  makes the writer thread
     */
    DecisionWriter(int capacity, Consumer<String> sink, ThreadFactory threads) {
        this(capacity, sink, threads, IDLE_SLEEP);
    }

    /** As above, with the longest the idle writer parks before it looks at the queue again unwoken. */
    DecisionWriter(int capacity, Consumer<String> sink, ThreadFactory threads, Duration idleSleep) {
        this.idleSleepNanos = idleSleep.toNanos();
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.sink = sink;
        this.thread = threads.newThread(this::run);
        thread.start();
    }

    /**
     * Queues {@code record} for the writer, or drops and counts it when the queue is full; never blocks.
     *
     * @return false when the record was dropped
     */
    boolean submit(DecisionLog record) {
        if (!queue.offer(record)) {
            dropped.increment();
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

    /** Records dropped because the queue was full, since the start. */
    long dropped() {
        return dropped.sum();
    }

    /** Records whose line could not be formatted or written (the sink threw), or events that threw, since the start. */
    long failed() {
        return failed.sum();
    }

    /**
     * Waits until every record submitted before this call has been written, at most {@code timeout}.
     *
     * @return true when they were; false on timeout, on interruption (the flag is restored) or when stopped
     */
    boolean flush(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        CountDownLatch done = new CountDownLatch(1);
        try {
            if (stopped || !queue.offer(done, timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                return false;
            }
            LockSupport.unpark(thread);
            return done.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
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
        List<Object> batch = new ArrayList<>(BATCH);
        int idle = 0;
        while (!stopped) {
            queue.drainTo(batch, BATCH);
            if (!batch.isEmpty()) {
                idle = 0;
                for (Object o : batch) {
                    write(o);
                }
                batch.clear();
            } else if (++idle < IDLE_POLLS) {
                LockSupport.parkNanos(this, POLL_NANOS);
            } else {
                sleeping = true;
                if (queue.isEmpty() && !stopped) {
                    LockSupport.parkNanos(this, idleSleepNanos); // a caller that queued after the look wakes it
                }
                sleeping = false;
            }
        }
    }

    private void write(Object o) {
        if (o instanceof CountDownLatch done) {
            done.countDown();
            return;
        }
        try {
            if (o instanceof Runnable event) {
                event.run();
                return;
            }
            sink.accept(((DecisionLog) o).line());
        } catch (RuntimeException e) {
            failed.increment(); // a broken appender must not stop the lines after it
        }
    }
}
