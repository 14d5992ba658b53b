package dev.cart.kvevents;

import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * CART's own key of a block of engine tokens: the block's token ids hashed on their own, then chained on the
 * key of the block before it, the first block on a seed made of the model (or the adapter, which replaces it)
 * and the {@code cache_salt}. It never reproduces the engine's hash; it only has to be the same for the same
 * chain of tokens, wherever it is computed (from an event, or from a request's tokens). A block with extra
 * keys CART cannot reproduce (multimodal inputs) is chained on a seed mixed with their digest, so no text
 * request ever matches it while its children still chain correctly.
 *
 * <p>Design: the structure of xxHash64 over the token ids, two ids per 64-bit lane and four lanes, so a block
 * of 16 ids is two rounds per lane; the block's own hash does not depend on its parent, so the CPU overlaps
 * consecutive blocks, and a short mix ({@link #chain}, a bijection of the block hash for a given parent) ties
 * it to the chain. Not cryptographic: a crafted collision could only misroute a request. Keys have their two
 * low bits clear (the per-stream map keeps the tiers there) and are never 0. Stateless; thread-safe.
 */
final class BlockKeys {

    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P4 = 0x85EBCA77C2B2AE63L;
    private static final long P5 = 0x27D4EB2F165667C5L;
    private static final long NAMESPACE_SEED = 0x5EEDC0DE4B564B31L;

    private BlockKeys() {}

    /** The seed of a chain's first block: the model (or adapter) and the salt (either may be null). */
    static long root(@Nullable String model, @Nullable String salt) {
        long h = text(model == null ? "" : model, NAMESPACE_SEED);
        return salt == null ? h : text(salt, h ^ 0x5A17L);
    }

    private static long text(String s, long seed) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        long h = seed ^ (b.length * P5);
        for (byte x : b) {
            h = Long.rotateLeft(h ^ ((x & 0xFF) * P5), 11) * P1;
        }
        return avalanche(h);
    }

    /** The key of the {@code n} token ids of {@code tokens} from {@code off}, chained on {@code parent}. */
    static long block(int[] tokens, int off, int n, long parent) {
        return normalize(chain(parent, tokensHash(tokens, off, n)));
    }

    /** The hash of {@code n} token ids from {@code off}, on their own. */
    static long tokensHash(int[] t, int off, int n) {
        long a1 = 0x60EA27EEADC0B5D6L; // P1 + P2, wrapped
        long a2 = P2;
        long a3 = 0;
        long a4 = -P1;
        int i = off;
        int end = off + n;
        for (; i + 8 <= end; i += 8) {
            a1 = round(a1, word(t, i));
            a2 = round(a2, word(t, i + 2));
            a3 = round(a3, word(t, i + 4));
            a4 = round(a4, word(t, i + 6));
        }
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        h += n * P5;
        for (; i + 2 <= end; i += 2) {
            h = Long.rotateLeft(h ^ round(0, word(t, i)), 27) * P1 + P4;
        }
        if (i < end) {
            h = Long.rotateLeft(h ^ ((t[i] & 0xFFFFFFFFL) * P1), 23) * P2 + P3;
        }
        return avalanche(h);
    }

    /** The seed a block with extra keys of digest {@code extra} is chained on instead of {@code parent}. */
    static long withExtra(long parent, long extra) {
        return extra == 0 ? parent : parent ^ (extra * 0x9E3779B97F4A7C15L) ^ 0xE7A3L;
    }

    static long normalize(long h) {
        long k = h & ~3L;
        return k == 0 ? 4 : k;
    }

    private static long word(int[] t, int i) {
        return (t[i] & 0xFFFFFFFFL) | (long) t[i + 1] << 32;
    }

    private static long round(long acc, long input) {
        return Long.rotateLeft(acc + input * P2, 31) * P1;
    }

    private static long chain(long parent, long block) {
        long x = parent * P2 + block;
        x ^= x >>> 29;
        x *= P3;
        return x ^ (x >>> 32);
    }

    private static long avalanche(long h) {
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        return h ^ (h >>> 32);
    }
}
