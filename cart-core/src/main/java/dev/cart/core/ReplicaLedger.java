package dev.cart.core;

import dev.cart.core.spi.Replica;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What the router keeps per replica, so that a {@link Replica} only answers what its host knows: the
 * prefill still pending there ({@link Router#pendingPrefill}), the requests still in prefill there (for
 * usage feedback, {@link InPrefill}), and whether the replica has ever reported a cached token
 * ({@link CacheFeedback.Verdict#CACHE_UNREPORTED}).
 *
 * <p>How: one {@link Account} per replica in a concurrent map (keyed by the replica itself: identity,
 * unless a host's replica defines {@code equals}), made on a replica's first admission. A
 * decision keeps its replica's account, so taking its prefill back needs no lookup; a read
 * ({@link #pendingPrefill}) is one map lookup, lock-free. A host's pool changes over time (discovery
 * replaces replica objects, a reload drops some), so accounts of replicas that left the pool are dropped
 * once they hold nothing: when a new account is made while the map holds more accounts than the pool
 * has replicas, and at every maintenance pass ({@link Router#evictNow}).
 *
 * <p>Concurrency: thread-safe; reads and updates take no lock (making an account takes the map's bin lock
 * once per replica). Dropping an idle account races only with a request routed to its replica from a pool
 * snapshot taken before the replica left: that request then counts in an account no longer in the map,
 * and its prefill is not seen by later reads, which only concern a replica that has left.
 */
final class ReplicaLedger {

    private final ConcurrentHashMap<Replica, Account> accounts = new ConcurrentHashMap<>();

    /** One replica's figures. */
    static final class Account {
        /** Prompt units routed there whose prefill is not over ({@link Router#pendingPrefill}). */
        final AtomicLong pendingPrefill = new AtomicLong();
        /** The requests in prefill there, for feedback ({@link InPrefill}); empty when feedback is off. */
        final AtomicReference<InPrefill.Entry[]> inPrefill = new AtomicReference<>(InPrefill.NONE);
        /**
         * Whether the replica reports its cache: -1 once it has reported a cached token; before that, how many
         * of its reports fell short of a prediction with nothing delivered ({@link #noCacheReport()}).
         */
        private final AtomicInteger cacheReports = new AtomicInteger();

        /** The replica reported a cached token: its shortfalls are evidence from now on. */
        void cacheReported() {
            if (cacheReports.get() != -1) {
                cacheReports.set(-1);
            }
        }

        /**
         * The replica reported nothing cached where the router could not explain the shortfall.
         *
         * @return how many such reports it has made without ever reporting a cached token (this one
         *     included); -1 if it has reported one
         */
        int noCacheReport() {
            while (true) {
                int n = cacheReports.get();
                if (n < 0 || cacheReports.compareAndSet(n, n + 1)) {
                    return n < 0 ? n : n + 1;
                }
            }
        }

        /** True when no request counts here any more. */
        boolean idle() {
            return pendingPrefill.get() == 0 && InPrefill.allDone(InPrefill.current(inPrefill));
        }
    }

    /**
     * {@code replica}'s account, made on first use; {@code pool} is the pool it was routed from (to drop
     * the idle accounts of replicas that left it, when one is made).
     */
    Account account(Replica replica, List<? extends Replica> pool) {
        Account a = accounts.get(replica);
        if (a == null) {
            a = accounts.computeIfAbsent(replica, r -> new Account());
            if (accounts.size() > pool.size()) {
                prune(pool);
            }
        }
        return a;
    }

    /** The pending prefill this router counts on {@code replica}; 0 for a replica it has no account of. */
    long pendingPrefill(Replica replica) {
        Account a = accounts.get(replica);
        return a == null ? 0 : a.pendingPrefill.get();
    }

    /** Drops the idle accounts of replicas not in {@code pool}. */
    void prune(List<? extends Replica> pool) {
        Set<Replica> live = new HashSet<>(pool); // the map's notion of the same replica
        accounts.entrySet()
                .removeIf(e -> !live.contains(e.getKey()) && e.getValue().idle());
    }

    /** Accounts held now (for tests). */
    int size() {
        return accounts.size();
    }
}
