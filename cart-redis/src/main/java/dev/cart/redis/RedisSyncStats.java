package dev.cart.redis;

/**
 * Counters of a {@link RedisRouteSync}, since it was built.
 *
 * @param published      events written to the stream
 * @param batches        stream entries written (one XADD each, up to the batch size of events)
 * @param bytesPublished encoded bytes of those entries (the entry's value; the XADD command around it adds
 *                       the stream name and a few dozen bytes of framing)
 * @param dropped        events dropped because the buffer was full (the oldest go first)
 * @param repeats        learned routes not written because the same route was written within the repeat
 *                       interval
 * @param buffered       events waiting to be written now (including a batch waiting for Redis)
 * @param applied        events from other instances handed to the router
 * @param ownSkipped     events of this instance read back from the stream and skipped
 * @param malformed      stream entries skipped because they did not decode (garbage, another version)
 * @param duplicates     stream entries read twice (a batch written again after a lost reply) and skipped
 * @param gaps           times entries of another instance were found missing between two of its entries
 *                       this instance read: the stream was trimmed past this instance's position, or Redis
 *                       lost them (a restart without persistence); reading goes on from what is left
 * @param lostEntries    entries missing in those gaps (each up to a batch of events)
 * @param unresolved     events of other instances not applied because their key refers to an entry this
 *                       instance never read (it started after it was trimmed, or the entry was lost): a key
 *                       is written as the new blocks after an earlier key of the same writer, and which
 *                       earlier keys count is reset every epoch (at most a minute), so this stops growing
 *                       within an epoch of the loss
 * @param lastLagMillis  for the last entry read while tailing: read time minus the entry's stream id time
 *                       (Redis's clock when it was written); replayed entries do not count
 * @param maxLagMillis   the largest such lag seen
 * @param connected      whether the last Redis call of each thread succeeded
 * @param peers          other instances whose entries were read in the last minute
 */
public record RedisSyncStats(
        long published,
        long batches,
        long bytesPublished,
        long dropped,
        long repeats,
        long buffered,
        long applied,
        long ownSkipped,
        long malformed,
        long duplicates,
        long gaps,
        long lostEntries,
        long unresolved,
        long lastLagMillis,
        long maxLagMillis,
        boolean connected,
        int peers) {}
