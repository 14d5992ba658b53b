package dev.cart.core.sync;

import dev.cart.core.Router;

/** What {@link Router#applyRemote} did with one event from another instance. */
public enum RemoteApply {
    /** Applied to the tree. */
    APPLIED,
    /** A maintenance pass held the tree: skipped and counted, as a local insert would be. */
    SKIPPED,
    /** The event came from this instance (its own origin id): never applied twice. */
    OWN_EVENT,
    /** The event names a replica this instance does not have: ignored. */
    UNKNOWN_REPLICA,
    /** The event's key is in another unit or block size than this router's tree: ignored. */
    OTHER_KEY_FORMAT,
    /** This router's policy does not use the prefix tree: nothing to apply. */
    NOT_LEARNING
}
