package dev.cart.kvevents;

/**
 * One stream's state and counters, as {@link KvIndex#status()} reads them (each exact, together possibly a
 * moment apart). Counters only grow.
 *
 * @param rank             the stream's data-parallel rank
 * @param mode             the stream's own mode
 * @param reason           why it is in that mode ({@code live}, {@code replaying}, {@code silent}, ...)
 * @param incomplete       true when the index may miss blocks the engine stored before the subscriber saw
 *                         them (a late subscriber, lost events, orphans): it can only under-report
 * @param nextSeq          the sequence number expected next, -1 before the first batch
 * @param blocks           blocks of this stream in the index now
 * @param batches          batches applied (live and replayed)
 * @param storedBlocks     blocks stored by applied events
 * @param removedBlocks    blocks removed by applied events
 * @param offloadBlocks    blocks now held in an offload tier (CPU) as well as or instead of the GPU
 * @param gaps             live sequence gaps seen
 * @param replays          replays asked for
 * @param replayFailures   replays that timed out or could not start where asked
 * @param resets           times the stream's blocks were dropped (restart, clear, lost events)
 * @param orphans          stored blocks whose parent was unknown (not indexed)
 * @param skippedFields    unknown fields skipped
 * @param unknownTags      events of an unknown kind skipped
 * @param malformed        frames, batches and events dropped as malformed
 * @param capEvicted       blocks evicted by the memory cap
 * @param otherGroupBlocks blocks of groups that are not full attention (not indexed)
 */
public record StreamStatus(
        int rank,
        ReplicaMode mode,
        String reason,
        boolean incomplete,
        long nextSeq,
        long blocks,
        long batches,
        long storedBlocks,
        long removedBlocks,
        long offloadBlocks,
        long gaps,
        long replays,
        long replayFailures,
        long resets,
        long orphans,
        long skippedFields,
        long unknownTags,
        long malformed,
        long capEvicted,
        long otherGroupBlocks) {}
