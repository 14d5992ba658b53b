package dev.cart.kvevents;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The global half of the block index: CART's key of a block to the set of streams (bits of a 64-bit mask)
 * whose engine holds it. Read on the routing path without a lock; written by one writer at a time (the
 * index's lock).
 *
 * <p>Design: open addressing with linear probing over one {@code long[]} of (key, mask) pairs, so a probe
 * touches one cache line. Keys are never 0 (0 marks an empty slot) and never move while a table is in use:
 * a key whose mask falls to 0 stays as a dead entry (its mask 0 reads as "held by nobody"), reused if the
 * key comes back. Growth, and the removal of dead entries, copy the live entries into a new table that is
 * then published with one volatile store; a reader still on the old table sees the state before the copy,
 * which is a consistent past. A writer stores a new entry's mask before its key and every mask with release
 * semantics; a reader loads with acquire, so a key it sees comes with a mask at least as new as the key.
 * Capacities are not powers of two (the home slot is a multiply-shift of the key's high bits), so a table
 * grows by half instead of doubling: load stays between about 0.53 and 0.8, which keeps memory per entry near
 * 24 bytes.
 */
final class KeyTable {

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
    private static final double MAX_LOAD = 0.8;
    private static final double LOAD_AFTER_COPY = 0.53;
    private static final int MIN_CAPACITY = 64;

    private volatile long[] table = new long[2 * MIN_CAPACITY];
    /** Slots with a key, live or dead. Writer only. */
    private int used;
    /** Keys with a non-zero mask. Writer only (read racily for figures). */
    private volatile int live;

    static int home(long key, int capacity) {
        return (int) (((key >>> 32) * capacity) >>> 32);
    }

    /** The streams holding {@code key} (a mask), 0 if none. Lock-free; any thread. */
    long holders(long key) {
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(key, cap);
        for (; ; ) {
            long k = (long) SLOT.getAcquire(t, i << 1);
            if (k == key) {
                return (long) SLOT.getAcquire(t, (i << 1) + 1);
            }
            if (k == 0) {
                return 0;
            }
            if (++i == cap) {
                i = 0;
            }
        }
    }

    /** Adds {@code bits} to {@code key}'s mask. Writer only. */
    void add(long key, long bits) {
        if (used + 1 > (table.length >>> 1) * MAX_LOAD) {
            copy();
        }
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(key, cap);
        for (; ; ) {
            long k = t[i << 1];
            if (k == key) {
                long m = t[(i << 1) + 1];
                if (m == 0) {
                    live++;
                }
                SLOT.setRelease(t, (i << 1) + 1, m | bits);
                return;
            }
            if (k == 0) {
                SLOT.setRelease(t, (i << 1) + 1, bits);
                SLOT.setRelease(t, i << 1, key);
                used++;
                live++;
                return;
            }
            if (++i == cap) {
                i = 0;
            }
        }
    }

    /** Takes {@code bits} out of {@code key}'s mask (nothing if the key is absent). Writer only. */
    void remove(long key, long bits) {
        long[] t = table;
        int cap = t.length >>> 1;
        int i = home(key, cap);
        for (; ; ) {
            long k = t[i << 1];
            if (k == key) {
                long m = t[(i << 1) + 1];
                long n = m & ~bits;
                if (n != m) {
                    SLOT.setRelease(t, (i << 1) + 1, n);
                    if (n == 0) {
                        live--;
                    }
                }
                return;
            }
            if (k == 0) {
                return;
            }
            if (++i == cap) {
                i = 0;
            }
        }
    }

    /** Copies the live entries into a table sized for them, dropping the dead ones. Writer only. */
    private void copy() {
        long[] old = table;
        int cap = Math.max(MIN_CAPACITY, (int) Math.min(Integer.MAX_VALUE / 2 - 8, (live + 1) / LOAD_AFTER_COPY + 1));
        long[] t = new long[2 * cap];
        int n = 0;
        for (int j = 0; j < old.length; j += 2) {
            long k = old[j];
            long m = old[j + 1];
            if (k != 0 && m != 0) {
                int i = home(k, cap);
                while (t[i << 1] != 0) {
                    if (++i == cap) {
                        i = 0;
                    }
                }
                t[i << 1] = k;
                t[(i << 1) + 1] = m;
                n++;
            }
        }
        used = n;
        live = n;
        table = t; // volatile: publishes the filled table
    }

    /** Keys held by some stream now. */
    int size() {
        return live;
    }

    /** Bytes of the table array. */
    long bytes() {
        return 16L + 8L * table.length;
    }
}
