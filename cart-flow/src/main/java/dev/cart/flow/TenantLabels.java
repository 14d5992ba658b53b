package dev.cart.flow;

import java.util.HashMap;
import java.util.Map;

/**
 * Bounds the tenants named in metric labels: a tenant is named while it is among the top {@code n} by
 * admitted work, every other tenant is {@code other}, so at any moment at most {@code n + 1} values are
 * in use. The top is estimated with the space-saving algorithm over {@code 4n} counters (a tenant's count
 * may be over-estimated by at most the smallest count kept, never under-estimated), so memory is bounded
 * whatever the number of tenants. Thread-safe (one lock; a few dozen counters).
 */
final class TenantLabels {

    static final String OTHER = "other";

    private final int n;
    private final int capacity;
    private final Map<String, long[]> counts = new HashMap<>();

    TenantLabels(int n) {
        this.n = n;
        this.capacity = Math.max(4 * n, n + 1);
    }

    /** Adds {@code work} to {@code tenant}'s count and returns its label. */
    synchronized String admitted(String tenant, long work) {
        if (n == 0) {
            return OTHER;
        }
        long[] c = counts.get(tenant);
        if (c == null) {
            long floor = 0;
            if (counts.size() >= capacity) {
                String min = null;
                long least = Long.MAX_VALUE;
                for (Map.Entry<String, long[]> e : counts.entrySet()) {
                    if (e.getValue()[0] < least) {
                        least = e.getValue()[0];
                        min = e.getKey();
                    }
                }
                counts.remove(min);
                floor = least;
            }
            c = new long[] {floor};
            counts.put(tenant, c);
        }
        c[0] += work;
        return labelOf(tenant, c[0]);
    }

    /** {@code tenant}'s label now, without counting anything. */
    synchronized String label(String tenant) {
        long[] c = counts.get(tenant);
        return n == 0 || c == null ? OTHER : labelOf(tenant, c[0]);
    }

    private String labelOf(String tenant, long count) {
        int above = 0;
        for (long[] v : counts.values()) {
            if (v[0] > count && ++above >= n) {
                return OTHER;
            }
        }
        return tenant;
    }
}
