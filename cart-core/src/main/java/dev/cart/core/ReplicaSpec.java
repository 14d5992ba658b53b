package dev.cart.core;

import java.util.Objects;

/**
 * One replica of a {@link ManagedReplicaSet}.
 *
 * @param id          stable identifier, normally the base URL
 * @param maxLoad     admission cap on in-flight requests
 * @param loadPenalty constant added to the load when comparing replicas
 */
public record ReplicaSpec(String id, int maxLoad, int loadPenalty) {

    /** Default {@code max_load}: vLLM's default for concurrently running sequences. */
    public static final int DEFAULT_MAX_LOAD = 256;

    /** Checks that the id is not blank, the cap at least 1 and the penalty not negative. */
    public ReplicaSpec {
        Objects.requireNonNull(id, "id");
        if (id.isBlank()) {
            throw new IllegalArgumentException("a replica id must not be blank");
        }
        Checks.atLeast("maxLoad of " + id, maxLoad, 1);
        Checks.atLeast("loadPenalty of " + id, loadPenalty, 0);
    }

    /**
     * A replica with the default cap ({@link #DEFAULT_MAX_LOAD}) and no penalty.
     *
     * @param id its identifier, normally the base URL
     * @return the spec
     */
    public static ReplicaSpec of(String id) {
        return new ReplicaSpec(id, DEFAULT_MAX_LOAD, 0);
    }
}
