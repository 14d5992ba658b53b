package dev.cart.core;

import java.util.Locale;

/** When the router records a routed prefix in the tree ({@code cache.learn}). */
public enum LearnMode {
    /** When the request is routed (the specification's behaviour): the next similar request follows at once. */
    ON_ROUTE,
    /** When the replica answered successfully ({@link Lease#succeeded()}): only routes that worked are learned. */
    ON_SUCCESS;

    /**
     * The lower-case name, as in logs.
     *
     * @return {@code on_route} or {@code on_success}
     */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
