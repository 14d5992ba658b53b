package dev.cart.core.sync;

import dev.cart.core.PromptKey;
import dev.cart.core.Router;
import dev.cart.core.internal.Checks;
import dev.cart.core.spi.Replica;
import java.util.Objects;

/**
 * What one router instance tells the others about its prefix tree ({@link RouteSync}): compact facts,
 * never prompt text. A key travels as its block hashes only (each chained on the one before, so the
 * hashes identify the prefix without revealing it), a replica as its stable {@link Replica#id()}, and
 * every event carries the time it happened (clock millis of the instance that made it) and its origin
 * (the {@link RouteSync#originId()} of that instance, so an instance can recognise its own events).
 *
 * <p>Events are applied by {@link Router#applyRemote}. The block arrays are shared, never copied: whoever
 * builds an event must not change its array afterwards.
 */
public sealed interface RouteEvent {

    /**
     * The {@link RouteSync#originId()} of the instance that made the event.
     *
     * @return the origin's id, never null
     */
    String origin();

    /**
     * When it happened, in the origin's clock milliseconds.
     *
     * @return epoch milliseconds
     */
    long timeMillis();

    /**
     * A route was learned: {@code replicaId} holds every prefix of the key whose block hashes are
     * {@code blocks} (the key's unit and block size say how to read them).
     */
    record Learned(String origin, long timeMillis, String replicaId, PromptKey.Unit unit, int blockSize, long[] blocks)
            implements RouteEvent {
        /**
         * Checks the event.
         *
         * @param origin     the publishing instance's {@link RouteSync#originId()}
         * @param timeMillis when it was learned, in the origin's epoch milliseconds
         * @param replicaId  the replica's {@link dev.cart.core.spi.Replica#id()}
         * @param unit       the key's unit
         * @param blockSize  the key's units per block, at least 1
         * @param blocks     the key's chained block hashes
         * @throws IllegalArgumentException if {@code blockSize} is below 1
         * @throws NullPointerException if an object argument is null
         */
        public Learned {
            Objects.requireNonNull(origin, "origin");
            Objects.requireNonNull(replicaId, "replicaId");
            Objects.requireNonNull(unit, "unit");
            Objects.requireNonNull(blocks, "blocks");
            Checks.atLeast("block size", blockSize, 1);
        }
    }

    /**
     * Usage feedback proved a replica had lost a prefix: it keeps the key's path but no longer holds the
     * branches that leave it after the first {@code keepBlocks} blocks (what the router itself forgets on
     * such feedback).
     */
    record Forgotten(
            String origin,
            long timeMillis,
            String replicaId,
            PromptKey.Unit unit,
            int blockSize,
            long[] blocks,
            int keepBlocks)
            implements RouteEvent {
        /**
         * Checks the event.
         *
         * @param origin     the publishing instance's {@link RouteSync#originId()}
         * @param timeMillis when it was forgotten, in the origin's epoch milliseconds
         * @param replicaId  the replica's {@link dev.cart.core.spi.Replica#id()}
         * @param unit       the key's unit
         * @param blockSize  the key's units per block, at least 1
         * @param blocks     the key's chained block hashes
         * @param keepBlocks blocks of the key's path the replica still holds, 0 or more
         * @throws IllegalArgumentException if {@code blockSize} is below 1 or {@code keepBlocks} negative
         * @throws NullPointerException if an object argument is null
         */
        public Forgotten {
            Objects.requireNonNull(origin, "origin");
            Objects.requireNonNull(replicaId, "replicaId");
            Objects.requireNonNull(unit, "unit");
            Objects.requireNonNull(blocks, "blocks");
            Checks.atLeast("block size", blockSize, 1);
            if (keepBlocks < 0) {
                throw new IllegalArgumentException("keepBlocks must be >= 0, was " + keepBlocks);
            }
        }
    }

    /** A replica left the pool: every route to it is forgotten. */
    record ReplicaRemoved(String origin, long timeMillis, String replicaId) implements RouteEvent {
        /**
         * Checks the event.
         *
         * @param origin     the publishing instance's {@link RouteSync#originId()}
         * @param timeMillis when it was removed, in the origin's epoch milliseconds
         * @param replicaId  the removed replica's {@link dev.cart.core.spi.Replica#id()}
         * @throws NullPointerException if {@code origin} or {@code replicaId} is null
         */
        public ReplicaRemoved {
            Objects.requireNonNull(origin, "origin");
            Objects.requireNonNull(replicaId, "replicaId");
        }
    }

    /** The tree was reset: every route last used at or before {@link #timeMillis()} is forgotten. */
    record Reset(String origin, long timeMillis) implements RouteEvent {
        /**
         * Checks the event.
         *
         * @param origin     the publishing instance's {@link RouteSync#originId()}
         * @param timeMillis when the tree was reset, in the origin's epoch milliseconds
         * @throws NullPointerException if {@code origin} is null
         */
        public Reset {
            Objects.requireNonNull(origin, "origin");
        }
    }
}
