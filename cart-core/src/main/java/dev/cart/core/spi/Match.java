package dev.cart.core.spi;

import dev.cart.core.PromptKey;
import java.util.List;

/**
 * What the prefix tree knows about one {@link PromptKey}: how much of the key the tree knows, and which
 * replicas hold how much of it.
 *
 * <p>The tree knows nothing of the request being routed: its holders may include replicas that are not
 * candidates for it (excluded on a retry, at their cap, down, not serving the model), and
 * {@link #matchedLength()} may be held only by such a replica. A policy must choose a candidate
 * ({@link RoutingPolicy}); {@link RoutingContext#candidateHolders()} gives the holders that are.
 *
 * @param matchedLength longest matched prefix in units (a multiple of the key's block size), whoever holds it
 * @param keyLength     length of the whole key in units
 * @param holders       every replica that holds some matched prefix, candidate or not, each with the length
 *                      it holds, longest first (so {@code holders.get(0)} holds {@code matchedLength})
 */
public record Match(int matchedLength, int keyLength, List<Holding> holders) {

    /**
     * One replica holding a prefix of the key.
     *
     * @param replica       the replica
     * @param matchedLength the prefix length (units) it holds
     */
    public record Holding(Replica replica, int matchedLength) {}

    /**
     * Copies {@code holders}.
     *
     * @param matchedLength longest matched prefix in units, whoever holds it
     * @param keyLength     length of the whole key in units
     * @param holders       every replica that holds some matched prefix, longest first
     */
    public Match {
        holders = List.copyOf(holders);
    }

    /**
     * No match: nothing of a key of {@code keyLength} units is known.
     *
     * @param keyLength the key's length in units
     * @return a match with no holders
     */
    public static Match none(int keyLength) {
        return new Match(0, keyLength, List.of());
    }

    /**
     * Matched fraction of the key, in [0, 1]; 0 for an empty key.
     *
     * @return {@code matchedLength / keyLength}, in [0, 1]
     */
    public double ratio() {
        return keyLength == 0 ? 0.0 : (double) matchedLength / keyLength;
    }

    /**
     * The prefix length {@code replica} holds, 0 if none.
     *
     * @param replica a replica (compared by identity)
     * @return the units of the key it holds; 0 if it holds none
     */
    public int matchedLength(Replica replica) {
        for (Holding h : holders) {
            if (h.replica() == replica) {
                return h.matchedLength();
            }
        }
        return 0;
    }
}
