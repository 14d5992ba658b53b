package dev.cart.core.spi;

import dev.cart.core.Reason;
import java.util.Objects;

/**
 * A policy's answer: the replica to use and why.
 *
 * @param replica        one of the candidates offered to the policy
 * @param reason         the reason code reported with the decision
 * @param matchedLength  the prefix length (units) the chosen replica holds, as far as the policy knows
 * @param detail         what the policy adds about its decision, or null: carried by the
 *                       {@link dev.cart.core.RouteDecision#detail() decision} for logs (its {@code toString()},
 *                       which must never contain prompt text) and handed back to the policy's lease
 *                       observations ({@link RoutingPolicy#onFirstToken})
 */
public record Choice(Replica replica, Reason reason, int matchedLength, Object detail) {

    /** Checks that the replica and the reason are given. */
    public Choice {
        Objects.requireNonNull(replica, "replica");
        Objects.requireNonNull(reason, "reason");
    }

    /** A choice without detail. */
    public Choice(Replica replica, Reason reason, int matchedLength) {
        this(replica, reason, matchedLength, null);
    }

    /** A choice that says nothing about the matched length (0). */
    public static Choice of(Replica replica, Reason reason) {
        return new Choice(replica, reason, 0);
    }
}
