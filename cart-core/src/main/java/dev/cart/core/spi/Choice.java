package dev.cart.core.spi;

import dev.cart.core.Reason;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

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
public record Choice(
        Replica replica,
        Reason reason,
        int matchedLength,
        @Nullable Object detail) {

    /**
     * Checks that the replica and the reason are given.
     *
     * @param replica       one of the candidates offered to the policy
     * @param reason        the reason code reported with the decision
     * @param matchedLength the prefix length (units) the chosen replica holds, as far as the policy knows
     * @param detail        what the policy adds about its decision, or null
     * @throws NullPointerException if {@code replica} or {@code reason} is null
     */
    public Choice {
        Objects.requireNonNull(replica, "replica");
        Objects.requireNonNull(reason, "reason");
    }

    /**
     * A choice without detail.
     *
     * @param replica       one of the candidates offered to the policy
     * @param reason        the reason code reported with the decision
     * @param matchedLength the prefix length (units) the chosen replica holds, as far as the policy knows
     */
    public Choice(Replica replica, Reason reason, int matchedLength) {
        this(replica, reason, matchedLength, null);
    }

    /**
     * A choice that says nothing about the matched length (0).
     *
     * @param replica one of the candidates offered to the policy
     * @param reason  the reason code reported with the decision
     * @return the choice
     */
    public static Choice of(Replica replica, Reason reason) {
        return new Choice(replica, reason, 0);
    }
}
