package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The block cache against a naive model, compared after every operation. */
class BlockCacheTest {

    /** The obvious implementation: lists and maps, linear scans. */
    static final class NaiveCache {
        final int capacity;
        final Map<Long, Integer> refs = new HashMap<>();
        final List<Long> lru = new ArrayList<>(); // evictable blocks, next victim first
        int priv;

        NaiveCache(int capacity) {
            this.capacity = capacity;
        }

        int used() {
            return refs.size() + priv;
        }

        int matchPrefix(long[] h, int max) {
            int i = 0;
            while (i < Math.min(max, h.length) && refs.containsKey(h[i])) {
                i++;
            }
            return i;
        }

        int evictableAmong(long[] h, int n) {
            int e = 0;
            for (int i = 0; i < n; i++) {
                if (refs.get(h[i]) == 0) {
                    e++;
                }
            }
            return e;
        }

        int available() {
            return capacity - used() + lru.size();
        }

        boolean allocate(int n) {
            if (available() < n) {
                return false;
            }
            while (capacity - used() < n) {
                refs.remove(lru.remove(0));
            }
            priv += n;
            return true;
        }

        void ref(long h) {
            int r = refs.get(h);
            if (r == 0) {
                lru.remove(Long.valueOf(h));
            }
            refs.put(h, r + 1);
        }

        void pin(long[] h, int n) {
            for (int i = 0; i < n; i++) {
                ref(h[i]);
            }
        }

        void register(long h) {
            priv--;
            if (refs.containsKey(h)) {
                ref(h);
            } else {
                refs.put(h, 1);
            }
        }

        void release(long[] h, int n) {
            for (int i = n - 1; i >= 0; i--) {
                int r = refs.get(h[i]) - 1;
                refs.put(h[i], r);
                if (r == 0) {
                    lru.add(h[i]);
                }
            }
        }
    }

    private static final int DOCS = 6;
    private static final int LEN = 6;

    /** Block k of chain d: chains share up to (d % 4) leading blocks with a common base. */
    static long block(int d, int k) {
        return k < d % 4 ? 7_000 + k : d * 100L + k;
    }

    static long[] chain(int d, int len) {
        long[] c = new long[len];
        for (int k = 0; k < len; k++) {
            c[k] = block(d, k);
        }
        return c;
    }

    private record Held(long[] chain, int len) {}

    /** Applies {@code ops} to both caches, engine-style, comparing everything after each step. */
    static void run(List<Integer> ops, int capacity) {
        BlockCache real = new BlockCache(capacity);
        NaiveCache model = new NaiveCache(capacity);
        List<Held> active = new ArrayList<>();
        List<Integer> privateAllocs = new ArrayList<>();
        for (int step = 0; step < ops.size(); step++) {
            int op = ops.get(step);
            int arg = op >>> 2;
            switch (op & 3) {
                case 0, 1 -> { // a request arrives: hit its cached prefix, compute and register the rest
                    long[] c = chain(arg % DOCS, 1 + (arg / DOCS) % LEN);
                    int hit = real.matchPrefix(c, c.length);
                    assertEquals(model.matchPrefix(c, c.length), hit, "matchPrefix at step " + step);
                    int need = c.length - hit;
                    boolean fits = real.available() - real.evictableAmong(c, hit) >= need;
                    assertEquals(model.available() - model.evictableAmong(c, hit) >= need, fits);
                    if (fits) {
                        real.pin(c, hit);
                        model.pin(c, hit);
                        assertTrue(real.allocate(need));
                        assertTrue(model.allocate(need));
                        for (int k = hit; k < c.length; k++) {
                            real.register(c[k]);
                            model.register(c[k]);
                        }
                        active.add(new Held(c, c.length));
                    }
                }
                case 2 -> { // a request finishes
                    if (!active.isEmpty()) {
                        Held h = active.remove(arg % active.size());
                        real.release(h.chain(), h.len());
                        model.release(h.chain(), h.len());
                    }
                }
                default -> { // private blocks come and go (partial blocks, generated tokens)
                    if (!privateAllocs.isEmpty() && arg % 2 == 0) {
                        int k = privateAllocs.remove(privateAllocs.size() - 1);
                        real.freePrivate(k);
                        model.priv -= k;
                    } else {
                        int k = 1 + arg % 3;
                        boolean a = real.allocate(k);
                        assertEquals(model.allocate(k), a, "allocate at step " + step);
                        if (a) {
                            privateAllocs.add(k);
                        }
                    }
                }
            }
            assertSame(real, model, step);
        }
    }

    static void assertSame(BlockCache real, NaiveCache model, int step) {
        String at = " after step " + step;
        assertEquals(model.used(), real.used(), "used" + at);
        assertEquals(model.capacity - model.used(), real.free(), "free" + at);
        assertEquals(model.lru.size(), real.evictable(), "evictable" + at);
        assertEquals(model.refs.size(), real.cached(), "cached" + at);
        assertEquals(model.priv, real.privateBlocks(), "private" + at);
        assertArrayEquals(
                model.lru.stream().mapToLong(Long::longValue).toArray(), real.evictionOrder(), "eviction order" + at);
        for (int d = 0; d < DOCS; d++) {
            for (int k = 0; k < LEN; k++) {
                long b = block(d, k);
                assertEquals(model.refs.getOrDefault(b, -1), real.refs(b), "refs of " + b + at);
            }
        }
        assertTrue(real.used() <= real.capacity(), "over capacity" + at);
    }

    @Test
    void matchesNaiveModel() {
        qt().withExamples(400)
                .withShrinkCycles(2000)
                .forAll(
                        lists().of(integers().between(0, 1 << 16)).ofSizeBetween(0, 250),
                        integers().between(1, 24))
                .checkAssert(BlockCacheTest::run);
    }

    @Test
    void evictsLeastRecentlyReleasedAndTailFirst() {
        BlockCache c = new BlockCache(4);
        long[] a = {1, 2};
        long[] b = {3, 4};
        for (long[] x : new long[][] {a, b}) {
            assertTrue(c.allocate(2));
            c.register(x[0]);
            c.register(x[1]);
        }
        c.release(a, 2);
        c.release(b, 2);
        assertArrayEquals(new long[] {2, 1, 4, 3}, c.evictionOrder());
        assertTrue(c.allocate(1));
        assertFalse(c.contains(2));
        assertTrue(c.contains(1));
        assertEquals(2, c.matchPrefix(b, 2));
        assertEquals(1, c.matchPrefix(a, 2), "the tail of a went first; its head is still cached");
    }

    @Test
    void pinnedBlocksAreNeverEvicted() {
        BlockCache c = new BlockCache(2);
        long[] a = {1, 2};
        assertTrue(c.allocate(2));
        c.register(1);
        c.register(2);
        assertFalse(c.allocate(1), "both blocks are in use");
        c.release(a, 2);
        assertTrue(c.allocate(2));
        assertEquals(0, c.cached());
        assertThrows(IllegalStateException.class, () -> c.freePrivate(3));
    }
}
