package dev.cart.core.spi;

import dev.cart.core.ManagedReplicaSet;
import java.util.List;

/**
 * The pool the router chooses from. A host with its own service discovery or circuit breakers
 * implements this; otherwise use {@link ManagedReplicaSet}.
 *
 * <p>Implementations must be thread-safe: the router calls {@link #replicas()} from many routing threads at
 * once, while the host may be changing the membership; each call returns a consistent snapshot.
 */
@FunctionalInterface
public interface ReplicaSet {

    /**
     * The current members in a stable order. Called once per routing decision; must be cheap and must
     * not block. The returned list must not change afterwards (return a snapshot).
     *
     * @return the members, possibly empty; never modified after it is returned
     */
    List<? extends Replica> replicas();
}
