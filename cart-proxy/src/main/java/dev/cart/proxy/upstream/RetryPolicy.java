package dev.cart.proxy.upstream;

import dev.cart.core.RouteRequest;
import dev.cart.core.spi.Replica;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.routing.Routing;
import java.time.Duration;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;

/**
 * Whether a failed attempt of an {@link Forwarder.Exchange} is tried again, and after what wait: a status is
 * retryable when {@code proxy.retryable_statuses} lists it; a retry happens only while {@code proxy.max_retries}
 * allows one, another replica could take the request now, and the backoff ({@link Backoff}: exponential, with
 * jitter) ends before the request's deadline does.
 *
 * <p>How: the retryable statuses are a table by code, so the check on every answer is one array read; the other
 * candidates are the router's replicas, read as they are now (health, circuit, load), the same way the router
 * filters them.
 *
 * <p>Concurrency: thread-safe (immutable; the random source is asked for on each call and is the caller's).
 */
final class RetryPolicy {

    private final int maxRetries;
    private final Backoff backoff;
    private final Supplier<RandomGenerator> random;
    /** {@code proxy.retryable_statuses} by status code (100-599; an answer outside that range is invalid first). */
    private final boolean[] retryable = new boolean[600];

    RetryPolicy(ProxyConfig.Proxy config, Supplier<RandomGenerator> random) {
        this.maxRetries = config.maxRetries();
        this.backoff = Backoff.of(config);
        this.random = random;
        for (int status : config.retryableStatuses()) {
            if (status >= 0 && status < retryable.length) {
                retryable[status] = true;
            }
        }
    }

    /** True if an answer with {@code status} (100-599) is one to retry elsewhere when a retry is possible. */
    boolean retryable(int status) {
        return retryable[status];
    }

    /**
     * The wait before retrying {@code request} after its attempt {@code attempt} (0-based) failed on
     * {@code failed}, or null when there is to be no retry: none left, no other replica of {@code routing} could
     * take the request now, or the wait would end after {@code deadline} ({@link System#nanoTime}).
     */
    Duration pause(int attempt, Replica failed, RouteRequest request, Routing routing, long deadline) {
        if (attempt >= maxRetries || !anotherCandidate(failed, request, routing)) {
            return null;
        }
        Duration delay = backoff.delay(attempt + 1, random.get());
        return delay.toNanos() < deadline - System.nanoTime() ? delay : null;
    }

    /** True if a replica other than {@code failed} and those already excluded could take the request now. */
    private static boolean anotherCandidate(Replica failed, RouteRequest request, Routing routing) {
        for (Replica r : routing.router.replicas().replicas()) {
            if (r != failed
                    && !request.isExcluded(r)
                    && (request.model() == null || r.serves(request.model()))
                    && r.isAvailable()
                    && r.inFlight() < r.maxLoad()) {
                return true;
            }
        }
        return false;
    }
}
