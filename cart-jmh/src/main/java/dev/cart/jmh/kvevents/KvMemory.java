package dev.cart.jmh.kvevents;

import dev.cart.kvevents.KvFeed;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.SplittableRandom;

/**
 * Heap per (replica, block) of the block index: the heap after GC with an index holding {@code N} blocks,
 * minus the heap after GC without it, over {@code N}; beside it the index's own count of its table bytes. Two
 * shapes: one stream holding N blocks (every key held by one replica only: the worst case for the key
 * table), and 8 streams holding N blocks in all where every chain is held by two streams (replicas sharing
 * prefixes). Target: at most 64 bytes per (replica, block) at 10^6.
 *
 * <p>Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.kvevents.KvMemory [blocks...]}.
 */
public final class KvMemory {

    private KvMemory() {}

    public static void main(String[] args) throws InterruptedException {
        long[] sizes = args.length == 0 ? new long[] {100_000, 1_000_000} : new long[args.length];
        for (int i = 0; i < args.length; i++) {
            sizes[i] = Long.parseLong(args[i]);
        }
        for (long n : sizes) {
            for (int streams : new int[] {1, 8}) {
                measure((int) n, streams);
            }
        }
    }

    private static void measure(int n, int streams) throws InterruptedException {
        long before = usedAfterGc();
        KvIndex index = KvIndex.builder().build();
        KvFeed[] feeds = new KvFeed[streams];
        for (int s = 0; s < streams; s++) {
            feeds[s] = index.feed(KvStream.of("r" + s, "inproc://none", null, "m"), null);
        }
        SplittableRandom rnd = new SplittableRandom(5);
        int chain = 100;
        long h = 1;
        long[] seq = new long[streams];
        int held = 0;
        int c = 0;
        while (held < n) {
            int[] tokens = Batches.tokens(rnd, chain);
            // one stream, or two streams of eight (a shared prefix), hold each chain
            int copies = streams == 1 ? 1 : 2;
            for (int k = 0; k < copies && held < n; k++) {
                int s = (c + k) % streams;
                long[] hashes = new long[chain];
                for (int b = 0; b < chain; b++) {
                    hashes[b] = h++ * 0x9E3779B97F4A7C15L;
                }
                feeds[s].live(seq[s]++, Batches.stored(1.0, hashes, null, tokens));
                held += chain;
            }
            c++;
        }
        long after = usedAfterGc();
        long bytes = after - before;
        System.out.printf(
                "blocks=%d streams=%d distinct keys=%d heap=%.1f MiB: %.1f bytes per (replica, block); tables %.1f bytes%n",
                held,
                streams,
                index.size(),
                bytes / 1048576.0,
                (double) bytes / held,
                (double) index.tableBytes() / held);
        if (index.status().isEmpty()) {
            throw new AssertionError("keep the index reachable");
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
