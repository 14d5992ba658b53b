package dev.cart.core.internal;

import dev.cart.core.PromptKey;
import org.jspecify.annotations.Nullable;

/**
 * Reaches into {@link PromptKey} from the library's own modules without making those parts public API:
 * the tree reads a key's block hashes without a copy, and extraction feeds a key builder bytes it has
 * already decoded. {@code PromptKey} installs the one implementation from its static initialiser (the
 * JDK's "shared secrets" pattern); this package is exported only to CART's own modules.
 *
 * <p>Concurrency: the implementation is installed once, while {@code PromptKey} is initialised, before any
 * key or builder exists; every caller holds a key or a builder, so it sees the installed value.
 */
public final class KeyAccess {

    /** What {@link PromptKey} lets its siblings do. */
    public interface Secrets {

        /**
         * The key's block hashes, the array itself (never modified by anyone).
         *
         * @param key a key
         * @return its block hashes, one per whole block
         */
        long[] blocks(PromptKey key);

        /**
         * Appends characters given as Latin-1 bytes (see {@code PromptKey.Builder}).
         *
         * @param builder a character-mode builder
         * @param src the bytes, each one character U+0000 to U+00FF
         * @param off the first byte
         * @param len the number of bytes (and characters)
         */
        void appendLatin1(PromptKey.Builder builder, byte[] src, int off, int len);

        /**
         * Appends UTF-16 units encoded as CESU-8 (see {@code PromptKey.Builder}).
         *
         * @param builder a character-mode builder
         * @param src the bytes
         * @param off the first byte
         * @param len the number of bytes
         * @param units the number of UTF-16 units the bytes hold
         */
        void appendCesu8(PromptKey.Builder builder, byte[] src, int off, int len, int units);

        /**
         * A token-unit key made of the given block hashes (tests and benchmarks of the tree).
         *
         * @param blocks the block hashes, copied
         * @param blockSize units per block, at least 1
         * @return the key
         */
        PromptKey forBlocks(long[] blocks, int blockSize);

        /**
         * As {@link #forBlocks}, taking the array as it is: the caller never touches it again.
         *
         * @param blocks the block hashes, not copied
         * @param blockSize units per block, at least 1
         * @return the key
         */
        PromptKey wrapBlocks(long[] blocks, int blockSize);

        /**
         * The block hash function over bytes (for its benchmark).
         *
         * @param b the bytes
         * @param off the first byte
         * @param n the number of bytes
         * @param seed the chained seed
         * @return the hash
         */
        long hashBytes(byte[] b, int off, int n, long seed);
    }

    private static @Nullable Secrets secrets;

    private KeyAccess() {}

    /**
     * Installs the implementation; called once, by {@code PromptKey}.
     *
     * @param s the implementation
     * @throws IllegalStateException when one is installed already
     */
    public static synchronized void install(Secrets s) {
        if (secrets != null) {
            throw new IllegalStateException("already installed");
        }
        secrets = s;
    }

    /**
     * The installed implementation.
     *
     * @return what {@code PromptKey} installed
     */
    public static Secrets secrets() {
        Secrets s = secrets;
        if (s == null) {
            PromptKey.empty(); // initialises PromptKey, which installs it
            s = secrets;
            if (s == null) {
                throw new IllegalStateException("PromptKey did not install its access");
            }
        }
        return s;
    }

    /**
     * The key's block hashes, the array itself.
     *
     * @param key a key
     * @return its block hashes; never modify it
     */
    public static long[] blocks(PromptKey key) {
        return secrets().blocks(key);
    }

    /**
     * A token-unit key made of the given block hashes.
     *
     * @param blocks the block hashes, copied
     * @param blockSize units per block, at least 1
     * @return the key
     */
    public static PromptKey forBlocks(long[] blocks, int blockSize) {
        return secrets().forBlocks(blocks, blockSize);
    }

    /**
     * A token-unit key made of the given block hashes, taking the array as it is.
     *
     * @param blocks the block hashes, not copied
     * @param blockSize units per block, at least 1
     * @return the key
     */
    public static PromptKey wrapBlocks(long[] blocks, int blockSize) {
        return secrets().wrapBlocks(blocks, blockSize);
    }

    /**
     * Appends characters given as Latin-1 bytes to a character-mode builder.
     *
     * @param builder the builder
     * @param src the bytes
     * @param off the first byte
     * @param len the number of bytes
     * @return {@code builder}
     */
    public static PromptKey.Builder appendLatin1(PromptKey.Builder builder, byte[] src, int off, int len) {
        secrets().appendLatin1(builder, src, off, len);
        return builder;
    }

    /**
     * Appends UTF-16 units encoded as CESU-8 to a character-mode builder.
     *
     * @param builder the builder
     * @param src the bytes
     * @param off the first byte
     * @param len the number of bytes
     * @param units the number of UTF-16 units the bytes hold
     * @return {@code builder}
     */
    public static PromptKey.Builder appendCesu8(PromptKey.Builder builder, byte[] src, int off, int len, int units) {
        secrets().appendCesu8(builder, src, off, len, units);
        return builder;
    }
}
