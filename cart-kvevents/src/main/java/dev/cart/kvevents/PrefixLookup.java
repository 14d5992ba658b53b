package dev.cart.kvevents;

import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The read side of the block index, on the routing path: the prefix of a request's engine tokens each
 * replica holds ({@link KvIndex#lookup}).
 *
 * <p>Design: the request's whole blocks (at most those before its last token, as an engine always computes
 * the last token) are hashed 64 at a time, chained from the seed of its model and salt, then
 * probed in the {@link KeyTable}; the walk keeps the mask of the streams that held every block so far and
 * stops when it is empty, where hashing stops too (a prompt that diverges early is hashed no further than its
 * chunk). Each replica's confirmed prefix is where its last stream dropped out. Hashing runs branch-free
 * between the probes (probing inside the hashing loop was slower: the probes' branches stall it). The overlay
 * then raises each replica's prefix by the requests just routed there. Per lookup: the arrays of the match,
 * one chunk; nothing per block.
 *
 * <p>Concurrency: lock-free, any number of threads; it reads the key table and the registration
 * ({@link Replicas#snapshot}) through volatile references, while the streams' threads write.
 */
final class PrefixLookup {

    /** Blocks a lookup hashes before it probes them. */
    private static final int CHUNK = 64;

    private final int blockSize;
    private final KeyTable keys;
    private final Replicas replicas;
    private final Overlay overlay;
    private final LongSupplier ticker;

    PrefixLookup(int blockSize, KeyTable keys, Replicas replicas, Overlay overlay, LongSupplier ticker) {
        this.blockSize = blockSize;
        this.keys = keys;
        this.replicas = replicas;
        this.overlay = overlay;
        this.ticker = ticker;
    }

    /** See {@link KvIndex#lookup}; {@code tokens} is not null. */
    PreciseMatch find(int[] tokens, @Nullable String model, @Nullable String salt) {
        int bs = blockSize;
        int n = tokens.length == 0 ? 0 : (tokens.length - 1) / bs;
        long root = BlockKeys.root(model, salt);
        Replicas.Snapshot reg = replicas.snapshot;
        ReplicaEntry[] reps = reg.ordered;
        int[] slotOrd = reg.slotOrd;
        int[] confirmed = new int[reps.length];
        long alive = reg.bits;
        long[] chunk = new long[Math.min(n, CHUNK)];
        long parent = root;
        long first = 0;
        int i = 0;
        while (i < n && alive != 0) {
            int c = Math.min(chunk.length, n - i);
            for (int j = 0; j < c; j++) {
                parent = BlockKeys.block(tokens, (i + j) * bs, bs, parent);
                chunk[j] = parent;
            }
            if (i == 0) {
                first = chunk[0];
            }
            for (int j = 0; j < c && alive != 0; j++, i++) {
                long held = keys.holders(chunk[j]);
                long dropped = alive & ~held;
                while (dropped != 0) {
                    // a replica's prefix is where its last stream drops out: later drops overwrite earlier ones
                    confirmed[slotOrd[Long.numberOfTrailingZeros(dropped)]] = i;
                    dropped &= dropped - 1;
                }
                alive &= held;
            }
        }
        while (alive != 0) {
            confirmed[slotOrd[Long.numberOfTrailingZeros(alive)]] = i;
            alive &= alive - 1;
        }
        if (n > 0 && i == 0 && first == 0) {
            first = BlockKeys.block(tokens, 0, bs, root);
        }
        long now = ticker.getAsLong();
        int[] blocks = confirmed.clone();
        ReplicaMode[] modes = new ReplicaMode[reps.length];
        for (ReplicaEntry r : reps) {
            modes[r.ord] = replicas.mode(r, now, null);
        }
        if (n > 0) {
            overlay.extend(tokens, n, bs, root, first, blocks, now);
        }
        return new PreciseMatch(replicas, tokens, n, root, first, bs, confirmed, blocks, modes, reps);
    }
}
