package dev.cart.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * The routing key of one request: its prompt, cut into fixed-size blocks, each block identified by a
 * 64-bit hash chained on the block before it.
 *
 * <p>Design: an inference server caches a prompt's KV state in fixed-size blocks (vLLM: 16 tokens) and
 * can reuse a block only when every block before it matches too. CART therefore compares prompts the
 * same way: block by block from the start. Only full blocks take part in matching; a prompt shorter
 * than one block has nothing the replica could reuse, so it matches nothing. Hashing the blocks once,
 * when the key is built, keeps the tree small (8 bytes per block instead of the block's text) and makes
 * its cost independent of the prompt's characters. Two different prefixes share a block hash with
 * probability about 2<sup>-64</sup>; a collision can only misroute a request, never break one.
 *
 * <p>A key counts in <em>units</em>: characters in character mode, token ids in token mode. Lengths,
 * message boundaries and thresholds are all in the same unit. The unit and block size must be the same
 * for every key given to one {@link PrefixTree}.
 *
 * <p>Instances are immutable and thread-safe. Build text keys with {@link #textBuilder(int)}.
 */
public final class PromptKey {

    /** What one unit of a key's length is. */
    public enum Unit {
        CHARS,
        TOKENS
    }

    /** The block size used when none is given: 16 tokens, or 64 characters (about 4 characters per token). */
    public static final int DEFAULT_BLOCK_TOKENS = 16;
    /** The character-mode equivalent of {@link #DEFAULT_BLOCK_TOKENS}. */
    public static final int DEFAULT_BLOCK_CHARS = 64;
    /** Longest prefix, in units, that {@link #anchorHash()} covers unless the builder says otherwise. */
    public static final int DEFAULT_ANCHOR_LIMIT = 1024;

    private static final long SEED = 0x9E3779B97F4A7C15L;
    private static final int[] NO_BOUNDARIES = new int[0];
    private static final long[] NO_BLOCKS = new long[0];

    private static final PromptKey EMPTY_CHARS =
            new PromptKey(Unit.CHARS, DEFAULT_BLOCK_CHARS, 0, NO_BLOCKS, NO_BOUNDARIES, SEED);

    private final Unit unit;
    private final int blockSize;
    private final int length;
    private final long[] blocks;
    private final int[] boundaries;
    private final long anchorHash;

    private PromptKey(Unit unit, int blockSize, int length, long[] blocks, int[] boundaries, long anchorHash) {
        this.unit = unit;
        this.blockSize = blockSize;
        this.length = length;
        this.blocks = blocks;
        this.boundaries = boundaries;
        this.anchorHash = anchorHash;
    }

    /** The empty key (a request with no prompt text). */
    public static PromptKey empty() {
        return EMPTY_CHARS;
    }

    /** A key for text, hashed in blocks of {@code blockChars} characters. */
    public static PromptKey ofText(CharSequence text, int blockChars) {
        return textBuilder(blockChars).append(text).build();
    }

    /** Starts a text key with blocks of {@code blockChars} characters. */
    public static Builder textBuilder(int blockChars) {
        return new Builder(Unit.CHARS, blockChars, DEFAULT_ANCHOR_LIMIT);
    }

    /** Starts a text key with blocks of {@code blockChars} characters and the given anchor limit. */
    public static Builder textBuilder(int blockChars, int anchorLimit) {
        return new Builder(Unit.CHARS, blockChars, anchorLimit);
    }

    /** Starts a token key with blocks of {@code blockTokens} token ids and the given anchor limit (tokens). */
    public static Builder tokenBuilder(int blockTokens, int anchorLimit) {
        return new Builder(Unit.TOKENS, blockTokens, anchorLimit);
    }

    /**
     * A key over token ids, hashed in blocks of {@code blockTokens} tokens.
     *
     * @param boundaries the end offset (exclusive, in tokens) of each message, ascending
     */
    public static PromptKey ofTokens(int[] tokens, int[] boundaries, int blockTokens, int anchorLimit) {
        Builder b = new Builder(Unit.TOKENS, blockTokens, anchorLimit);
        int next = 0;
        for (int bound : boundaries) {
            if (bound < next || bound > tokens.length) {
                throw new IllegalArgumentException("boundaries must be ascending and within the key: " + bound);
            }
            b.append(tokens, next, bound - next).boundary();
            next = bound;
        }
        return b.append(tokens, next, tokens.length - next).build();
    }

    public Unit unit() {
        return unit;
    }

    /** Units per block. */
    public int blockSize() {
        return blockSize;
    }

    /** Length of the whole key in units (characters or tokens), including a trailing partial block. */
    public int length() {
        return length;
    }

    /** Number of full blocks: the part of the key that can match. */
    public int blockCount() {
        return blocks.length;
    }

    /** True when the key has no text at all. */
    public boolean isEmpty() {
        return length == 0;
    }

    /**
     * The chained hash of block {@code i}: it identifies the whole prefix of {@code (i + 1) * blockSize}
     * units, not only that block.
     */
    public long blockHash(int i) {
        return blocks[i];
    }

    /** End offsets (in units, exclusive, ascending) of the messages that make up the key. */
    public int[] boundaries() {
        return boundaries.clone();
    }

    /** Number of message boundaries. */
    public int boundaryCount() {
        return boundaries.length;
    }

    /** The end offset of boundary {@code i}. */
    public int boundary(int i) {
        return boundaries[i];
    }

    /**
     * A hash of the key's stable start: the prefix up to the first message boundary, or up to the
     * anchor limit when that comes first (or when the key has no boundary). Requests that share this
     * prefix share the anchor, so a hash placement of an unlearned prefix sends them to one replica.
     */
    public long anchorHash() {
        return anchorHash;
    }

    /**
     * The key of this key's first {@code units} units: the same blocks up to there (only full blocks), the
     * boundaries within it, the same anchor. For a router that should see only the start of a prompt
     * (say, up to its first message boundary).
     */
    public PromptKey prefix(int units) {
        if (units < 0) {
            throw new IllegalArgumentException("prefix length must not be negative, was " + units);
        }
        if (units >= length) {
            return this;
        }
        int nb = 0;
        while (nb < boundaries.length && boundaries[nb] <= units) {
            nb++;
        }
        return new PromptKey(
                unit,
                blockSize,
                units,
                Arrays.copyOf(blocks, Math.min(blocks.length, units / blockSize)),
                nb == 0 ? NO_BOUNDARIES : Arrays.copyOf(boundaries, nb),
                anchorHash);
    }

    /** A key made of the given block hashes (tests and tools in this package). */
    static PromptKey forBlocks(long[] blocks, int blockSize) {
        return new PromptKey(
                Unit.TOKENS,
                blockSize,
                blocks.length * blockSize,
                blocks.clone(),
                NO_BOUNDARIES,
                blocks.length == 0 ? SEED : blocks[0]);
    }

    /**
     * As {@link #forBlocks}, taking the array as it is: the caller hands it over and never touches it again
     * (benchmarks that make a key per operation and should not time a second copy of it).
     */
    static PromptKey wrapBlocks(long[] blocks, int blockSize) {
        return new PromptKey(
                Unit.TOKENS,
                blockSize,
                blocks.length * blockSize,
                blocks,
                NO_BOUNDARIES,
                blocks.length == 0 ? SEED : blocks[0]);
    }

    /** Package-private access to the block hashes for the tree; never modified. */
    long[] blocks() {
        return blocks;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PromptKey k
                && k.unit == unit
                && k.blockSize == blockSize
                && k.length == length
                && k.anchorHash == anchorHash
                && Arrays.equals(k.blocks, blocks)
                && Arrays.equals(k.boundaries, boundaries);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(blocks.length == 0 ? anchorHash : blocks[blocks.length - 1]) * 31 + length;
    }

    /** Never the prompt text: lengths only. */
    @Override
    public String toString() {
        return "PromptKey[" + unit.name().toLowerCase(java.util.Locale.ROOT) + " length=" + length + " blocks="
                + blocks.length + " boundaries=" + boundaries.length + "]";
    }

    /**
     * Builds a key incrementally, hashing each block as it fills, so the whole prompt never has to be
     * held as one string. Text is copied into the block buffer in runs (no per-character bookkeeping).
     *
     * <p>Text keys keep the current block as Latin-1 bytes while its characters allow it (every ASCII
     * and Latin-1 character), and switch the block to UTF-16 chars at its first character above U+00FF;
     * {@link #appendLatin1} hashes a full block straight from the caller's array without copying it.
     * Whatever mix of {@code append} calls produced a text, its blocks get the same hashes (see the
     * block hashing below). Not thread-safe; one builder per key. {@link #copy()} forks one.
     */
    public static final class Builder {
        private final Unit unit;
        private final int blockSize;
        private final int anchorLimit;
        /** The current block while it is Latin-1 (text keys). */
        private final byte[] narrow;
        /**
         * The current block once it holds a character above U+00FF, as UTF-16LE (two bytes a character, so
         * that {@link #hashWide(byte[], int, long)} reads four characters a load); made when first needed.
         */
        private byte[] wide;

        private boolean isWide;
        /** Scratch for copying out of Strings. */
        private char[] scratch;

        private final int[] tokens;
        private int fill;
        private int length;
        private long chain = SEED;
        private long[] blocks = new long[8];
        private int blockCount;
        private int[] bounds = new int[4];
        private int boundCount;
        private long anchor;
        private boolean anchorSet;

        private Builder(Unit unit, int blockSize, int anchorLimit) {
            if (blockSize < 1 || blockSize > 1 << 16) {
                throw new IllegalArgumentException("block size must be in [1, 65536], was " + blockSize);
            }
            if (anchorLimit < 1) {
                throw new IllegalArgumentException("anchor limit must be at least 1, was " + anchorLimit);
            }
            this.unit = unit;
            this.blockSize = blockSize;
            this.anchorLimit = anchorLimit;
            this.narrow = unit == Unit.CHARS ? new byte[blockSize] : null;
            this.tokens = unit == Unit.TOKENS ? new int[blockSize] : null;
        }

        private Builder(Builder o) {
            this.unit = o.unit;
            this.blockSize = o.blockSize;
            this.anchorLimit = o.anchorLimit;
            this.narrow = o.narrow == null ? null : o.narrow.clone();
            this.wide = o.wide == null ? null : o.wide.clone();
            this.isWide = o.isWide;
            this.tokens = o.tokens == null ? null : o.tokens.clone();
            this.fill = o.fill;
            this.length = o.length;
            this.chain = o.chain;
            this.blocks = Arrays.copyOf(o.blocks, Math.max(8, o.blockCount + 8));
            this.blockCount = o.blockCount;
            this.bounds = Arrays.copyOf(o.bounds, Math.max(4, o.boundCount + 4));
            this.boundCount = o.boundCount;
            this.anchor = o.anchor;
            this.anchorSet = o.anchorSet;
        }

        /**
         * An independent builder in this one's state: appending to either leaves the other unchanged. For
         * keys that extend a key already built (a conversation followed by its reply) without hashing the
         * shared part again. Costs a copy of the block hashes so far.
         */
        public Builder copy() {
            return new Builder(this);
        }

        /** Appends the characters of {@code s}. */
        public Builder append(CharSequence s) {
            requireUnit(Unit.CHARS);
            int n = s.length();
            if (scratch == null) {
                scratch = new char[blockSize];
            }
            for (int pos = 0; pos < n; ) {
                int take = room(n - pos);
                if (s instanceof String str) {
                    str.getChars(pos, pos + take, scratch, 0);
                } else {
                    for (int k = 0; k < take; k++) {
                        scratch[k] = s.charAt(pos + k);
                    }
                }
                put(scratch, 0, take);
                pos += take;
            }
            return this;
        }

        /** Appends one character. */
        public Builder append(char c) {
            requireUnit(Unit.CHARS);
            if (c > 0xFF && !isWide) {
                widen();
            }
            if (isWide) {
                CHARS.set(wide, fill << 1, c);
            } else {
                narrow[fill] = (byte) c;
            }
            advance(1);
            return this;
        }

        /** Appends {@code len} characters of {@code src} from {@code off}. */
        public Builder append(char[] src, int off, int len) {
            requireUnit(Unit.CHARS);
            Objects.checkFromIndexSize(off, len, src.length);
            for (int pos = 0; pos < len; ) {
                int take = room(len - pos);
                put(src, off + pos, take);
                pos += take;
            }
            return this;
        }

        /**
         * Appends {@code len} characters given as Latin-1 bytes: each byte of {@code src} from {@code off}
         * is the character U+0000 to U+00FF of the same value (so an ASCII run of a UTF-8 body can be
         * passed as it is). The key is the one {@code append(CharSequence)} makes of the same characters;
         * full blocks are hashed straight from {@code src}.
         */
        public Builder appendLatin1(byte[] src, int off, int len) {
            requireUnit(Unit.CHARS);
            Objects.checkFromIndexSize(off, len, src.length);
            int pos = 0;
            while (pos < len) {
                if (fill == 0) {
                    // whole blocks hashed straight from src, in one tight loop (up to the anchor limit first)
                    int whole = (len - pos) / blockSize;
                    if (!anchorSet) {
                        whole = Math.min(whole, (anchorLimit - length) / blockSize);
                    }
                    if (whole > 0) {
                        if (blocks.length - blockCount < whole) {
                            blocks = Arrays.copyOf(blocks, Math.max(blockCount + whole, blocks.length * 2));
                        }
                        long[] bl = blocks;
                        int bc = blockCount;
                        long c = chain;
                        for (int k = 0, p = off + pos; k < whole; k++, p += blockSize) {
                            c = hashLatin1(src, p, blockSize, c);
                            bl[bc++] = c;
                        }
                        chain = c;
                        blockCount = bc;
                        length += whole * blockSize;
                        pos += whole * blockSize;
                        isWide = false;
                        if (!anchorSet && length == anchorLimit) {
                            setAnchor();
                        }
                        continue;
                    }
                }
                int take = room(len - pos);
                if (isWide) {
                    for (int k = 0; k < take; k++) {
                        CHARS.set(wide, (fill + k) << 1, (char) (src[off + pos + k] & 0xFF));
                    }
                } else {
                    System.arraycopy(src, off + pos, narrow, fill, take);
                }
                advance(take);
                pos += take;
            }
            return this;
        }

        /** Copies {@code take} chars (at most the room left) into the current block, narrowing while it can. */
        private void put(char[] src, int off, int take) {
            if (!isWide) {
                byte[] nb = narrow;
                int f = fill;
                int bits = 0;
                for (int k = 0; k < take; k++) {
                    char c = src[off + k];
                    bits |= c;
                    nb[f + k] = (byte) c;
                }
                if (bits > 0xFF) {
                    widen();
                }
            }
            if (isWide) {
                byte[] w = wide;
                for (int k = 0, at = fill << 1; k < take; k++, at += 2) {
                    CHARS.set(w, at, src[off + k]);
                }
            }
            advance(take);
        }

        /** Moves the current block from Latin-1 bytes to chars (its first character above U+00FF). */
        private void widen() {
            if (wide == null) {
                wide = new byte[blockSize << 1];
            }
            for (int k = 0; k < fill; k++) {
                CHARS.set(wide, k << 1, (char) (narrow[k] & 0xFF));
            }
            isWide = true;
        }

        void appendUnit(int token) {
            tokens[fill] = token;
            advance(1);
        }

        /** Appends {@code len} token ids of {@code src} from {@code off} (token keys only). */
        public Builder append(int[] src, int off, int len) {
            requireUnit(Unit.TOKENS);
            for (int pos = 0; pos < len; ) {
                int take = room(len - pos);
                System.arraycopy(src, off + pos, tokens, fill, take);
                advance(take);
                pos += take;
            }
            return this;
        }

        /** How many units can go into the buffer now: up to the block's end and to the anchor limit. */
        private int room(int want) {
            int r = Math.min(want, blockSize - fill);
            if (!anchorSet && length < anchorLimit) {
                r = Math.min(r, anchorLimit - length);
            }
            return r;
        }

        private void advance(int k) {
            fill += k;
            length += k;
            if (fill == blockSize) {
                chain = blockHash(blockSize, chain);
                pushBlock();
            }
            if (!anchorSet && length == anchorLimit) {
                setAnchor();
            }
        }

        private void pushBlock() {
            if (blockCount == blocks.length) {
                blocks = Arrays.copyOf(blocks, blockCount * 2);
            }
            blocks[blockCount++] = chain;
            fill = 0;
            isWide = false;
        }

        /** The hash of the current block's first {@code n} units, chained on {@code seed}. */
        private long blockHash(int n, long seed) {
            if (unit == Unit.TOKENS) {
                return hashInts(tokens, n, seed);
            }
            return isWide ? hashWide(wide, n, seed) : hashLatin1(narrow, 0, n, seed);
        }

        /** Marks the end of a message at the current length. Repeated marks at one offset count once. */
        public Builder boundary() {
            if (length == 0 || (boundCount > 0 && bounds[boundCount - 1] == length)) {
                return this;
            }
            if (!anchorSet) {
                setAnchor();
            }
            if (boundCount == bounds.length) {
                bounds = Arrays.copyOf(bounds, boundCount * 2);
            }
            bounds[boundCount++] = length;
            return this;
        }

        /** Current length in units. */
        public int length() {
            return length;
        }

        private void setAnchor() {
            anchor = fill == 0 ? chain : blockHash(fill, chain) ^ fill;
            anchorSet = true;
        }

        private void requireUnit(Unit expected) {
            if (unit != expected) {
                throw new IllegalStateException("this builder makes " + unit + " keys");
            }
        }

        /** The key of everything appended so far; the builder stays usable (appending continues the text). */
        public PromptKey build() {
            long a = anchorSet ? anchor : fill == 0 ? chain : blockHash(fill, chain) ^ fill;
            return new PromptKey(
                    unit,
                    blockSize,
                    length,
                    Arrays.copyOf(blocks, blockCount),
                    boundCount == 0 ? NO_BOUNDARIES : Arrays.copyOf(bounds, boundCount),
                    a);
        }
    }

    // Block hashing: the structure of xxHash64 (four accumulator lanes, each round a multiply, a rotate
    // and a multiply, so a difference in any input bit spreads to every output bit). Not cryptographic: a
    // crafted collision could only misroute a request. Chained: the seed is the previous block's hash.
    //
    // A text block's hash is a function of its characters alone. When every character is at most U+00FF
    // (all ASCII and Latin-1 text) the block is hashed over one byte per character, eight characters per
    // 64-bit lane read straight from a byte array (hashLatin1: a VarHandle long view, the tail byte by
    // byte); otherwise over its UTF-16 chars, four per lane (hashWide). Either way the block's own hash
    // is then chained on the previous block's by a short mix (chain), so that hashing a block does not
    // wait for the block before it and consecutive blocks overlap in the CPU. A
    // builder decides per block from the characters it holds, so the same text gives the same hashes
    // whether it arrived as Strings, chars, or Latin-1 bytes from a request body. Token blocks hash two
    // ids per lane (hashInts).
    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P4 = 0x85EBCA77C2B2AE63L;
    private static final long P5 = 0x27D4EB2F165667C5L;
    /** The first lane's start, {@code P1 + P2} wrapped to 64 bits (written out: it overflows on purpose). */
    private static final long LANE1 = 0x60EA27EEADC0B5D6L;

    private static long round(long acc, long input) {
        return Long.rotateLeft(acc + input * P2, 31) * P1;
    }

    private static long merge(long h, long acc) {
        return (h ^ round(0, acc)) * P1 + P4;
    }

    private static final long WIDE = 0x61C8864680B583EBL;
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle CHARS = MethodHandles.byteArrayViewVarHandle(char[].class, ByteOrder.LITTLE_ENDIAN);

    private static long word(char[] c, int i) {
        return c[i] | (long) c[i + 1] << 16 | (long) c[i + 2] << 32 | (long) c[i + 3] << 48;
    }

    private static long word(int[] t, int i) {
        return (t[i] & 0xFFFFFFFFL) | (long) t[i + 1] << 32;
    }

    /**
     * Hash of the {@code n} Latin-1 characters of {@code b} from {@code off}, chained on {@code seed}: the
     * block's own hash (independent of the seed, so the CPU overlaps consecutive blocks) combined with
     * the seed by {@link #chain}, a bijection of the block hash for a given seed.
     */
    static long hashLatin1(byte[] b, int off, int n, long seed) {
        long a1 = LANE1, a2 = P2, a3 = 0, a4 = -P1;
        int i = off;
        int end = off + n;
        for (; i + 32 <= end; i += 32) {
            a1 = round(a1, (long) LONGS.get(b, i));
            a2 = round(a2, (long) LONGS.get(b, i + 8));
            a3 = round(a3, (long) LONGS.get(b, i + 16));
            a4 = round(a4, (long) LONGS.get(b, i + 24));
        }
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        h += n * P5;
        for (; i + 8 <= end; i += 8) {
            h = Long.rotateLeft(h ^ round(0, (long) LONGS.get(b, i)), 27) * P1 + P4;
        }
        for (; i < end; i++) {
            h = Long.rotateLeft(h ^ ((b[i] & 0xFF) * P5), 11) * P1;
        }
        return chain(seed, avalanche(h));
    }

    /** The chained hash of a block whose own hash is {@code block}, after the prefix hashed to {@code seed}. */
    private static long chain(long seed, long block) {
        long x = seed * P2 + block;
        x ^= x >>> 29;
        x *= P3;
        return x ^ (x >>> 32);
    }

    /**
     * Hash of the first {@code n} chars of {@code c} (a block with a character above U+00FF), chained on
     * {@code seed}: four chars per lane, the block's own hash (salted, so that it is never taken for a
     * Latin-1 block's) combined with the seed by {@link #chain}, as in {@link #hashLatin1}.
     */
    static long hashWide(char[] c, int n, long seed) {
        long a1 = LANE1, a2 = P2, a3 = 0, a4 = -P1;
        int i = 0;
        for (; i + 16 <= n; i += 16) {
            a1 = round(a1, word(c, i));
            a2 = round(a2, word(c, i + 4));
            a3 = round(a3, word(c, i + 8));
            a4 = round(a4, word(c, i + 12));
        }
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        h += n * P5 + WIDE;
        for (; i + 4 <= n; i += 4) {
            h = Long.rotateLeft(h ^ round(0, word(c, i)), 27) * P1 + P4;
        }
        for (; i < n; i++) {
            h = Long.rotateLeft(h ^ (c[i] * P5), 11) * P1;
        }
        return chain(seed, avalanche(h));
    }

    /**
     * {@link #hashWide(char[], int, long)} of the first {@code n} characters held as UTF-16LE in {@code w}
     * (two bytes each): the same value, a lane of four characters read in one little-endian load.
     */
    static long hashWide(byte[] w, int n, long seed) {
        long a1 = LANE1, a2 = P2, a3 = 0, a4 = -P1;
        int i = 0;
        for (; i + 16 <= n; i += 16) {
            int at = i << 1;
            a1 = round(a1, (long) LONGS.get(w, at));
            a2 = round(a2, (long) LONGS.get(w, at + 8));
            a3 = round(a3, (long) LONGS.get(w, at + 16));
            a4 = round(a4, (long) LONGS.get(w, at + 24));
        }
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        h += n * P5 + WIDE;
        for (; i + 4 <= n; i += 4) {
            h = Long.rotateLeft(h ^ round(0, (long) LONGS.get(w, i << 1)), 27) * P1 + P4;
        }
        for (; i < n; i++) {
            h = Long.rotateLeft(h ^ ((char) CHARS.get(w, i << 1) * P5), 11) * P1;
        }
        return chain(seed, avalanche(h));
    }

    /** Hash of the first {@code n} token ids of {@code t}, chained on {@code seed}. */
    static long hashInts(int[] t, int n, long seed) {
        long a1 = seed + P1 + P2, a2 = seed + P2, a3 = seed, a4 = seed - P1;
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            a1 = round(a1, word(t, i));
            a2 = round(a2, word(t, i + 2));
            a3 = round(a3, word(t, i + 4));
            a4 = round(a4, word(t, i + 6));
        }
        long h = finish(a1, a2, a3, a4, seed, n);
        for (; i + 2 <= n; i += 2) {
            h = Long.rotateLeft(h ^ round(0, word(t, i)), 27) * P1 + P4;
        }
        for (; i < n; i++) {
            h = Long.rotateLeft(h ^ ((t[i] & 0xFFFFFFFFL) * P1), 23) * P2 + P3;
        }
        return avalanche(h);
    }

    private static long finish(long a1, long a2, long a3, long a4, long seed, int n) {
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        h = merge(h, a1);
        h = merge(h, a2);
        h = merge(h, a3);
        h = merge(h, a4);
        return h + n + seed * P5;
    }

    private static long avalanche(long h) {
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        return h ^ (h >>> 32);
    }
}
