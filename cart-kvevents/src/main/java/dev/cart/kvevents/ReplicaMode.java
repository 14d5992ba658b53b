package dev.cart.kvevents;

/** How the router knows one replica's cache now. */
public enum ReplicaMode {
    /** From its engine's events: the confirmed blocks, plus the blocks requests just routed there will make. */
    PRECISE,
    /** Its engine's events are being replayed after a connect, a gap or a restart: the tree's guess decides. */
    CATCHING_UP,
    /** Its events are missing or untrusted (silent stream, lost events, failing tokenization): the tree's guess. */
    APPROXIMATE
}
