package dev.cart.kvevents;

/**
 * The per-stream half of the block index: the engine's hash of each block it holds to CART's key of that
 * block, with the tiers it is held in, plus the order blocks were first stored in (for the memory cap).
 * CART never reproduces the engine's hash: a stored block's key is computed from its parent's key (found
 * here) and its tokens; a removal finds the key here.
 *
 * <p>Design: open addressing with linear probing over one {@code long[]} of (engine hash, value) pairs, the
 * value being CART's key (its two low bits are always 0) with the tier bits ({@link KvEvent#GPU},
 * {@link KvEvent#OFFLOAD}) in those two bits; the engine hash 0 lives in a field of its own. Deletion shifts
 * the following entries back (no tombstones). Insertion order is a ring of engine hashes: a block stored again
 * after a removal is appended again, and entries of blocks since removed are skipped when the ring is read
 * (or dropped when it is compacted, once it holds more than 1.5 times the live blocks). The ring's order is
 * "first stored since last removed", approximately: a block removed and stored again may keep an older place.
 *
 * <p>Not thread-safe: its stream's writer owns it (under the index's lock).
 */
final class EngineMap {

    private static final double MAX_LOAD = 0.8;
    private static final double LOAD_AFTER_GROW = 0.53;
    private static final int MIN_CAPACITY = 16;

    private long[] table = new long[2 * MIN_CAPACITY];
    private int size;
    private boolean hasZero;
    private long zeroValue;

    private long[] ring = new long[MIN_CAPACITY];
    private int ringHead;
    private int ringSize;

    private static int home(long hash, int capacity) {
        long h = hash * 0x9E3779B97F4A7C15L; // engine hashes are hashes, but spread them anyway
        return (int) (((h >>> 32) * capacity) >>> 32);
    }

    int size() {
        return size + (hasZero ? 1 : 0);
    }

    /** The value (key with tier bits) of {@code hash}, or 0 if absent. */
    long get(long hash) {
        if (hash == 0) {
            return hasZero ? zeroValue : 0;
        }
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(hash, cap);
        for (; ; ) {
            long k = t[i << 1];
            if (k == hash) {
                return t[(i << 1) + 1];
            }
            if (k == 0) {
                return 0;
            }
            if (++i == cap) {
                i = 0;
            }
        }
    }

    /**
     * Sets {@code hash}'s value (a new block is appended to the insertion order).
     *
     * @param value a key with tier bits, never 0
     */
    void put(long hash, long value) {
        if (hash == 0) {
            if (!hasZero) {
                hasZero = true;
                appendOrder(0);
            }
            zeroValue = value;
            return;
        }
        if (size + 1 > (table.length >>> 1) * MAX_LOAD) {
            grow();
        }
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(hash, cap);
        for (; ; ) {
            long k = t[i << 1];
            if (k == hash) {
                t[(i << 1) + 1] = value;
                return;
            }
            if (k == 0) {
                t[i << 1] = hash;
                t[(i << 1) + 1] = value;
                size++;
                appendOrder(hash);
                return;
            }
            if (++i == cap) {
                i = 0;
            }
        }
    }

    /** Removes {@code hash}; its value, or 0 if it was absent. */
    long remove(long hash) {
        if (hash == 0) {
            if (!hasZero) {
                return 0;
            }
            hasZero = false;
            return zeroValue;
        }
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(hash, cap);
        for (; ; ) {
            long k = t[i << 1];
            if (k == 0) {
                return 0;
            }
            if (k == hash) {
                break;
            }
            if (++i == cap) {
                i = 0;
            }
        }
        long value = t[(i << 1) + 1];
        // shift back the entries of the cluster that would no longer be found past the hole
        int hole = i;
        int j = i;
        for (; ; ) {
            if (++j == cap) {
                j = 0;
            }
            long k = t[j << 1];
            if (k == 0) {
                break;
            }
            int h = home(k, cap);
            boolean movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
            if (movable) {
                t[hole << 1] = k;
                t[(hole << 1) + 1] = t[(j << 1) + 1];
                hole = j;
            }
        }
        t[hole << 1] = 0;
        t[(hole << 1) + 1] = 0;
        size--;
        return value;
    }

