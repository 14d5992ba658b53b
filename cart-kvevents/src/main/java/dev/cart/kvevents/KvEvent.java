package dev.cart.kvevents;

import org.jspecify.annotations.Nullable;

/**
 * One decoded KV-cache event of an engine's batch: blocks stored, blocks removed, or everything cleared.
 * Immutable once decoded; the arrays are owned by the event and never changed.
 */
abstract class KvEvent {

    private KvEvent() {}

    /** The tier a block was stored in or removed from: the GPU (or unsaid), or an offload tier. */
    static final int GPU = 1;

    static final int OFFLOAD = 2;

    /** The tier bit of a {@code medium} field: null or {@code GPU} is the GPU, anything else an offload tier. */
    static int tierOf(@Nullable String medium) {
        return medium == null || medium.equalsIgnoreCase("GPU") ? GPU : OFFLOAD;
    }

    /**
     * {@code BlockStored}: consecutive full blocks of one sequence, each chained on the one before, the first
     * on {@code parent} (or a root when there is none).
     */
    static final class Stored extends KvEvent {
        final long[] hashes;
        final boolean hasParent;
        final long parent;
        /** The token ids of every block of the event, in order; may be empty (offload placeholders). */
        final int[] tokens;

        final int blockSize;
        /** The adapter's name, or null; {@code lora_id} alone (old producers) is named {@code lora-id:N}. */
        final @Nullable String lora;
        /** The {@code cache_salt} of the chain's first block (only when this event starts a chain), or null. */
        final @Nullable String salt;
        /**
         * Per block, a digest of extra keys CART cannot reproduce for a text request (multimodal inputs,
         * prompt embeddings); 0 where there are none. Null when no block has any.
         */
        final long @Nullable [] extra;

        final int tier;
        /** The KV-cache group (hybrid models have several); 0 when unsaid. */
        final int group;
        /** Whether the block's group is a full-attention one (the only kind whose chain is a prefix). */
        final boolean fullAttention;

        Stored(
                long[] hashes,
                boolean hasParent,
                long parent,
                int[] tokens,
                int blockSize,
                @Nullable String lora,
                @Nullable String salt,
                long @Nullable [] extra,
                int tier,
                int group,
                boolean fullAttention) {
            this.hashes = hashes;
            this.hasParent = hasParent;
            this.parent = parent;
            this.tokens = tokens;
            this.blockSize = blockSize;
            this.lora = lora;
            this.salt = salt;
            this.extra = extra;
            this.tier = tier;
            this.group = group;
            this.fullAttention = fullAttention;
        }
    }

    /** {@code BlockRemoved}: the blocks left the tier. */
    static final class Removed extends KvEvent {
        final long[] hashes;
        final int tier;
        /** The group the blocks left (0 when unsaid); a group the stream learned is not full attention is ignored. */
        final int group;

        Removed(long[] hashes, int tier, int group) {
            this.hashes = hashes;
            this.tier = tier;
            this.group = group;
        }
    }

    /** {@code AllBlocksCleared}: the engine dropped every block (a cache reset). */
    static final class Cleared extends KvEvent {
        static final Cleared INSTANCE = new Cleared();

        private Cleared() {}
    }
}
