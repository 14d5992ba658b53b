package dev.cart.flow;

import java.util.Locale;

/**
 * Why the admission queue answered a request without a replica. A bounded set: safe as a metric label.
 * {@link #status()} is the HTTP status a host answers with.
 */
public enum ShedReason {
    /** The model's queue held {@code max_depth} requests and none could make room for this one (429). */
    QUEUE_FULL(429),
    /** The wait the queue expected was already longer than the request's deadline: shed at once (429). */
    DEADLINE(429),
    /** The request waited until its deadline (or {@code max_wait_ms}) without a slot (429). */
    EXPIRED(429),
    /**
     * The queue was full and this request made room for one of a higher band, or of a tenant with fewer
     * requests waiting (429).
     */
    DISPLACED(429),
    /** No replica serving the model could take a request or free a slot: all are down or open (503). */
    UNAVAILABLE(503),
    /** The flow control was closed while the request waited (503). */
    CLOSED(503);

    private final int status;
    private final String code = name().toLowerCase(Locale.ROOT);

    ShedReason(int status) {
        this.status = status;
    }

    /** {@return the HTTP status a host answers with: 429 when the pool is busy, 503 when it cannot serve at all} */
    public int status() {
        return status;
    }

    /** {@return lower-case code for logs and metric labels, e.g. {@code queue_full}} */
    public String code() {
        return code;
    }

    @Override
    public String toString() {
        return code;
    }
}
