package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The router's per-replica figures: one account per replica, and a host's pool that changes over time
 * leaves no account behind for a replica that left, once nothing counts on it.
 */
class ReplicaLedgerTest {

    private static List<ManagedReplicaSet.Member> members(int n, String prefix) {
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
        for (int i = 0; i < n; i++) {
            b.add(ReplicaSpec.of("http://" + prefix + i));
        }
        return b.build().replicas();
    }

    @Test
    void aReplicaKeepsOneAccountAndAnIdleOneThatLeftIsDropped() {
        List<ManagedReplicaSet.Member> r = members(4, "r");
        List<ManagedReplicaSet.Member> before = List.of(r.get(0), r.get(1), r.get(2));
        ReplicaLedger ledger = new ReplicaLedger();
        ReplicaLedger.Account mine = ledger.account(r.get(0), before);
        ReplicaLedger.Account busy = ledger.account(r.get(1), before);
        ReplicaLedger.Account idle = ledger.account(r.get(2), before);
        busy.pendingPrefill.addAndGet(100); // r1 leaves the pool with prefill pending, r2 idle
        assertSame(busy, ledger.account(r.get(1), before), "one account per replica");

        List<ManagedReplicaSet.Member> after = List.of(r.get(0), r.get(3));
        ledger.account(r.get(3), after); // more accounts than the pool has replicas: the idle one that left goes
        assertEquals(3, ledger.size(), "r0 and r3 of the pool, and r1 that left with prefill pending");
        assertSame(mine, ledger.account(r.get(0), after));
        assertEquals(100, ledger.pendingPrefill(r.get(1)));
        assertEquals(0, ledger.pendingPrefill(r.get(2)));
        List<ManagedReplicaSet.Member> back = List.of(r.get(0), r.get(2), r.get(3));
        assertNotSame(idle, ledger.account(r.get(2), back), "r2's account was dropped; back, it gets a new one");
        assertEquals(4, ledger.size());

        busy.pendingPrefill.addAndGet(-100);
        ledger.prune(after);
        assertEquals(2, ledger.size(), "once nothing counts on them, replicas that left have no account");
        assertSame(mine, ledger.account(r.get(0), after));
        assertEquals(0, ledger.pendingPrefill(r.get(1)));
    }

    /**
     * A host whose discovery replaces its replica objects (as the gateway does when an instance's settings
     * change) while requests are routed and their first tokens reported: the router's accounts stay
     * bounded by the pool, and the replicas of the current pool keep exact figures.
     */
    @Test
    void aChangingPoolLeavesNoAccountBehind() {
        List<List<ManagedReplicaSet.Member>> snapshot = new ArrayList<>();
        snapshot.add(members(3, "gen0-"));
        PromptKey key = PromptKey.ofText("a prompt of some length ".repeat(20), 64);
        try (Router router = Router.builder()
                .replicas(() -> snapshot.get(0))
                .policy(TestPolicies.leastLoadedIgnoringTree())
                .firstTokenReports(true)
                .evictionInterval(Duration.ZERO)
                .build()) {
            RouteDecision held = null;
            for (int gen = 1; gen <= 200; gen++) {
                RouteDecision d = router.choose(RouteRequest.of(key));
                assertTrue(d.routed());
                if (held == null) {
                    held = d; // in prefill across the changes: its replica's account must stay
                } else {
                    d.lease().firstToken();
                    d.lease().close();
                }
                snapshot.set(0, members(3, "gen" + gen + "-"));
                assertTrue(
                        router.ledger().size() <= 3 + 2,
                        "accounts: " + router.ledger().size());
            }
            Replica heldReplica = held.replica();
            assertEquals(key.length(), router.pendingPrefill(heldReplica), "a busy replica that left keeps its figure");
            held.lease().close();
            assertEquals(0, router.pendingPrefill(heldReplica));
            router.evictNow(); // the maintenance pass drops what no longer counts
            assertEquals(0, router.ledger().size());
        }
    }
}
