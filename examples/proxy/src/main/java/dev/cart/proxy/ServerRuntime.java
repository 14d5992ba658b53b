package dev.cart.proxy;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where request handlers run, and checks of the process environment.
 *
 * <p>On Java 21+ every request gets a virtual thread (looked up reflectively: the code is compiled for
 * Java 17), so thousands of concurrent streams cost no platform threads. On Java 17 a bounded pool of
 * {@code server.max_threads} platform threads serves requests; a request beyond that waits in the queue
 * (each thread is busy for the whole of a stream, so size it for the concurrent streams expected).
 */
final class ServerRuntime {

    static final long RECOMMENDED_OPEN_FILES = 65535;

    private ServerRuntime() {
    }

    /** The request executor and a description of it for the startup log. */
    record Executor(ExecutorService service, String description) {
    }

    static Executor requestExecutor(int maxThreads) {
        try {
            Method m = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
            ExecutorService vt = (ExecutorService) m.invoke(null);
            return new Executor(vt, "virtual threads (Java " + Runtime.version().feature() + ")");
        } catch (ReflectiveOperationException | RuntimeException notAvailable) {
            AtomicInteger n = new AtomicInteger();
            ThreadFactory tf = r -> {
                Thread t = new Thread(r, "cart-http-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            };
            ThreadPoolExecutor pool = new ThreadPoolExecutor(maxThreads, maxThreads, 60, TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(), tf);
            pool.allowCoreThreadTimeOut(true);
            return new Executor(pool, "a pool of up to " + maxThreads + " threads (server.max_threads; Java "
                    + Runtime.version().feature() + ", virtual threads need 21+)");
        }
    }

    /** The soft open-file limit of this process, best effort (Linux {@code /proc/self/limits}). */
    static OptionalLong openFileLimit() {
        return openFileLimit(Path.of("/proc/self/limits"));
    }

    static OptionalLong openFileLimit(Path limits) {
        try {
            List<String> lines = Files.readAllLines(limits);
            for (String line : lines) {
                if (line.startsWith("Max open files")) {
                    String[] parts = line.substring("Max open files".length()).trim().split("\\s+");
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
