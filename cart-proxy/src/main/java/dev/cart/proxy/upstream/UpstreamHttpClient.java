package dev.cart.proxy.upstream;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The JDK HTTP client of the health checks, model discovery and the pool's {@code GET /v1/models}: one per
 * proxy, whatever the pool's size and however often it is reloaded.
 *
 * <p>Why its threads are bounded: the JDK client's default executor is a cached thread pool, which starts a
 * thread for every task that finds none idle. A pool of a thousand workers probed at once (at start, at
 * every reload) had a thousand answers to handle at once, and the proxy grew by hundreds of threads (and
 * their stacks) that lingered a minute. Here the client's work (reading an answer, completing its future,
 * the discovery's JSON) runs on at most {@link #THREADS} daemon threads ({@code cart-http-client-N}), which
 * end when idle; none of it blocks, so a queue is all a burst costs.
 *
 * <p>And why {@link #avoidThreadPerTask()}: {@link HttpClient#sendAsync} hands every answer to
 * {@link java.util.concurrent.CompletableFuture}'s default executor before the caller's stages run. That is
 * the common fork-join pool, unless its parallelism is 1 (a machine or container with two processors or
 * fewer), in which case the JDK starts a new thread per task: one thread per probe.
 *
 * <p>Thread-safe; stateless.
 */
public final class UpstreamHttpClient {

    /** The client's executor threads at most. */
    static final int THREADS = 2;

    private static final String PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";
    private static final AtomicInteger IDS = new AtomicInteger();

    private UpstreamHttpClient() {}

    /** A new HTTP/1.1 client that follows no redirect, with {@code connectTimeout} and a bounded executor. */
    public static HttpClient create(Duration connectTimeout) {
        ThreadPoolExecutor executor =
                new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "cart-http-client-" + IDS.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        executor.allowCoreThreadTimeOut(true); // no thread left behind by a client that is dropped
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .executor(executor)
                .build();
    }

    /**
     * Gives the common fork-join pool a parallelism of 2 where it would be 1 (two processors or fewer), so
     * that {@link java.util.concurrent.CompletableFuture}'s default executor is that pool and not a new thread
     * per task, unless {@code java.util.concurrent.ForkJoinPool.common.parallelism} is given on the command
     * line. Takes effect only if called before the JVM first uses the common pool or {@code
     * CompletableFuture}: first thing in {@code main}.
     *
     * @return the common pool's parallelism now
     */
    public static int avoidThreadPerTask() {
        if (System.getProperty(PARALLELISM) == null && Runtime.getRuntime().availableProcessors() <= 2) {
            System.setProperty(PARALLELISM, "2");
        }
        return ForkJoinPool.getCommonPoolParallelism();
    }
}
