package dev.cart.core;

/** State of a replica's circuit breaker. */
public enum CircuitState {
    /** Traffic flows; consecutive failures are counted. */
    CLOSED,
    /** Too many consecutive failures: no traffic until the open timeout has passed. */
    OPEN,
    /** Trial traffic only (a bounded number of requests at once) until enough successes close it. */
    HALF_OPEN;

    /** Lower-case name as used in logs, metrics and the /workers endpoint. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
