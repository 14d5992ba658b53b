package dev.cart.core;

import java.util.Objects;

/**
 * A policy's answer: the replica to use and why.
 *
 * @param replica        one of the candidates offered to the policy
 * @param reason         the reason code reported with the decision
 * @param matchedLength  the prefix length (units) the chosen replica holds, as far as the policy knows
 */
public record Choice(Replica replica, Reason reason, int matchedLength) {

    public Choice {
        Objects.requireNonNull(replica, "replica");
        Objects.requireNonNull(reason, "reason");
    }

    public static Choice of(Replica replica, Reason reason) {
        return new Choice(replica, reason, 0);
    }
}
