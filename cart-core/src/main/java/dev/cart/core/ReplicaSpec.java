package dev.cart.core;

import java.util.Objects;

/**
 * One configured replica (config list {@code workers}).
 *
 * @param id          stable identifier, normally the base URL
 * @param maxLoad     admission cap on in-flight requests ({@code max_load})
 * @param loadPenalty constant added to the load when comparing replicas ({@code load_penalty})
 */
public record ReplicaSpec(String id, int maxLoad, int loadPenalty) {

    /** Default {@code max_load}: vLLM's default for concurrently running sequences. */
    public static final int DEFAULT_MAX_LOAD = 256;

    public ReplicaSpec {
        Objects.requireNonNull(id, "id");
        if (id.isBlank()) {
            throw new IllegalArgumentException("a replica id must not be blank");
        }
        Checks.atLeast("max_load of " + id, maxLoad, 1);
        Checks.atLeast("load_penalty of " + id, loadPenalty, 0);
    }

    public static ReplicaSpec of(String id) {
        return new ReplicaSpec(id, DEFAULT_MAX_LOAD, 0);
    }
}
