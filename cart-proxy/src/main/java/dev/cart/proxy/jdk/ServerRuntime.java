package dev.cart.proxy.jdk;

import dev.cart.proxy.config.ProxyConfig;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where request handlers run, and checks of the process environment.
 *
 * <p>On Java 21+ every request gets a virtual thread (looked up reflectively: the code is compiled for
 * Java 17), so thousands of concurrent streams cost no platform threads. On Java 17-20 a pool of
 * platform threads serves requests, and it must survive slow clients: the JDK server reads a request's
 * head (and the handler its body) on the pool's thread, so a client trickling a byte a second, or sending
 * a head with bare-LF line endings that the server waits on, holds a thread until
 * {@code server.request_read_timeout_secs}. A pool the size of {@code server.max_threads} was gone after
 * a few hundred such clients, and {@code /health} with it. So the pool may grow to a thread per connection
 * the server accepts ({@code server.max_connections}, which the JDK enforces at accept) plus
 * {@link #RESERVE_THREADS}: an exchange never waits for a thread, whatever the other connections do.
 * Threads are made only as connections need them, end after 60 s idle, and have a small stack
 * ({@link #STACK_BYTES}: reserved address space; what a thread blocked in a read touches is a few pages).
 * How many proxied requests run at once is still {@code server.max_threads}: the handler answers one more
 * with 503 at once ({@link Executor#proxiedLimit}, counted by the core once the body has arrived). Beyond
 * the pool, {@link #RESERVE_THREADS} overflow threads take exchanges in arrival order, for short work only:
 * a proxied request that lands on one gets the same 503 ({@link #onOverflowThread}).
 */
public final class ServerRuntime {

    /** Files a running proxy holds besides its connections: jars, logs, the JVM's own. */
    static final long OTHER_FILES = 256;

    /** Platform threads beyond {@code server.max_connections}, and overflow threads (Java 17-20). */
    static final int RESERVE_THREADS = 8;

    /** Stack size of a request thread on Java 17-20 (the JVM's default is 1 MiB). */
    static final long STACK_BYTES = 512 * 1024;

    private ServerRuntime() {}

    /**
     * The request executor, a description of it for the startup log, and how many proxied requests it can
     * run at once ({@link Integer#MAX_VALUE} with virtual threads).
     */
    public record Executor(ExecutorService service, String description, int proxiedLimit) {}

    public static Executor requestExecutor(int maxThreads, int maxConnections) {
        try {
            Method m = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
            ExecutorService vt = (ExecutorService) m.invoke(null);
            return new Executor(vt, "virtual threads (Java " + Runtime.version().feature() + ")", Integer.MAX_VALUE);
        } catch (ReflectiveOperationException | RuntimeException notAvailable) {
            AtomicInteger n = new AtomicInteger();
            ThreadFactory tf = r -> {
                Thread t = new Thread(null, r, "cart-http-" + n.incrementAndGet(), STACK_BYTES);
                t.setDaemon(true);
                return t;
            };
            int threads = Math.max(maxThreads, maxConnections) + RESERVE_THREADS;
            return new Executor(
                    new HandOffPool(threads, RESERVE_THREADS, tf),
                    "a pool of up to " + threads + " threads, one per connection being served (server.max_connections"
                            + " + " + RESERVE_THREADS + "), " + maxThreads + " of them for proxied requests"
                            + " (server.max_threads), and " + RESERVE_THREADS + " overflow threads (Java "
                            + Runtime.version().feature() + ", virtual threads need 21+)",
                    maxThreads);
        }
    }

    /**
     * The platform-thread pool of Java 17-20. Each exchange goes straight to the thread that went idle
     * last (a {@link SynchronousQueue} hand-off, whose waiting threads form a stack), or to a new thread
     * while fewer than {@code threads} exist; idle threads end after 60 s. So a steady load runs on as
     * many threads as it keeps busy, each warm, instead of cycling through every thread of a fixed pool
     * (a pool of {@code threads} core threads on a queue creates all of them and wakes the one idle the
     * longest: with 520 threads, a proxied request cost about 2 ms of CPU at 500 requests per second).
     * When all {@code threads} are busy, exchanges go to {@code overflowThreads} more, in arrival order.
     * Those must only ever do short work, or exchanges would queue behind streams while the pool has idle
     * threads again: the handler answers a proxied request on one of them with 503
     * ({@link ServerRuntime#onOverflowThread}).
     */
    static final class HandOffPool extends ThreadPoolExecutor {
        private final ThreadPoolExecutor overflow;

        HandOffPool(int threads, int overflowThreads, ThreadFactory tf) {
            super(0, threads, 60, TimeUnit.SECONDS, new SynchronousQueue<>(), tf);
            AtomicInteger n = new AtomicInteger();
            overflow = new ThreadPoolExecutor(
                    overflowThreads,
                    overflowThreads,
                    60,
                    TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(),
                    r -> new OverflowThread(r, "cart-http-overflow-" + n.incrementAndGet()));
            overflow.allowCoreThreadTimeOut(true);
            setRejectedExecutionHandler((task, pool) -> {
                if (pool.isShutdown()) {
                    throw new RejectedExecutionException("request executor shut down");
                }
                overflow.execute(task);
            });
        }

        @Override
        public void shutdown() {
            super.shutdown();
            overflow.shutdown();
        }

        @Override
        public List<Runnable> shutdownNow() {
            List<Runnable> pending = new ArrayList<>(super.shutdownNow());
            pending.addAll(overflow.shutdownNow());
            return pending;
        }

        @Override
        public boolean isTerminated() {
            return super.isTerminated() && overflow.isTerminated();
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
            long deadline = System.nanoTime() + unit.toNanos(timeout);
            return super.awaitTermination(timeout, unit)
                    && overflow.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
    }

    /** A thread of {@link HandOffPool}'s overflow. */
    private static final class OverflowThread extends Thread {
        OverflowThread(Runnable r, String name) {
            super(r, name);
            setDaemon(true);
        }
    }

    /** True on an overflow thread of the Java 17-20 pool, which must not be kept by a proxied request. */
    static boolean onOverflowThread() {
        return Thread.currentThread() instanceof OverflowThread;
    }

    /** Open files the configured limits can use at once: client connections, upstream ones, the JVM's. */
    public static long filesNeeded(ProxyConfig.Server server) {
        return (long) server.maxConnections() + server.maxConcurrentRequests() + OTHER_FILES;
    }

    /** The warning to log at an open-file limit of {@code limit}, or empty when it covers what the limits use. */
    public static java.util.Optional<String> openFileWarning(long limit, ProxyConfig.Server server) {
        long needed = filesNeeded(server);
        if (limit >= needed) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of("the open-file limit is " + limit + " (ulimit -n), below the " + needed
                + " that server.max_connections (" + server.maxConnections() + ") plus server.max_concurrent_requests ("
                + server.maxConcurrentRequests() + ") upstream connections can use; raise it (ulimit -n " + needed
                + ") or lower those limits");
    }

    /** The soft open-file limit of this process, best effort (Linux {@code /proc/self/limits}). */
    public static OptionalLong openFileLimit() {
        return openFileLimit(Path.of("/proc/self/limits"));
    }

    public static OptionalLong openFileLimit(Path limits) {
        try {
            List<String> lines = Files.readAllLines(limits);
            for (String line : lines) {
                if (line.startsWith("Max open files")) {
                    String[] parts =
                            line.substring("Max open files".length()).trim().split("\\s+");
                    if (parts.length > 0) {
                        if (parts[0].equals("unlimited")) {
                            return OptionalLong.of(Long.MAX_VALUE);
                        }
                        return OptionalLong.of(Long.parseLong(parts[0]));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or unreadable: no warning rather than a wrong one
        }
        return OptionalLong.empty();
    }
}
