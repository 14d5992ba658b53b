package dev.cart.core;

import dev.cart.core.spi.Match;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Test;

/**
 * Linearizability of {@code match} against maintenance: eviction passes (which detach holderless leaves and
 * merge holderless single-child nodes while matches walk through them) and replica removal. Each scenario
 * starts from the same tree, above its size cap, whose entries have distinct ages, so the LRU order and
 * therefore every pass's result are the same in any sequential order. Inserts are left out: one that meets a
 * running pass is skipped by design (counted, never half-applied), which {@link PrefixTreeConcurrencyTest}
 * checks; no sequential order explains a skip.
 */
@Param(name = "key", gen = IntGen.class, conf = "0:5")
@Param(name = "replica", gen = IntGen.class, conf = "0:1")
public class PrefixTreeEvictionLincheckTest {

    private static final long[][] KEYS = {
        {1, 2, 3, 4},
        {1, 2, 3},
        {1, 2, 5, 6},
        {1, 7},
        {1, 2, 3, 4, 8, 9},
        {10, 11},
    };

    private static final List<ManagedReplicaSet.Member> REPLICAS =
            ManagedReplicaSet.builder().add("r0").add("r1").build().replicas();

    private final PrefixTree tree;

    public PrefixTreeEvictionLincheckTest() {
        MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
        tree = PrefixTree.builder().maxSize(7).clock(clock).build();
        for (int i = 0; i < KEYS.length; i++) {
            clock.advance(java.time.Duration.ofSeconds(1)); // distinct ages: a deterministic LRU order
            tree.insert(PromptKey.forBlocks(KEYS[i], 1), REPLICAS.get(i % 2));
        }
        clock.advance(java.time.Duration.ofSeconds(1));
        tree.insert(PromptKey.forBlocks(KEYS[0], 1), REPLICAS.get(1));
    }

    @Operation
    public String evict() {
        EvictionReport r = tree.evict();
        return r.evicted() + " " + r.sizeAfter();
    }

    @Operation
    public void removeReplica(@Param(name = "replica") int replica) {
        tree.removeReplica(REPLICAS.get(replica));
    }

    @Operation
    public String match(@Param(name = "key") int key) {
        Match m = tree.match(PromptKey.forBlocks(KEYS[key], 1));
        List<String> parts = new ArrayList<>();
        for (Match.Holding h : m.holders()) {
            parts.add(h.replica().id() + "=" + h.matchedLength());
        }
        parts.sort(null);
        return m.matchedLength() + " " + parts;
    }

    @Test
    void stress() {
        new StressOptions()
                .iterations(15)
                .invocationsPerIteration(200)
                .threads(2)
                .actorsPerThread(3)
                .check(PrefixTreeEvictionLincheckTest.class);
    }

    @Test
    void modelChecking() {
        new ModelCheckingOptions()
                .iterations(6)
                .invocationsPerIteration(40)
                .threads(2)
                .actorsPerThread(3)
                .check(PrefixTreeEvictionLincheckTest.class);
    }
}
