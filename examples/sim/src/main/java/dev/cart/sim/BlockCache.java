package dev.cart.sim;

import java.util.HashMap;
import java.util.Map;

/**
 * The KV-cache block pool of one simulated replica, as vLLM's prefix caching keeps it.
 *
 * <p>Design: the pool has a fixed number of physical blocks. A block is either <em>hashed</em> (a full
 * block of a request's sequence, prompt or generated tokens, identified by the chained hash of its whole
 * prefix, so another request with the same prefix can reuse it) or <em>private</em> (a partial block, a
 * block of generated tokens the request's hashes do not cover, or a duplicate of a block someone else
 * registered first: counted, never shared). A hashed block carries a reference count:
 * the running requests using it. At zero it stays cached but becomes <em>evictable</em> and sits in an
 * LRU list; an allocation that finds no free block evicts the least recently released evictable block.
 * Requests release their blocks last-first, so a request's tail blocks are evicted before its head, as
 * vLLM's free-block queue does.
 *
 * <p>Lookups are by hash in a {@link HashMap}; the LRU list is intrusive (links in the block), so every
 * operation is O(1) per block. Not thread-safe: one engine owns it and serialises access.
 */
final class BlockCache {

    private static final class Block {
        final long hash;
        int refs;
        Block prev;
        Block next;

        Block(long hash) {
            this.hash = hash;
        }
    }

    private final int capacity;
    private final Map<Long, Block> blocks = new HashMap<>();
    private final Block lru = new Block(0); // sentinel: lru.next is the eviction candidate
    private int evictable;
    private int privateBlocks;
    private long evictions;
    /** Hears each eviction (the replica's KV events); none by default. */
    private java.util.function.LongConsumer onEvict = h -> {};

    BlockCache(int capacityBlocks) {
        if (capacityBlocks < 1) {
            throw new IllegalArgumentException("capacity must be at least one block, was " + capacityBlocks);
        }
        this.capacity = capacityBlocks;
        lru.prev = lru;
        lru.next = lru;
    }

    int capacity() {
        return capacity;
    }

    /** Tells {@code listener} the hash of every block evicted from now on. */
    void onEvict(java.util.function.LongConsumer listener) {
        this.onEvict = listener;
    }

    /**
     * Drops every cached block no running request uses, as a restarted engine starts with an empty cache
     * (no eviction is reported: the process that held them is gone).
     */
    void dropEvictable() {
        while (lru.next != lru) {
            Block victim = lru.next;
            unlink(victim);
            evictable--;
            blocks.remove(victim.hash);
        }
    }

    /** Blocks in use or cached: hashed blocks (pinned or evictable) plus private blocks. */
    int used() {
        return blocks.size() + privateBlocks;
    }

    /** Blocks never handed out or given back. */
    int free() {
        return capacity - used();
    }

    /** Hashed blocks no running request uses. */
    int evictable() {
        return evictable;
    }

    /** Hashed blocks present (pinned or evictable). */
    int cached() {
        return blocks.size();
    }

    int privateBlocks() {
        return privateBlocks;
    }

    /** Evictions since creation. */
    long evictions() {
        return evictions;
    }

    boolean contains(long hash) {
        return blocks.containsKey(hash);
    }

    /** Reference count of the block with {@code hash}, or -1 if it is not cached. */
    int refs(long hash) {
        Block b = blocks.get(hash);
        return b == null ? -1 : b.refs;
    }

    /** The number of leading blocks of {@code hashes} (at most {@code max}) that are cached. */
    int matchPrefix(long[] hashes, int max) {
        int n = Math.min(max, hashes.length);
        for (int i = 0; i < n; i++) {
            if (!blocks.containsKey(hashes[i])) {
                return i;
            }
        }
        return n;
    }

    /** How many of the first {@code n} blocks of {@code hashes} (all cached) are evictable now. */
    int evictableAmong(long[] hashes, int n) {
        int e = 0;
        for (int i = 0; i < n; i++) {
            if (blocks.get(hashes[i]).refs == 0) {
                e++;
            }
        }
        return e;
    }

    /** Blocks an allocation could obtain now: free ones plus evictable ones. */
    int available() {
        return free() + evictable;
    }

    /** Takes a reference on each of the first {@code n} blocks of {@code hashes}, which must be cached. */
    void pin(long[] hashes, int n) {
        for (int i = 0; i < n; i++) {
            Block b = blocks.get(hashes[i]);
            if (b == null) {
                throw new IllegalStateException("pinning a block that is not cached");
            }
            ref(b);
        }
    }

    private void ref(Block b) {
        if (b.refs++ == 0) {
            unlink(b);
            evictable--;
        }
    }

    /**
     * Hands out {@code n} private blocks, evicting least recently used evictable blocks as needed.
     *
     * @return false, changing nothing, if fewer than {@code n} blocks are free or evictable
     */
    boolean allocate(int n) {
        if (n <= 0) {
            return true;
        }
        if (available() < n) {
            return false;
        }
        while (free() < n) {
            Block victim = lru.next;
            unlink(victim);
            evictable--;
            blocks.remove(victim.hash);
            evictions++;
            onEvict.accept(victim.hash);
        }
        privateBlocks += n;
        return true;
    }

    /** Gives back {@code n} private blocks. */
    void freePrivate(int n) {
        if (n < 0 || n > privateBlocks) {
            throw new IllegalStateException("freeing " + n + " of " + privateBlocks + " private blocks");
        }
        privateBlocks -= n;
    }

    /**
     * Registers one just-computed full block, held so far as a private block of the caller. If
     * the hash is new, the private block becomes the cached block (one reference). If another request
     * registered it first, the caller takes a reference on that one and its own copy is freed.
     *
     * @return true if the block is new to the cache (an engine reports it stored), false if it was there
     */
    boolean register(long hash) {
        if (privateBlocks < 1) {
            throw new IllegalStateException("registering a block without a private block to convert");
        }
        privateBlocks--;
        Block b = blocks.get(hash);
        if (b != null) {
            ref(b);
            return false;
        }
        b = new Block(hash);
        b.refs = 1;
        blocks.put(hash, b);
        return true;
    }

    /**
     * Drops one reference on each of the first {@code n} blocks of {@code hashes}, last block first; a
     * block left unreferenced becomes the most recently used evictable block.
     */
    void release(long[] hashes, int n) {
        for (int i = n - 1; i >= 0; i--) {
            Block b = blocks.get(hashes[i]);
            if (b == null || b.refs <= 0) {
                throw new IllegalStateException("releasing a block that is not held");
            }
            if (--b.refs == 0) {
                linkLast(b);
                evictable++;
            }
        }
    }

    private void linkLast(Block b) {
        b.prev = lru.prev;
        b.next = lru;
        lru.prev.next = b;
        lru.prev = b;
    }

    private static void unlink(Block b) {
        b.prev.next = b.next;
        b.next.prev = b.prev;
        b.prev = null;
        b.next = null;
    }

    /** Hashes of the evictable blocks, next victim first (for tests). */
    long[] evictionOrder() {
        long[] out = new long[evictable];
        int i = 0;
        for (Block b = lru.next; b != lru; b = b.next) {
            out[i++] = b.hash;
        }
        return out;
    }
}
