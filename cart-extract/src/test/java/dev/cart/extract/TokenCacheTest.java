package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The token cache against a naive LRU model, step by step; and its counters under concurrency. */
class TokenCacheTest {

    /** An obviously correct LRU: a list in recency order (eldest first) and a map. */
    private static final class NaiveLru {
        final int maxEntries;
        final int maxChars;
        final List<String> order = new ArrayList<>();
        final Map<String, int[]> values = new HashMap<>();
        long hits;
        long misses;
        long tooLong;
        long evictions;

        NaiveLru(int maxEntries, int maxChars) {
            this.maxEntries = maxEntries;
            this.maxChars = maxChars;
        }

        int[] get(String text) {
            if (text.length() > maxChars) {
                tooLong++;
                misses++;
                return null;
            }
            int[] v = values.get(text);
            if (v == null) {
                misses++;
                return null;
            }
            hits++;
            order.remove(text);
            order.add(text);
            return v;
        }

        void put(String text, int[] v) {
            if (text.length() > maxChars || maxEntries == 0) {
                return;
            }
            order.remove(text);
            order.add(text);
            values.put(text, v);
            if (order.size() > maxEntries) {
                values.remove(order.remove(0));
                evictions++;
            }
        }
    }

    /** Twelve distinct texts of lengths 0 to 7 (some over the small caps used below). */
    private static String text(int i) {
        return (char) ('a' + i) + "-".repeat(i % 8);
    }

    @Test
    void behavesLikeANaiveLru() {
        qt().withFixedSeed(20250611L)
                .withExamples(400)
                .forAll(
                        integers().between(0, 5),
                        integers().between(0, 8),
                        lists().of(integers().between(0, 35)).ofSizeBetween(0, 200))
                .checkAssert((maxEntries, maxChars, ops) -> {
                    TokenCache cache = new TokenCache(maxEntries, maxChars);
                    NaiveLru model = new NaiveLru(maxEntries, maxChars);
                    int step = 0;
                    for (int op : ops) {
                        String t = text(op % 12);
                        if (op / 12 == 0) {
                            int[] v = {op % 12, step};
                            cache.put(t, v);
                            model.put(t, v);
                        } else {
                            int[] expected = model.get(t);
                            int[] got = cache.get(t);
                            assertSame(expected, got, "step " + step + ": get " + t);
                        }
                        TokenCache.Stats s = cache.stats();
                        String at = "step " + step + " " + ops;
                        assertEquals(model.order, cache.textsEldestFirst(), at);
                        assertEquals(model.hits, s.hits(), at);
                        assertEquals(model.misses, s.misses(), at);
                        assertEquals(model.tooLong, s.tooLong(), at);
                        assertEquals(model.evictions, s.evictions(), at);
                        assertEquals(model.order.size(), s.size(), at);
                        assertEquals(maxEntries, s.maxEntries(), at);
                        step++;
                    }
                });
    }

    @Test
    void seededSequenceAtDefaultSize() {
        // The real limits, with a key space a little larger than the cache, so eviction runs all the time.
        TokenCache cache = new TokenCache(1000, 64 * 1024);
        NaiveLru model = new NaiveLru(1000, 64 * 1024);
        Random rnd = new Random(99);
        for (int step = 0; step < 20_000; step++) {
            String t = "segment " + (int) Math.abs(rnd.nextGaussian() * 900);
            int[] got = cache.get(t);
            assertSame(model.get(t), got);
            if (got == null) {
                int[] v = {step};
                cache.put(t, v);
                model.put(t, v);
            }
        }
        assertEquals(model.order, cache.textsEldestFirst());
        TokenCache.Stats s = cache.stats();
        assertEquals(model.hits, s.hits());
        assertEquals(model.misses, s.misses());
        assertEquals(model.evictions, s.evictions());
        assertEquals(1000, s.size());
        assertTrue(s.evictions() > 0 && s.hits() > 0);
        assertEquals((double) s.hits() / (s.hits() + s.misses()), s.hitRate());
    }

    @Test
    void textOverTheCapIsNeverStored() {
        TokenCache cache = new TokenCache(10, 5);
        cache.put("123456", new int[] {1});
        assertNull(cache.get("123456"));
        cache.put("12345", new int[] {2});
        assertArrayEquals(new int[] {2}, cache.get("12345"));
        assertEquals(new TokenCache.Stats(1, 1, 1, 0, 1, 10), cache.stats());
    }

    @Test
    void countersAddUpUnderConcurrency() throws Exception {
        TokenCache cache = new TokenCache(50, 100);
        int threads = 8;
        int perThread = 20_000;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long seed = t;
                fs.add(pool.submit(() -> {
                    Random rnd = new Random(seed);
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        int k = rnd.nextInt(120);
                        String text = "t" + k;
                        int[] v = cache.get(text);
                        if (v == null) {
                            cache.put(text, new int[] {k});
                        } else {
                            assertEquals(k, v[0], "a text maps to its own ids");
                        }
                        assertTrue(cache.stats().size() <= 50);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        TokenCache.Stats s = cache.stats();
        assertEquals((long) threads * perThread, s.hits() + s.misses());
        assertEquals(50, s.size());
        // Every entry ever added new followed a miss (it was either evicted or is still there); a concurrent
        // miss of a text another thread just added replaces it without adding one.
        assertTrue(s.evictions() + s.size() <= s.misses(), s.toString());
        assertTrue(s.evictions() > 0, s.toString());
    }
}
