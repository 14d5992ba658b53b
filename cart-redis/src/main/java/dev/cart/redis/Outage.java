package dev.cart.redis;

import java.util.Locale;
import java.util.function.LongSupplier;
import org.slf4j.Logger;

/**
 * Whether one component (the route sync, the load view) reaches Redis, told to the log once per outage and
 * once per recovery, however many threads and retries the outage spans. A component has one or more parts
 * (the route sync's publisher and tailer), each reporting its own connection: the outage begins when the
 * first part loses Redis and ends when every part has it back; the recovery line gives the outage's
 * duration. A component that cannot reach Redis at start is in an outage from then.
 *
 * <p>Lines name Redis by {@code host:port} only (never the URI, which may carry a password), and a failure
 * by the class of its exception or Redis's own error text, never a message that could quote the URI.
 *
 * <p>Concurrency: the parts report from their own threads; every method is synchronized (called on
 * connection changes and failures only, never per event).
 */
final class Outage {

    private final Logger log;
    private final String component;
    private final String where;
    private final boolean[] up;
    private final LongSupplier nanoTime;
    private long downSince = -1;
    private boolean everUp;
    private int outages;

    Outage(Logger log, String component, String where, int parts, LongSupplier nanoTime) {
        this.log = log;
        this.component = component;
        this.where = where;
        this.up = new boolean[parts];
        this.nanoTime = nanoTime;
    }

    /** Part {@code part} has a working connection. */
    synchronized void up(int part) {
        up[part] = true;
        for (boolean u : up) {
            if (!u) {
                return;
            }
        }
        if (downSince >= 0) {
            double seconds = (nanoTime.getAsLong() - downSince) / 1e9;
            log.info(
                    "{} reached Redis at {} again after {} s without it",
                    component,
                    where,
                    String.format(Locale.ROOT, "%.1f", seconds));
            downSince = -1;
        } else if (!everUp) {
            log.info("{} connected to Redis at {}", component, where);
        }
        everUp = true;
    }

    /** Part {@code part} lost its connection, or could not make one, because of {@code cause}. */
    synchronized void down(int part, String cause) {
        up[part] = false;
        if (downSince < 0) {
            downSince = nanoTime.getAsLong();
            outages++;
            log.warn(
                    "{} {} Redis at {} ({}); routing goes on locally, reconnecting every 2 s at most",
                    component,
                    everUp ? "lost" : "cannot reach",
                    where,
                    cause);
        }
    }

    /** Outages begun so far (a start without Redis counts as one). */
    synchronized int outages() {
        return outages;
    }

    /** True while some part is without Redis (or has not connected yet). */
    synchronized boolean isDown() {
        return downSince >= 0;
    }
}
