package dev.cart.sim;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Drives an {@link Engine} against the real clock for the HTTP replica: model time runs {@code speedup}
 * times faster than real time, so a step the model says takes 100 ms takes 100/speedup ms here.
 *
 * <p>Design: one engine thread. It plans a step under the lock, waits outside the lock until the step's
 * real end, then applies it under the lock; the engine's sink callbacks run there and must only hand
 * events over (they do: they offer to a queue). Handler threads submit and abort under the same lock and
 * wake the engine thread when it is idle. Requests that arrive during a step join the next one, as in
 * vLLM. If the host falls behind, steps start late rather than overlap.
 *
 * <p>Thread-safety: {@link #submit}, {@link #abort} and {@link #close} may be called from any thread.
 */
final class RealTimeEngine implements AutoCloseable {

    private final Engine engine;
    private final double speedup;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final long origin = System.nanoTime();
    private final Thread thread;
    private volatile boolean closed;
    private long lastEnd;
    /** Actions to run on the engine thread between two steps (a restart); guarded by the lock. */
    private final java.util.ArrayDeque<Runnable> betweenSteps = new java.util.ArrayDeque<>();

    RealTimeEngine(EngineConfig config, double speedup, String name) {
        if (!(speedup > 0)) {
            throw new IllegalArgumentException("speedup must be positive, was " + speedup);
        }
        this.engine = new Engine(config);
        this.speedup = speedup;
        this.thread = new Thread(this::loop, name + "-engine");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** Model nanoseconds since start. */
    private long modelNow() {
        return (long) ((System.nanoTime() - origin) * speedup);
    }

    /** Queues a request; its sink hears about it on the engine thread (or at once, if refused). */
    void submit(EngineRequest r) {
        lock.lock();
        try {
            if (closed) {
                r.rejected = true;
                r.sink.onRejected(r, "the replica is shutting down");
                return;
            }
            if (engine.submit(r, Math.max(lastEnd, modelNow()))) {
                work.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Drops a request whose client went away. */
    void abort(EngineRequest r) {
        lock.lock();
        try {
            engine.abort(r);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs {@code action} on the engine thread, under the lock, between two steps (at once if idle): the
     * engine is not in the middle of a step when it runs.
     */
    void betweenSteps(java.util.function.Consumer<Engine> action) {
        lock.lock();
        try {
            betweenSteps.add(() -> action.accept(engine));
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Real nanoseconds for a model duration. */
    long realNanos(long modelNanos) {
        return (long) (modelNanos / speedup);
    }

    private void loop() {
        lock.lock();
        try {
            while (!closed) {
                for (Runnable r; (r = betweenSteps.poll()) != null; ) {
                    r.run();
                }
                if (!engine.hasWork()) {
                    work.awaitUninterruptibly();
                    continue;
                }
                long start = Math.max(lastEnd, modelNow());
                long d = engine.planStep(start);
                if (d < 0) {
                    work.await(1, TimeUnit.MILLISECONDS); // cannot happen with valid requests; do not spin
                    continue;
                }
                long end = start + d;
                long deadline = origin + (long) (end / speedup);
                lock.unlock();
                try {
                    for (long left; !closed && (left = deadline - System.nanoTime()) > 0; ) {
                        LockSupport.parkNanos(this, left);
                    }
                } finally {
                    lock.lock();
                }
                engine.completeStep(end);
                lastEnd = end;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** Stops the engine thread; requests still inside are abandoned (their handlers see the close). */
    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            work.signalAll();
        } finally {
            lock.unlock();
        }
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
