package dev.cart.proxy.http;

import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.observe.ProxyMetrics;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The total of request bodies the proxy buffers at once, across all connections
 * ({@code server.max_buffered_body_bytes}; by default a quarter of the maximum heap). Each body is bounded
 * by {@code proxy.max_body_bytes}, but many large uploads at once would otherwise fill the heap (40
 * concurrent 30 MiB uploads under a 1 GiB heap ran out of memory). A front takes a {@link Grant} per
 * request and {@link Grant#take}s bytes as they arrive; a body that would go over the total is refused with
 * 503 {@code overloaded} ({@link #exhausted}) and its bytes given back. The grant is closed when the
 * request is over (the body is referenced until the answer ends).
 *
 * <p>Thread-safe: one atomic counter.
 */
public final class BodyBudget {

    private final long limit;
    private final ProxyMetrics metrics;
    private final AtomicLong held = new AtomicLong();

    public BodyBudget(long limit, ProxyMetrics metrics) {
        this.limit = limit;
        this.metrics = metrics;
    }

    long limit() {
        return limit;
    }

    /** Bytes held now by all requests. */
    public long held() {
        return held.get();
    }

    public Grant grant() {
        return new Grant();
    }

    /** A grant that takes nothing (a request without a body). */
    public Grant none() {
        return new Grant();
    }

    /** The 503 for a request whose body would take the total over the limit. */
    public Answer exhausted(ProxyCore.Proxied p) {
        metrics.rejected("buffered_bodies");
        p.log.status(503);
        p.log.result("overloaded");
        return Answer.error(
                        503,
                        "overloaded",
                        "the proxy is buffering server.max_buffered_body_bytes (" + limit
                                + " bytes) of request bodies; retry shortly")
                .with("Retry-After", "1")
                .closing();
    }

    /** One request's share of the budget. Used by one thread at a time. */
    public final class Grant implements AutoCloseable {
        private long mine;

        /** Takes {@code n} more bytes; false (taking nothing) when the total would exceed the limit. */
        public boolean take(long n) {
            while (true) {
                long now = held.get();
                if (now + n > limit) {
                    return false;
                }
                if (held.compareAndSet(now, now + n)) {
                    mine += n;
                    return true;
                }
            }
        }

        /** Gives every byte taken back. Idempotent. */
        @Override
        public void close() {
            if (mine > 0) {
                held.addAndGet(-mine);
                mine = 0;
            }
        }
    }
}
