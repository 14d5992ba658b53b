package dev.cart.core.spi;

import dev.cart.core.ManagedReplicaSet;
import java.util.List;

/**
 * The pool the router chooses from. A host with its own service discovery or circuit breakers
 * implements this; otherwise use {@link ManagedReplicaSet}.
 */
@FunctionalInterface
public interface ReplicaSet {

    /**
     * The current members in a stable order. Called once per routing decision; must be cheap and must
     * not block. The returned list must not change afterwards (return a snapshot).
     */
    List<? extends Replica> replicas();
}
