package dev.cart.core.spi;

import java.util.Comparator;
import java.util.List;
import java.util.random.RandomGenerator;

/** The one "least by some order, ties at random" choice policies make. */
public final class Candidates {

    /** By {@link Replica#load()}: in-flight plus penalty. */
    public static final Comparator<Replica> BY_LOAD = Comparator.comparingLong(Replica::load);

    /** By {@link Replica#pendingPrefill()}, then by {@link Replica#load()}. */
    public static final Comparator<Replica> BY_PENDING_PREFILL_THEN_LOAD =
            Comparator.comparingLong(Replica::pendingPrefill).thenComparingLong(Replica::load);

    private Candidates() {}

    /**
     * The least of {@code replicas} in {@code order}; among equals, one chosen uniformly at random
     * (reservoir sampling: each of {@code k} tied replicas is kept with probability {@code 1/k}, and the
     * random source is drawn only on ties). Null for an empty list.
     */
    public static Replica least(
            List<? extends Replica> replicas, Comparator<? super Replica> order, RandomGenerator random) {
        Replica best = null;
        int ties = 0;
        for (int i = 0; i < replicas.size(); i++) {
            Replica r = replicas.get(i);
            int c = best == null ? -1 : order.compare(r, best);
            if (c < 0) {
                best = r;
                ties = 1;
            } else if (c == 0 && random.nextInt(++ties) == 0) {
                best = r;
            }
        }
        return best;
    }
}
