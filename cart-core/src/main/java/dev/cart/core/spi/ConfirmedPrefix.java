package dev.cart.core.spi;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteRequest;

/**
 * What the replicas' engines themselves report holding of one request's prompt (precise mode, for example
 * from vLLM's KV-cache events), per replica, as a host attaches it to the request
 * ({@link RouteRequest#withConfirmed}). The router reads it beside its prefix tree: for a replica the view
 * {@linkplain #covers covers}, the policy's {@link Match} carries the view's length in place of the tree's
 * guess; for any other replica (its engine publishes nothing, or its view is catching up or was lost) the
 * tree's guess stands. Every policy therefore uses it without a change.
 *
 * <p>Lengths are in the units of the request's {@link PromptKey} (characters or tokens), as the tree's are:
 * the view converts what the engine reports (its own tokens) to the key's units.
 *
 * <p>Made for one request and read on the routing thread; implementations must be cheap (no I/O) and need
 * not be thread-safe beyond safe publication.
 */
public interface ConfirmedPrefix {

    /**
     * True if the router should take this view's {@link #matchedLength} for {@code replica} instead of the
     * tree's: the replica's engine reports its blocks and the view is consistent now.
     *
     * @param replica a replica of the pool (never a load view of one)
     * @return whether the view decides for it
     */
    boolean covers(Replica replica);

    /**
     * The prefix of the request's key, in key units, that {@code replica} holds (confirmed by its engine, or
     * about to be created there by a request just routed to it); at most the key's length, a multiple of the
     * key's block size. Read only for a replica the view {@linkplain #covers covers}.
     *
     * @param replica a replica of the pool
     * @return the held prefix, 0 if none
     */
    int matchedLength(Replica replica);
}