    /**
     * Removes the block first stored longest ago and returns its engine hash in {@code out[0]} and its value
     * in {@code out[1]}; false when the map is empty.
     */
    boolean removeOldest(long[] out) {
        while (ringSize > 0) {
            long h = ring[ringHead];
            ringHead = ringHead + 1 == ring.length ? 0 : ringHead + 1;
            ringSize--;
            long v = remove(h);
            if (v != 0) {
                out[0] = h;
                out[1] = v;
                return true;
            }
        }
        // the order lost track of some blocks (cannot happen unless it was compacted wrongly): any will do
        if (hasZero) {
            out[0] = 0;
            out[1] = remove(0);
            return true;
        }
        for (int j = 0; j < table.length; j += 2) {
            if (table[j] != 0) {
                long h = table[j];
                out[0] = h;
                out[1] = remove(h);
                return true;
            }
        }
        return false;
    }

    /** What {@link #forEach} calls with each entry. */
    @FunctionalInterface
    interface EntryAction {
        void accept(long hash, long value);
    }

    /** Calls {@code action} with every (engine hash, value). The map must not change meanwhile. */
    void forEach(EntryAction action) {
        if (hasZero) {
            action.accept(0, zeroValue);
        }
        for (int j = 0; j < table.length; j += 2) {
            if (table[j] != 0) {
                action.accept(table[j], table[j + 1]);
            }
        }
    }

    /** Empties the map and its order, keeping small arrays. */
    void clear() {
        table = new long[2 * MIN_CAPACITY];
        size = 0;
        hasZero = false;
        ring = new long[MIN_CAPACITY];
        ringHead = 0;
        ringSize = 0;
    }

    /** Bytes of the arrays. */
    long bytes() {
        return 32L + 8L * table.length + 8L * ring.length;
    }

    private void grow() {
        long[] old = table;
        int cap = Math.max(MIN_CAPACITY, (int) Math.min(Integer.MAX_VALUE / 2 - 8, (size + 1) / LOAD_AFTER_GROW + 1));
        long[] t = new long[2 * cap];
        for (int j = 0; j < old.length; j += 2) {
            long k = old[j];
            if (k != 0) {
                int i = home(k, cap);
                while (t[i << 1] != 0) {
                    if (++i == cap) {
                        i = 0;
                    }
                }
                t[i << 1] = k;
                t[(i << 1) + 1] = old[j + 1];
            }
        }
        table = t;
    }

    private void appendOrder(long hash) {
        if (ringSize == ring.length) {
            if (ringSize > size() * 3 / 2 + MIN_CAPACITY) {
                compactOrder();
            }
            if (ringSize == ring.length) {
                long[] r = new long[ring.length + (ring.length >> 1)];
                for (int k = 0; k < ringSize; k++) {
                    r[k] = ring[(ringHead + k) % ring.length];
                }
                ring = r;
                ringHead = 0;
            }
        }
        int tail = ringHead + ringSize;
        if (tail >= ring.length) {
            tail -= ring.length;
        }
        ring[tail] = hash;
        ringSize++;
    }

    /**
     * Keeps, in order, only the ring entries of blocks held now, each once (its latest entry): the entry of
     * a block removed since is dropped, and of several entries of one block the newest stands for it.
     */
    private void compactOrder() {
        long[] kept = new long[Math.max(MIN_CAPACITY, size() + (size() >> 1) + 1)];
        int n = 0;
        EngineMap seen = new EngineMap();
        for (int k = ringSize - 1; k >= 0; k--) {
            long h = ring[(ringHead + k) % ring.length];
            if (get(h) != 0 && seen.get(h) == 0) {
                seen.putQuiet(h);
                kept[n++] = h;
            }
        }
        // kept is newest first: reverse into ring order
        for (int a = 0, b = n - 1; a < b; a++, b--) {
            long x = kept[a];
            kept[a] = kept[b];
            kept[b] = x;
        }
        ring = kept;
        ringHead = 0;
        ringSize = n;
    }

    /** A put that records no order (the compaction's scratch set). */
    private void putQuiet(long hash) {
        if (hash == 0) {
            hasZero = true;
            zeroValue = 1;
            return;
        }
        if (size + 1 > (table.length >>> 1) * MAX_LOAD) {
            grow();
        }
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(hash, cap);
        while (t[i << 1] != 0) {
            if (++i == cap) {
                i = 0;
            }
        }
        t[i << 1] = hash;
        t[(i << 1) + 1] = 1;
        size++;
    }
}
