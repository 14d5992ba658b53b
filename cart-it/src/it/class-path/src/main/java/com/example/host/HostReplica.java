package com.example.host;

import dev.cart.core.spi.Replica;
import java.util.concurrent.atomic.AtomicInteger;

/** One backend as the host's service discovery knows it: its URL, a cap, an in-flight count. */
final class HostReplica implements Replica {
    private final String url;
    private final int maxLoad;
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean healthy = true;

    HostReplica(String url, int maxLoad) {
        this.url = url;
        this.maxLoad = maxLoad;
    }

    @Override
    public String id() {
        return url;
    }

    @Override
    public int inFlight() {
        return inFlight.get();
    }

    @Override
    public int maxLoad() {
        return maxLoad;
    }

    @Override
    public int loadPenalty() {
        return 0;
    }

    @Override
    public boolean isAvailable() {
        return healthy && inFlight.get() < maxLoad;
    }

    @Override
    public Admission tryAcquire() {
        while (true) {
            int n = inFlight.get();
            if (!healthy || n >= maxLoad) {
                return null; // the router tries another replica
            }
            if (inFlight.compareAndSet(n, n + 1)) {
                return outcome -> inFlight.decrementAndGet(); // a host's circuit breaker would read the outcome
            }
        }
    }

    void healthy(boolean healthy) {
        this.healthy = healthy;
    }
}
