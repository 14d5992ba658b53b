package dev.cart.kvevents;

import dev.cart.core.internal.KeyAccess;
import java.nio.charset.StandardCharsets;

/**
 * CART's own key of a block of engine tokens: the block's token ids hashed with the chained hash of CART's
 * prompt keys, chained on the key of the block before it, the first block on a seed made of the model (or
 * the adapter, which replaces it) and the {@code cache_salt}. It never reproduces the engine's hash; it only
 * has to be the same for the same chain of tokens, wherever it is computed (from an event, or from a
 * request's tokens). A block with extra keys CART cannot reproduce (multimodal inputs) is chained on a seed
 * mixed with their digest, so no text request ever matches it while its children still chain correctly.
 *
 * <p>Keys have their two low bits clear (the per-stream map keeps the tiers there) and are never 0.
 * Stateless apart from the caller's scratch array; thread-safe.
 */
final class BlockKeys {

    private static final long NAMESPACE_SEED = 0x5EEDC0DE4B564B31L;
    private static final KeyAccess.Secrets HASH = KeyAccess.secrets();

    private BlockKeys() {}

    /** The seed of a chain's first block: the model (or adapter) and the salt (either may be null). */
    static long root(String model, String salt) {
        byte[] m = (model == null ? "" : model).getBytes(StandardCharsets.UTF_8);
        long h = HASH.hashBytes(m, 0, m.length, NAMESPACE_SEED);
        if (salt != null) {
            byte[] s = salt.getBytes(StandardCharsets.UTF_8);
            h = HASH.hashBytes(s, 0, s.length, h ^ 0x5A17L);
        }
        return h;
    }

    /**
     * The key of the block of {@code n} token ids of {@code tokens} from {@code off}, chained on
     * {@code parent} (a key, or a {@link #root} seed).
     *
     * @param scratch at least {@code 4 * n} bytes, the caller's own
     */
    static long block(int[] tokens, int off, int n, long parent, byte[] scratch) {
        for (int i = 0; i < n; i++) {
            int t = tokens[off + i];
            int b = i << 2;
            scratch[b] = (byte) t;
            scratch[b + 1] = (byte) (t >>> 8);
            scratch[b + 2] = (byte) (t >>> 16);
            scratch[b + 3] = (byte) (t >>> 24);
        }
        return normalize(HASH.hashBytes(scratch, 0, n << 2, parent));
    }

    /** The seed a block with extra keys of digest {@code extra} is chained on instead of {@code parent}. */
    static long withExtra(long parent, long extra) {
        return extra == 0 ? parent : parent ^ (extra * 0x9E3779B97F4A7C15L) ^ 0xE7A3L;
    }

    static long normalize(long h) {
        long k = h & ~3L;
        return k == 0 ? 4 : k;
    }
}
