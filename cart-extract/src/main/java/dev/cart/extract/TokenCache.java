package dev.cart.extract;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * The token ids of recently seen key segments, by their exact text: a least-recently-used map of at most
 * {@code maxEntries} texts, each at most {@code maxChars} characters long.
 *
 * <p>Why per segment: a key in token mode is tokenized one segment at a time (tools, system prompt, each
 * message; see {@link PromptExtractor}). The segments that repeat are what makes a cache pay: the system
 * prompt and tool definitions of an application, and, in a conversation, every earlier message, which
 * the client sends again with each turn. A cache of whole prompts would almost never hit.
 *
 * <p>Why the cap on text length: a cached text is held as the map's key, so the cap bounds the memory
 * (worst case {@code maxEntries × maxChars} characters plus about a quarter as many token ids). It must
 * not be low: long, stable system prompts are the entries most worth keeping. A text over the cap is
 * never stored and counts as a miss (and in {@link Stats#tooLong()}, which says when the cap is too low).
 *
 * <p>Thread-safety: an access-ordered {@link LinkedHashMap} under this object's monitor; every lookup
 * moves its entry to the front, every insert evicts from the back. The text's hash is computed before
 * taking the lock (a String caches it), so the lock is held for a table probe, one comparison of the text
 * on a hit, and a few pointer writes. Two threads that miss the same text at once both tokenize it, and
 * the second result replaces the first (they are equal); nobody waits for another's tokenization.
 */
public final class TokenCache {

    /** Cumulative figures since the cache was made. */
    public record Stats(long hits, long misses, long tooLong, long evictions, int size, int maxEntries) {
        /**
         * {@code hits / (hits + misses)}, or 0 before the first lookup.
         *
         * @return the hit rate, in [0, 1]
         */
        public double hitRate() {
            long n = hits + misses;
            return n == 0 ? 0 : (double) hits / n;
        }
    }

    private final int maxEntries;
    private final int maxChars;
    private final LinkedHashMap<String, int[]> map;
    private final LongAdder tooLong = new LongAdder();
    /** Lookups in a cache of no entries (a miss each, counted without the lock). */
    private final LongAdder bypassed = new LongAdder();
    // guarded by this
    private long hits;
    private long misses;
    private long evictions;

    TokenCache(int maxEntries, int maxChars) {
        if (maxEntries < 0 || maxChars < 0) {
            throw new IllegalArgumentException("cache limits must not be negative");
        }
        this.maxEntries = maxEntries;
        this.maxChars = maxChars;
        this.map = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, int[]> eldest) {
                if (size() > TokenCache.this.maxEntries) {
                    evictions++;
                    return true;
                }
                return false;
            }
        };
    }

    /** The cached ids of {@code text} (shared: never modify), or null; counts a hit or a miss. */
    int @Nullable [] get(String text) {
        if (text.length() > maxChars) {
            tooLong.increment();
            return null;
        }
        if (maxEntries == 0) {
            bypassed.increment();
            return null;
        }
        int unused = text.hashCode(); // outside the lock; String caches it
        synchronized (this) {
            int[] ids = map.get(text);
            if (ids == null) {
                misses++;
            } else {
                hits++;
            }
            return ids;
        }
    }

    /** Remembers {@code ids} for {@code text} unless the text is over the length cap. */
    void put(String text, int[] ids) {
        if (text.length() > maxChars || maxEntries == 0) {
            return;
        }
        int unused = text.hashCode(); // outside the lock
        synchronized (this) {
            map.put(text, ids);
        }
    }

    /**
     * The figures now: one consistent snapshot, except that misses that never reach the map (texts over the
     * cap, or a cache of no entries) are counted without the lock.
     *
     * @return the counts now
     */
    public Stats stats() {
        long over = tooLong.sum();
        long other = bypassed.sum();
        synchronized (this) {
            return new Stats(hits, misses + over + other, over, evictions, map.size(), maxEntries);
        }
    }

    /**
     * Most entries held.
     *
     * @return the entry cap, 0 or more
     */
    public int maxEntries() {
        return maxEntries;
    }

    /**
     * Longest text, in characters, that is cached.
     *
     * @return the length cap in characters
     */
    public int maxChars() {
        return maxChars;
    }

    /** The cached texts, least recently used first (tests). */
    synchronized java.util.List<String> textsEldestFirst() {
        return new java.util.ArrayList<>(map.keySet());
    }

    @Override
    public String toString() {
        return "TokenCache" + stats();
    }
}
