package dev.cart.proxy.precise;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.kvevents.ReplicaMode;
import dev.cart.kvevents.ReplicaStatus;
import dev.cart.kvevents.StreamStatus;

/** A worker's precise-mode state as {@code GET /workers} shows it. Stateless. */
public final class PreciseStatus {

    private PreciseStatus() {}

    /**
     * Precise mode's view of one worker (in a proxy where some worker has {@code kv_events}): {@code mode}
     * ({@code precise}, {@code catching_up}, {@code approximate}) and why, and per data-parallel rank its stream's
     * state and counters; a worker without {@code kv_events} is {@code approximate} with no streams.
     */
    public static void write(ObjectNode w, ReplicaStatus status) {
        w.put("mode", status == null ? "approximate" : label(status.mode()));
        w.put("mode_reason", status == null ? "no kv_events" : status.reason());
        ArrayNode streams = w.putArray("kv_streams");
        if (status == null) {
            return;
        }
        for (StreamStatus s : status.streams()) {
            ObjectNode o = streams.addObject();
            o.put("rank", s.rank());
            o.put("mode", label(s.mode()));
            o.put("reason", s.reason());
            o.put("incomplete", s.incomplete());
            o.put("next_seq", s.nextSeq());
            o.put("blocks", s.blocks());
            o.put("batches", s.batches());
            o.put("stored_blocks", s.storedBlocks());
            o.put("removed_blocks", s.removedBlocks());
            o.put("offload_blocks", s.offloadBlocks());
            o.put("gaps", s.gaps());
            o.put("replays", s.replays());
            o.put("replay_failures", s.replayFailures());
            o.put("resets", s.resets());
            o.put("orphans", s.orphans());
            o.put("skipped_fields", s.skippedFields());
            o.put("unknown_tags", s.unknownTags());
            o.put("malformed", s.malformed());
            o.put("cap_evicted", s.capEvicted());
        }
    }

    static String label(ReplicaMode m) {
        return m.name().toLowerCase(java.util.Locale.ROOT);
    }
}
