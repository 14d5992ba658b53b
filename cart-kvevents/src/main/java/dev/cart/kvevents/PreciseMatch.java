package dev.cart.kvevents;

import dev.cart.core.PromptKey;
import dev.cart.core.spi.ConfirmedPrefix;
import dev.cart.core.spi.Replica;

/**
 * What {@link KvIndex#lookup} found for one request: per replica, the prefix of the request's engine tokens
 * its engine confirms holding, the prefix it holds counting the blocks requests just routed there are about
 * to create (the overlay), and its mode at the time of the lookup. Immutable; safe to share.
 *
 * <p>{@link #view(PromptKey)} turns it into the router's {@link ConfirmedPrefix} for the request's key:
 * replicas in {@link ReplicaMode#PRECISE} mode are covered, with their held prefix converted to the key's
 * units; the others are left to the tree.
 */
public final class PreciseMatch {

    private final Replicas registry;
    private final int[] tokens;
    private final int blocks;
    private final long root;
    private final long firstKey;
    private final int blockSize;
    private final int[] confirmed;
    private final int[] held;
    private final ReplicaMode[] modes;
    private final ReplicaEntry[] replicas;

    PreciseMatch(
            Replicas registry,
            int[] tokens,
            int blocks,
            long root,
            long firstKey,
            int blockSize,
            int[] confirmed,
            int[] held,
            ReplicaMode[] modes,
            ReplicaEntry[] replicas) {
        this.registry = registry;
        this.tokens = tokens;
        this.blocks = blocks;
        this.root = root;
        this.firstKey = firstKey;
        this.blockSize = blockSize;
        this.confirmed = confirmed;
        this.held = held;
        this.modes = modes;
        this.replicas = replicas;
    }

    /**
     * The request's prompt length in engine tokens.
     *
     * @return the length looked up, zero or more
     */
    public int promptTokens() {
        return tokens.length;
    }

    /** The prompt's engine tokens (the caller's array). */
    int[] tokens() {
        return tokens;
    }

    /** The whole blocks a request creates on its replica: those before its last token. */
    int blocks() {
        return blocks;
    }

    /** The chain's seed (model or adapter, salt). */
    long root() {
        return root;
    }

    /** The key of the first block (0 when {@link #blocks} is 0). */
    long firstKey() {
        return firstKey;
    }

    int blockSize() {
        return blockSize;
    }

    private int ord(String replica) {
        ReplicaEntry e = registry.entry(replica);
        return e == null || e.ord >= replicas.length || replicas[e.ord] != e ? -1 : e.ord;
    }

    /**
     * The prompt tokens {@code replica}'s engine confirms holding (its events said so), in whole blocks and at
     * most the blocks before the prompt's last token.
     *
     * @param replica the replica's id
     * @return tokens, a multiple of the block size; 0 for a replica the lookup did not know
     */
    public int confirmedTokens(String replica) {
        int o = ord(replica);
        return o < 0 ? 0 : confirmed[o] * blockSize;
    }

    /**
     * {@link #confirmedTokens} raised by the blocks that requests just routed there will create (the overlay).
     *
     * @param replica the replica's id
     * @return tokens, at least {@link #confirmedTokens}; 0 for a replica the lookup did not know
     */
    public int heldTokens(String replica) {
        int o = ord(replica);
        return o < 0 ? 0 : held[o] * blockSize;
    }

    /**
     * {@code replica}'s mode when the lookup ran.
     *
     * @param replica the replica's id
     * @return its mode; {@link ReplicaMode#APPROXIMATE} for a replica the lookup did not know
     */
    public ReplicaMode mode(String replica) {
        int o = ord(replica);
        return o < 0 ? ReplicaMode.APPROXIMATE : modes[o];
    }

    /**
     * The router's view of this match for the request's {@code key}: the replicas in precise mode, each with
     * its held prefix as a share of the prompt applied to the key's length, rounded down to whole key
     * blocks (the key's units need not be the engine's tokens).
     *
     * @param key the request's prompt key, as the router will match it
     * @return a view for {@code RouteRequest}'s confirmed prefix; immutable, safe to share
     */
    public ConfirmedPrefix view(PromptKey key) {
        int keyLength = key.length();
        int keyBlock = key.blockSize();
        return new ConfirmedPrefix() {
            @Override
            public boolean covers(Replica replica) {
                return mode(replica.id()) == ReplicaMode.PRECISE;
            }

            @Override
            public int matchedLength(Replica replica) {
                int promptTokens = tokens.length;
                if (promptTokens == 0) {
                    return 0;
                }
                long units = (long) heldTokens(replica.id()) * keyLength / promptTokens;
                return (int) Math.min(keyLength, units / keyBlock * keyBlock);
            }
        };
    }
}
