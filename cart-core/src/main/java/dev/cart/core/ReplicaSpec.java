package dev.cart.core;

import dev.cart.core.internal.Checks;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * One replica of a {@link ManagedReplicaSet}.
 *
 * @param id          stable identifier, normally the base URL
 * @param maxLoad     admission cap on in-flight requests
 * @param loadPenalty constant added to the load when comparing replicas
 * @param models      the models it serves at start ({@link ManagedReplicaSet.Member#models(java.util.Collection)}
 *                    replaces them at run time); empty means any model
 */
public record ReplicaSpec(String id, int maxLoad, int loadPenalty, List<String> models) {

    /** Default {@code max_load}: vLLM's default for concurrently running sequences. */
    public static final int DEFAULT_MAX_LOAD = 256;

    /**
     * Checks that the id is not blank, the cap at least 1, the penalty not negative and no model name
     * blank; repeated model names count once.
     *
     * @param id          stable identifier, normally the base URL; not blank
     * @param maxLoad     admission cap on in-flight requests, at least 1
     * @param loadPenalty constant added to the load when comparing replicas, 0 or more
     * @param models      the models it serves at start; empty for any model
     * @throws IllegalArgumentException if an argument is out of range
     * @throws NullPointerException if {@code id} or {@code models} is null
     */
    public ReplicaSpec {
        Objects.requireNonNull(id, "id");
        if (id.isBlank()) {
            throw new IllegalArgumentException("a replica id must not be blank");
        }
        Checks.atLeast("maxLoad of " + id, maxLoad, 1);
        Checks.atLeast("loadPenalty of " + id, loadPenalty, 0);
        models = List.copyOf(modelNames(id, models));
    }

    /**
     * A replica that serves any model.
     *
     * @param id          stable identifier, normally the base URL; not blank
     * @param maxLoad     admission cap on in-flight requests, at least 1
     * @param loadPenalty constant added to the load when comparing replicas, 0 or more
     * @throws IllegalArgumentException if an argument is out of range
     */
    public ReplicaSpec(String id, int maxLoad, int loadPenalty) {
        this(id, maxLoad, loadPenalty, List.of());
    }

    /**
     * A replica with the default cap ({@link #DEFAULT_MAX_LOAD}) and no penalty, serving any model.
     *
     * @param id its identifier, normally the base URL
     * @return the spec
     */
    public static ReplicaSpec of(String id) {
        return new ReplicaSpec(id, DEFAULT_MAX_LOAD, 0);
    }

    /**
     * The same replica, serving exactly {@code models} (empty: any model).
     *
     * @param models the model names, none blank; empty for any model
     * @return a new spec; this one is unchanged
     * @throws IllegalArgumentException if a name is blank
     */
    public ReplicaSpec withModels(List<String> models) {
        return new ReplicaSpec(id, maxLoad, loadPenalty, models);
    }

    /** {@code models} without repeats, in their order; null and blank names are refused, naming the replica. */
    static List<String> modelNames(String id, Iterable<String> models) {
        Objects.requireNonNull(models, "models");
        LinkedHashSet<String> names = new LinkedHashSet<>();
        for (String m : models) {
            if (m == null || m.isBlank()) {
                throw new IllegalArgumentException("a model name of replica " + id + " must not be blank");
            }
            names.add(m);
        }
        return new ArrayList<>(names);
    }
}
