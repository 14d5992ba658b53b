package dev.cart.proxy.observe;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.joran.spi.ConsoleTarget;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A console appender that writes its lines in batches: the thread that logs a line only encodes it into a
 * buffer (under the appender's lock, no system call), and the buffer goes to standard output in one
 * {@code write} when it is full ({@link #setBufferBytes}, 64 KiB by default) or when its flusher thread finds
 * it non-empty, every {@link #setFlushMillis} (100 ms by default). The proxy sends its decision lines here (one
 * per request, from the event loops): a {@code write} per line cost a system call per request.
 *
 * <p>What it trades: a line reaches the console up to {@code flushMillis} after it is logged, and a process
 * that dies without stopping logback (killed with SIGKILL, a crash of the JVM) loses the lines of the last
 * {@code flushMillis}, at most {@code bufferBytes} of them. An orderly exit (SIGTERM, SIGINT) stops the
 * logger context after the proxy has closed ({@code Main}), which writes what is buffered; {@link #stop()}
 * does.
 *
 * <p>Concurrency: lines are appended and the buffer flushed under {@code streamWriteLock}, the lock every
 * {@link OutputStreamAppender} holds while it writes; the flusher thread takes the same lock. The flusher is a
 * daemon thread that parks between flushes: idle, it wakes ten times a second and makes no system call.
 */
public final class BatchedConsoleAppender<E> extends OutputStreamAppender<E> {

    private int bufferBytes = 64 * 1024;
    private long flushMillis = 100;
    /** Where the buffer goes; standard output unless a test sets another. */
    private OutputStream target;

    private volatile Thread flusher;

    /** Each logging thread's line, for a {@link LineEncoder} to write into (so a line allocates no bytes). */
    private final ThreadLocal<byte[]> lines = ThreadLocal.withInitial(() -> new byte[LINE_BYTES]);

    private static final int LINE_BYTES = 1024;

    /** The buffer's size in bytes: a full buffer is written at once. */
    public void setBufferBytes(int bufferBytes) {
        this.bufferBytes = bufferBytes;
    }

    /** The longest a line waits in the buffer, in milliseconds. */
    public void setFlushMillis(long flushMillis) {
        this.flushMillis = flushMillis;
    }

    /** Writes to {@code out} instead of standard output (before {@link #start()}). */
    void setTarget(OutputStream out) {
        this.target = out;
    }

    @Override
    public void start() {
        if (bufferBytes < 1 || flushMillis < 1) {
            addError("bufferBytes and flushMillis must be positive");
            return;
        }
        OutputStream out = target != null ? target : ConsoleTarget.SystemOut.getStream();
        setOutputStream(new BufferedOutputStream(out, bufferBytes));
        setImmediateFlush(false);
        super.start();
        if (!isStarted()) {
            return;
        }
        Thread t = new Thread(this::flushEvery, "cart-log-flush-" + getName());
        t.setDaemon(true);
        flusher = t;
        t.start();
    }

    private void flushEvery() {
        long nanos = TimeUnit.MILLISECONDS.toNanos(flushMillis);
        while (flusher == Thread.currentThread()) {
            LockSupport.parkNanos(this, nanos);
            flush();
        }
    }

    /**
     * Writes an event: with a {@link LineEncoder}, its line is written into this thread's array and copied into
     * the buffer under the lock, so it allocates no bytes; a line it cannot write so (see
     * {@link LineEncoder#encodeInto}) and any other encoder go the ordinary way.
     */
    @Override
    protected void writeOut(E event) throws IOException {
        if (encoder instanceof LineEncoder line && event instanceof ILoggingEvent e) {
            byte[] buf = lines.get();
            int n = line.encodeInto(e, buf);
            if (n >= 0) {
                streamWriteLock.lock();
                try {
                    OutputStream out = getOutputStream();
                    if (isStarted() && out != null) {
                        out.write(buf, 0, n);
                    }
                } finally {
                    streamWriteLock.unlock();
                }
                return;
            }
        }
        super.writeOut(event);
    }

    /** Writes what is buffered. */
    void flush() {
        streamWriteLock.lock();
        try {
            OutputStream out = getOutputStream();
            if (out != null) {
                out.flush();
            }
        } catch (IOException e) {
            addError("flushing the log failed", e);
        } finally {
            streamWriteLock.unlock();
        }
    }

    /** Writes what is buffered and stops (the console itself stays open). */
    @Override
    public void stop() {
        Thread t = flusher;
        flusher = null;
        if (t != null) {
            LockSupport.unpark(t);
        }
        flush();
        super.stop();
    }
}
