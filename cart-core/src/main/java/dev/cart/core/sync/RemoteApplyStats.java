package dev.cart.core.sync;

import dev.cart.core.Router;

/**
 * Counts of the events from other instances a router was given ({@link Router#applyRemote}), since it
 * was built, by what became of them ({@link RemoteApply}).
 */
public record RemoteApplyStats(
        long applied, long skipped, long ownEvents, long unknownReplica, long otherKeyFormat, long notLearning) {

    /**
     * Every event given, whatever became of it.
     *
     * @return the sum of every count
     */
    public long total() {
        return applied + skipped + ownEvents + unknownReplica + otherKeyFormat + notLearning;
    }
}
