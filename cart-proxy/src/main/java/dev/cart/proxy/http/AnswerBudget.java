package dev.cart.proxy.http;

import dev.cart.proxy.upstream.Relay;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The total of answer bytes the proxy holds for clients at once, across all connections
 * ({@code server.max_buffered_answer_bytes}; by default a quarter of the maximum heap). Each connection
 * buffers at most {@link Relay#BUFFER_BYTES} of answer before reading from its replica pauses, but many slow
 * readers at once would otherwise hold that much each. A front {@link #add}s the bytes it queues for a
 * client and takes them back once they have gone to the client's socket; while the total is {@link #over}
 * the limit, a connection whose client has not yet taken what was queued for it reads no more from its
 * replica (as it does at its own bound), and reads again once its client has taken it all. A connection with
 * nothing waiting keeps reading: a client that reads as fast as the replica sends is never held up by slow
 * ones, and what it queues goes out at once. So the total stays within the limit plus about one read per
 * connection.
 *
 * <p>Thread-safe: one atomic counter.
 */
public final class AnswerBudget {

    private final long limit;
    private final AtomicLong held = new AtomicLong();

    public AnswerBudget(long limit) {
        this.limit = limit;
    }

    long limit() {
        return limit;
    }

    /** Bytes held now by all connections. */
    public long held() {
        return held.get();
    }

    /** {@code n} more bytes held (negative: given back). */
    public void add(long n) {
        held.addAndGet(n);
    }

    /** True when the total is at or beyond the limit. */
    public boolean over() {
        return held.get() >= limit;
    }
}
