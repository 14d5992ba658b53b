package dev.cart.kvevents;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One engine's KV-event stream: where it publishes, where it replays, and which replica of the pool it
 * belongs to. A replica served by several data-parallel ranks has one stream per rank (vLLM offsets the
 * ports by the rank).
 *
 * @param replica        the replica's id in the pool ({@code Replica.id()}, e.g. its base URL)
 * @param endpoint       the engine's PUB endpoint, e.g. {@code tcp://host:5557}
 * @param replayEndpoint the engine's replay (ROUTER) endpoint, e.g. {@code tcp://host:5558}, or null when it
 *                       has none: then a gap cannot be repaired and the replica's blocks are reset instead
 * @param rank           the data-parallel rank, at least 0
 * @param topic          the topic the engine publishes under ({@code ""} for vLLM's default: every topic)
 * @param model          the model name requests use for this engine's base model: blocks stored without an
 *                       adapter are keyed under it (an adapter's blocks under the adapter's name), so a request
 *                       matches only what was computed for the same model
 */
public record KvStream(
        String replica, String endpoint, @Nullable String replayEndpoint, int rank, String topic, String model) {

    /**
     * Checks the arguments.
     *
     * @param replica        the replica's id in the pool
     * @param endpoint       the engine's PUB endpoint
     * @param replayEndpoint the engine's replay endpoint, or null when it has none
     * @param rank           the data-parallel rank, at least 0
     * @param topic          the topic the engine publishes under ({@code ""}: every topic)
     * @param model          the model name requests use for the engine's base model
     * @throws NullPointerException if {@code replica}, {@code endpoint}, {@code topic} or {@code model} is null
     * @throws IllegalArgumentException if {@code rank} is negative
     */
    public KvStream {
        Objects.requireNonNull(replica, "replica");
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(model, "model");
        if (rank < 0) {
            throw new IllegalArgumentException("rank must be at least 0, was " + rank);
        }
    }

    /**
     * A rank-0 stream with every topic.
     *
     * @param replica        the replica's id in the pool
     * @param endpoint       the engine's PUB endpoint
     * @param replayEndpoint the engine's replay endpoint, or null when it has none
     * @param model          the model name requests use for the engine's base model
     * @return the stream
     * @throws NullPointerException if {@code replica}, {@code endpoint} or {@code model} is null
     */
    public static KvStream of(String replica, String endpoint, @Nullable String replayEndpoint, String model) {
        return new KvStream(replica, endpoint, replayEndpoint, 0, "", model);
    }
}
