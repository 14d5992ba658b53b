package dev.cart.kvevents;

import java.util.List;

/**
 * One replica as the KV-event index knows it, for {@code /workers} and gauges.
 *
 * @param replica the replica's id
 * @param mode    its mode: the worst of its streams' (a replica is precise only when every rank is), or
 *                approximate while tokenization on it keeps failing
 * @param reason  why, in a word or two
 * @param streams its streams, one per data-parallel rank
 */
public record ReplicaStatus(String replica, ReplicaMode mode, String reason, List<StreamStatus> streams) {

    /**
     * Copies {@code streams}.
     *
     * @param replica the replica's id
     * @param mode    its mode
     * @param reason  why
     * @param streams its streams, one per data-parallel rank
     * @throws NullPointerException if {@code streams} is or holds null
     */
    public ReplicaStatus {
        streams = List.copyOf(streams);
    }
}
