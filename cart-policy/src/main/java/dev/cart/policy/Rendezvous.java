package dev.cart.policy;

import dev.cart.core.spi.Replica;
import java.util.List;

/**
 * Rendezvous (highest-random-weight) hashing with an optional load bound.
 *
 * <p>Every replica gets a score from the key's hash and the replica's id; the highest score wins. Two
 * routers that see the same replicas pick the same one for the same key without sharing state, and
 * removing a replica moves only the keys it won. With a load factor {@code c > 0}, a replica whose load
 * would exceed {@code ceil(c * (total + 1) / n)} is passed over for the next-highest score (consistent
 * hashing with bounded loads, Mirrokni, Thorup and Zadimoghaddam 2018), so one hot key cannot pile the
 * pool onto one replica. Stateless and thread-safe.
 */
final class Rendezvous {

    private Rendezvous() {}

    /**
     * The highest-scoring replica whose load is within the bound (or the least loaded if none is).
     *
     * @param loadFactor 0 for no bound, else the factor {@code c} (&gt; 1)
     */
    static Replica pick(long keyHash, List<Replica> candidates, double loadFactor) {
        int n = candidates.size();
        long cap = Long.MAX_VALUE;
        if (loadFactor > 0) {
            long total = 0;
            for (int i = 0; i < n; i++) {
                total += candidates.get(i).load();
            }
            cap = boundedCap(loadFactor, total, n);
        }
        Replica best = null;
        long bestScore = 0;
        Replica fallback = null;
        long fallbackLoad = Long.MAX_VALUE;
        for (int i = 0; i < n; i++) {
            Replica r = candidates.get(i);
            long load = r.load();
            if (load < fallbackLoad) {
                fallback = r;
                fallbackLoad = load;
            }
            if (load + 1 > cap) {
                continue;
            }
            long score = score(keyHash, r);
            if (best == null || Long.compareUnsigned(score, bestScore) > 0) {
                best = r;
                bestScore = score;
            }
        }
        if (best != null) {
            return best;
        }
        if (fallback == null) {
            throw new IllegalArgumentException("no candidates");
        }
        return fallback;
    }

    /**
     * The most load one replica may carry after taking one more request: {@code ceil(c * (total + 1) / n)},
     * the bound of consistent hashing with bounded loads (also the bounded-load guard of the cache-aware
     * policy).
     */
    static long boundedCap(double c, long total, int n) {
        return (long) Math.ceil(c * (total + 1) / n);
    }

    static long score(long keyHash, Replica r) {
        return mix(keyHash ^ idHash(r.id()));
    }

    /** 64-bit FNV-1a of the id, mixed: stable across processes and JVM versions. */
    static long idHash(String id) {
        long h = 0xCBF29CE484222325L;
        for (int i = 0; i < id.length(); i++) {
            h = (h ^ id.charAt(i)) * 0x100000001B3L;
        }
        return mix(h);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
