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
 * <p>Design (after XXH3's accumulation and wyhash's fold): each pair of token ids, each xored with its
 * constant, is multiplied as two unsigned 32-bit numbers into 64 bits, one multiply for two ids; a block of 16
 * ids is eight independent products summed into four lanes, which one 128-bit multiply-fold ({@link #mum})
 * combines. Every constant an id is xored with has bit 31 set, which no token id (below 2^31) has, so no
 * factor is ever zero (a zero factor would drop its partner). Longer blocks add each further 16 ids to the
 * lanes after a rotation (so their order counts); a tail is folded in two or one at a time; 16 ids take a
 * written-out path with the same result. The block's own hash does not depend on its parent, so the CPU
 * overlaps consecutive blocks, and one fold ties it to the chain ({@link #block}). Not cryptographic: a
 * crafted collision could only misroute a request. Keys have their two low bits clear (the per-stream map
 * keeps the tiers there) and are never 0. Stateless; thread-safe.
 */
final class BlockKeys {

    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P5 = 0x27D4EB2F165667C5L;
    /** Bit 31: set in every constant a token id is xored with. */
    private static final int HIGH = 0x80000000;

    private static final int K0 = 0xA0761D64 | HIGH;
    private static final int K1 = 0x78BD642F | HIGH;
    private static final int K2 = 0xE7037ED1 | HIGH;
    private static final int K3 = 0xA0B428DB | HIGH;
    private static final int K4 = 0x8EBC6AF0 | HIGH;
    private static final int K5 = 0x9C88C6E3 | HIGH;
    private static final int K6 = 0x589965CC | HIGH;
    private static final int K7 = 0x75374CC3 | HIGH;
    private static final int K8 = 0x1D8E4E27 | HIGH;
    private static final int K9 = 0xC47D124F | HIGH;
    private static final int K10 = 0x9E3779B9 | HIGH;
    private static final int K11 = 0x7F4A7C15 | HIGH;
    private static final int K12 = 0xC2B2AE3D | HIGH;
    private static final int K13 = 0x27D4EB4F | HIGH;
    private static final int K14 = 0x165667B1 | HIGH;
    private static final int K15 = 0x9E3779F9 | HIGH;
    private static final long C0 = 0x85EBCA77C2B2AE63L;
    private static final long C1 = 0x94D049BB133111EBL;
    private static final long C2 = 0xBF58476D1CE4E5B9L;
    private static final long C3 = 0xD6E8FEB86659FD93L;
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
        return normalize(mum(parent ^ C0, tokensHash(tokens, off, n) ^ C1));
    }

    /** The hash of {@code n} token ids from {@code off}, on their own. */
    static long tokensHash(int[] t, int off, int n) {
        return n == 16 ? tokensHash16(t, off) : tokensHashAny(t, off, n);
    }

    /**
     * {@link #tokensHashAny} for 16 ids (vLLM's default block size), written out: straight-line code whose
     * range checks the compiler merges, faster than the loop.
     */
    static long tokensHash16(int[] t, int o) {
        long a0 = product(t[o] ^ K0, t[o + 1] ^ K1) + product(t[o + 8] ^ K8, t[o + 9] ^ K9);
        long a1 = product(t[o + 2] ^ K2, t[o + 3] ^ K3) + product(t[o + 10] ^ K10, t[o + 11] ^ K11);
        long a2 = product(t[o + 4] ^ K4, t[o + 5] ^ K5) + product(t[o + 12] ^ K12, t[o + 13] ^ K13);
        long a3 = product(t[o + 6] ^ K6, t[o + 7] ^ K7) + product(t[o + 14] ^ K14, t[o + 15] ^ K15);
        return mum((a0 + Long.rotateLeft(a1, 29)) ^ C2, (a2 + Long.rotateLeft(a3, 29)) ^ (C3 + 16));
    }

    /** The hash of any number of ids: 16 at a time into four lanes (rotated between rounds), then the tail. */
    static long tokensHashAny(int[] t, int off, int n) {
        long a0 = 0;
        long a1 = 0;
        long a2 = 0;
        long a3 = 0;
        int i = off;
        int end = off + n;
        for (; i + 16 <= end; i += 16) {
            a0 = Long.rotateLeft(a0, 23) + product(t[i] ^ K0, t[i + 1] ^ K1) + product(t[i + 8] ^ K8, t[i + 9] ^ K9);
            a1 = Long.rotateLeft(a1, 23)
                    + product(t[i + 2] ^ K2, t[i + 3] ^ K3)
                    + product(t[i + 10] ^ K10, t[i + 11] ^ K11);
            a2 = Long.rotateLeft(a2, 23)
                    + product(t[i + 4] ^ K4, t[i + 5] ^ K5)
                    + product(t[i + 12] ^ K12, t[i + 13] ^ K13);
            a3 = Long.rotateLeft(a3, 23)
                    + product(t[i + 6] ^ K6, t[i + 7] ^ K7)
                    + product(t[i + 14] ^ K14, t[i + 15] ^ K15);
        }
        long h = mum((a0 + Long.rotateLeft(a1, 29)) ^ C2, (a2 + Long.rotateLeft(a3, 29)) ^ (C3 + n));
        for (; i + 2 <= end; i += 2) {
            h = mum(h ^ product(t[i] ^ K0, t[i + 1] ^ K1), C1);
        }
        if (i < end) {
            h = mum(h ^ ((t[i] ^ K2) & 0xFFFFFFFFL), C0);
        }
        return h;
    }

    /** The seed a block with extra keys of digest {@code extra} is chained on instead of {@code parent}. */
    static long withExtra(long parent, long extra) {
        return extra == 0 ? parent : parent ^ (extra * 0x9E3779B97F4A7C15L) ^ 0xE7A3L;
    }

    static long normalize(long h) {
        long k = h & ~3L;
        return k == 0 ? 4 : k;
    }

    /** The 64-bit product of two ids (each xored with a constant), read as unsigned 32-bit numbers. */
    private static long product(int a, int b) {
        return (a & 0xFFFFFFFFL) * (b & 0xFFFFFFFFL);
    }

    /** The 128-bit product of {@code a} and {@code b}, its halves folded (xor). */
    private static long mum(long a, long b) {
        return a * b ^ Math.multiplyHigh(a, b);
    }

    private static long avalanche(long h) {
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        return h ^ (h >>> 32);
    }
}
