package dev.cart.core;

/** How a forwarded request ended, as reported to the replica's circuit breaker and to listeners. */
public enum Outcome {
    /** The replica answered (any status the host does not count as a replica failure). */
    SUCCESS,
    /** The replica failed: connection error, timeout, or a status the host counts as a failure. */
    FAILURE,
    /** The request ended without a verdict on the replica, for example the client went away. */
    CANCELLED
}
