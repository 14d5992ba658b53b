package dev.cart.jmh.core;

import dev.cart.core.TreeStats;
import dev.cart.core.internal.PrefixTree;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/**
 * Heap used by a tree holding the fixed workload's 10,000 keys: the heap after GC with the tree, minus
 * the heap after GC without it (the workload's own keys and texts are live in both measurements).
 * Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.core.TreeMemory}.
 */
public final class TreeMemory {

    private TreeMemory() {}

    public static void main(String[] args) throws InterruptedException {
        TreeWorkload w = new TreeWorkload(42);
        long before = usedAfterGc();
        PrefixTree tree = w.filledTree(Long.MAX_VALUE);
        long after = usedAfterGc();
        TreeStats stats = tree.stats();
        long bytes = after - before;
        System.out.printf(
                "keys=%d blocks=%d nodes=%d entries=%d heap=%.2f MiB (%.1f bytes/block, %.0f bytes/key)%n",
                TreeWorkload.KEYS,
                stats.size(),
                stats.nodes(),
                stats.entries(),
                bytes / 1048576.0,
                (double) bytes / stats.size(),
                (double) bytes / TreeWorkload.KEYS);
        if (tree.match(w.keys[0]).matchedLength() == 0 || w.texts.length == 0) {
            throw new AssertionError("keep the tree and the workload reachable");
        }
    }

    private static long usedAfterGc() throws InterruptedException {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(100);
            best = Math.min(best, mem.getHeapMemoryUsage().getUsed());
        }
        return best;
    }
}
