package dev.cart.kvevents;

import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The write side of the block index: applies one stream's decoded events to its {@link EngineMap} and to the
 * global {@link KeyTable}.
 *
 * <p>Design: a stored block's key is its tokens chained on its parent's key ({@link BlockKeys}), the parent
 * found in the stream's map by the engine's hash, or the chain's seed (model or adapter, salt) for a first
 * block. A block whose parent the stream does not know is an orphan: counted, not indexed, no parent guessed.
 * Only full-attention groups are indexed; a group an event calls otherwise is remembered, and its removals
 * (they reuse hashes) are skipped too. The map's values carry the tiers a block is held in (GPU, offload) in
 * the key's two low bits; a removal takes a tier off, and the block leaves the index once it has left every
 * tier. Above {@code maxBlocksPerStream} a stream's oldest blocks (first stored) are evicted and counted.
 *
 * <p>Concurrency: every change takes the index's write lock, so the key table has one writer at a time (each
 * stream's thread applies its batches under it); lookups read the key table without it.
 */
final class BlockWriter {

    /** What applying one batch did. */
    static final class Applied {
        int stored;
        int removed;
        int orphans;
        int capEvicted;
        boolean cleared;
    }

    private final KeyTable keys;
    private final ReentrantLock lock;
    private final int blockSize;
    private final int maxBlocksPerStream;
    /** The cap's eviction reads (hash, value) here; used under the lock only. */
    private final long[] pair = new long[2];

    BlockWriter(KeyTable keys, ReentrantLock lock, int blockSize, int maxBlocksPerStream) {
        this.keys = keys;
        this.lock = lock;
        this.blockSize = blockSize;
        this.maxBlocksPerStream = maxBlocksPerStream;
    }

    /** Applies one decoded batch's events to {@code s}, in order, under the lock. */
    Applied apply(StreamState s, List<KvEvent> events) {
        Applied a = new Applied();
        lock.lock();
        try {
            for (int i = 0; i < events.size(); i++) {
                KvEvent e = events.get(i);
                if (e instanceof KvEvent.Stored st) {
                    stored(s, st, a);
                } else if (e instanceof KvEvent.Removed rm) {
                    removed(s, rm, a);
                } else {
                    clear(s);
                    a.cleared = true;
                }
            }
            s.blocks = s.map.size();
        } finally {
            lock.unlock();
        }
        return a;
    }

    /** Drops every block of {@code s}. */
    void reset(StreamState s) {
        lock.lock();
        try {
            clear(s);
            s.blocks = 0;
        } finally {
            lock.unlock();
        }
    }

    private void clear(StreamState s) {
        long bit = s.bit;
        s.map.forEach((h, v) -> keys.remove(v & ~3L, bit));
        s.map.clear();
        s.offloadBlocks = 0;
    }

    private void stored(StreamState s, KvEvent.Stored e, Applied a) {
        int n = e.hashes.length;
        if (!e.fullAttention) {
            s.otherGroups.set(e.group);
            s.otherGroupBlocks += n;
            return;
        }
        if (e.tokens.length == 0) {
            // an offload placeholder: no tokens, so only blocks the stream knows can gain the tier
            for (long h : e.hashes) {
                long v = s.map.get(h);
                if (v != 0) {
                    tier(s, h, v, v | e.tier);
                }
            }
            return;
        }
        if (e.blockSize != blockSize) {
            s.blockSizeMismatches += n;
            return;
        }
        long parent;
        if (e.hasParent) {
            long pv = s.map.get(e.parent);
            if (pv == 0) {
                a.orphans += n;
                return;
            }
            parent = pv & ~3L;
        } else {
            parent = BlockKeys.root(e.lora != null ? e.lora : s.config.model(), e.salt);
        }
        for (int j = 0; j < n; j++) {
            long seed = e.extra == null ? parent : BlockKeys.withExtra(parent, e.extra[j]);
            long key = BlockKeys.block(e.tokens, j * blockSize, blockSize, seed);
            long h = e.hashes[j];
            long old = s.map.get(h);
            long tiers = e.tier;
            if (old != 0) {
                if ((old & ~3L) == key) {
                    tiers |= old & 3L;
                } else {
                    keys.remove(old & ~3L, s.bit); // the engine reused the hash for other tokens
                }
                tier(s, h, old, key | tiers);
            } else {
                s.map.put(h, key | tiers);
                if ((tiers & KvEvent.OFFLOAD) != 0) {
                    s.offloadBlocks++;
                }
            }
            keys.add(key, s.bit);
            a.stored++;
            parent = key;
        }
        while (s.map.size() > maxBlocksPerStream && s.map.removeOldest(pair)) {
            keys.remove(pair[1] & ~3L, s.bit);
            if ((pair[1] & KvEvent.OFFLOAD) != 0) {
                s.offloadBlocks--;
            }
            a.capEvicted++;
        }
    }

    /** Sets {@code h}'s value from {@code old} to {@code value}, keeping the offload count. */
    private static void tier(StreamState s, long h, long old, long value) {
        s.map.put(h, value);
        boolean was = (old & KvEvent.OFFLOAD) != 0;
        boolean is = (value & KvEvent.OFFLOAD) != 0;
        if (was != is) {
            s.offloadBlocks += is ? 1 : -1;
        }
    }

    private void removed(StreamState s, KvEvent.Removed e, Applied a) {
        if (s.otherGroups.get(e.group)) {
            return;
        }
        for (long h : e.hashes) {
            long v = s.map.get(h);
            if (v == 0) {
                continue;
            }
            long left = v & ~(long) e.tier;
            if ((left & 3L) == 0) {
                s.map.remove(h);
                keys.remove(v & ~3L, s.bit);
                if ((v & KvEvent.OFFLOAD) != 0) {
                    s.offloadBlocks--;
                }
                a.removed++;
            } else {
                tier(s, h, v, left);
            }
        }
    }
}
