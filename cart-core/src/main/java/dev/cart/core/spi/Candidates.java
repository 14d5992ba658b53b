package dev.cart.core.spi;

import java.util.Comparator;
import java.util.List;
import java.util.random.RandomGenerator;
import org.jspecify.annotations.Nullable;

/** The one "least by some order, ties at random" choice policies make. Stateless: safe from any thread. */
public final class Candidates {

    /** By {@link Replica#load()}: in-flight plus penalty. */
    public static final Comparator<Replica> BY_LOAD = Comparator.comparingLong(Replica::load);

    private Candidates() {}

    /**
     * The least of {@code replicas} in {@code order}; among equals, one chosen uniformly at random
     * (reservoir sampling: each of {@code k} tied replicas is kept with probability {@code 1/k}, and the
     * random source is drawn only on ties).
     *
     * @param replicas the replicas to choose among
     * @param order    the order; the least replica in it wins
     * @param random   the source drawn from on ties
     * @return the least replica, or null if {@code replicas} is empty
     */
    public static @Nullable Replica least(
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

    /**
     * The least of {@code replicas} by {@linkplain RoutingContext#pendingPrefill pending prefill}, then by
     * {@link Replica#load()}; among equals, one chosen uniformly at random from {@code ctx.random()} (drawn
     * only on ties, as {@link #least}). Reads each replica's pending prefill once; allocates nothing. Null
     * for an empty list.
     *
     * @param replicas the replicas to choose among (candidates of {@code ctx})
     * @param ctx      the decision's context, whose pending prefill and randomness are used
     * @return the least replica, or null if {@code replicas} is empty
     */
    public static @Nullable Replica leastByPendingPrefill(List<? extends Replica> replicas, RoutingContext ctx) {
        Replica best = null;
        long bestPending = 0;
        long bestLoad = 0;
        int ties = 0;
        for (int i = 0; i < replicas.size(); i++) {
            Replica r = replicas.get(i);
            long pending = ctx.pendingPrefill(r);
            long load = r.load();
            int c = best == null
                    ? -1
                    : pending != bestPending ? Long.compare(pending, bestPending) : Long.compare(load, bestLoad);
            if (c < 0) {
                best = r;
                bestPending = pending;
                bestLoad = load;
                ties = 1;
            } else if (c == 0 && ctx.random().nextInt(++ties) == 0) {
                best = r;
            }
        }
        return best;
    }
}
