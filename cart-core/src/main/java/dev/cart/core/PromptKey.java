package dev.cart.core;

import dev.cart.core.internal.KeyAccess;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

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
 * for every key given to one router.
 *
 * <p>Instances are immutable and thread-safe. Build text keys with {@link #textBuilder(int)}.
 */
public final class PromptKey {

    /** What one unit of a key's length is. */
    public enum Unit {
        /** UTF-16 characters of the prompt's canonical text (character mode). */
        CHARS,
        /** Token ids of the model's tokenizer (token mode). */
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
    private static final byte[] NO_BYTES = new byte[0];
    private static final int[] NO_TOKENS = new int[0];

    static {
        KeyAccess.install(new KeyAccess.Secrets() {
            @Override
            public long[] blocks(PromptKey key) {
                return key.blocks;
            }

            @Override
            public void appendLatin1(Builder builder, byte[] src, int off, int len) {
                builder.appendLatin1(src, off, len);
            }

            @Override
            public void appendCesu8(Builder builder, byte[] src, int off, int len, int units) {
                builder.appendCesu8(src, off, len, units);
            }

            @Override
            public PromptKey forBlocks(long[] blocks, int blockSize) {
                return PromptKey.forBlocks(blocks, blockSize);
            }

            @Override
            public PromptKey wrapBlocks(long[] blocks, int blockSize) {
                return PromptKey.wrapBlocks(blocks, blockSize);
            }

            @Override
            public long hashBytes(byte[] b, int off, int n, long seed) {
                return PromptKey.hashBytes(b, off, n, seed);
            }
        });
    }

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

    /**
     * The empty key (a request with no prompt text).
     *
     * @return the empty character key (shared; keys are immutable)
     */
    public static PromptKey empty() {
        return EMPTY_CHARS;
    }

    /**
     * A key for text, hashed in blocks of {@code blockChars} characters.
     *
     * @param text       the prompt's text; read, not kept
     * @param blockChars characters per block, in [1, 65536]
     * @return the key, with no message boundaries
     * @throws IllegalArgumentException if {@code blockChars} is out of range
     */
    public static PromptKey ofText(CharSequence text, int blockChars) {
        return textBuilder(blockChars).append(text).build();
    }

    /**
     * Starts a text key with blocks of {@code blockChars} characters.
     *
     * @param blockChars characters per block, in [1, 65536]
     * @return a new builder with the default anchor limit
     * @throws IllegalArgumentException if {@code blockChars} is out of range
     */
    public static Builder textBuilder(int blockChars) {
        return new Builder(Unit.CHARS, blockChars, DEFAULT_ANCHOR_LIMIT);
    }

    /**
     * Starts a text key with blocks of {@code blockChars} characters and the given anchor limit.
     *
     * @param blockChars  characters per block, in [1, 65536]
     * @param anchorLimit characters the {@linkplain #anchorHash() anchor} covers at most, at least 1
     * @return a new builder
     * @throws IllegalArgumentException if an argument is out of range
     */
    public static Builder textBuilder(int blockChars, int anchorLimit) {
        return new Builder(Unit.CHARS, blockChars, anchorLimit);
    }

    /**
     * Starts a token key with blocks of {@code blockTokens} token ids and the given anchor limit (tokens).
     *
     * @param blockTokens token ids per block, in [1, 65536]
     * @param anchorLimit tokens the {@linkplain #anchorHash() anchor} covers at most, at least 1
     * @return a new builder
     * @throws IllegalArgumentException if an argument is out of range
     */
    public static Builder tokenBuilder(int blockTokens, int anchorLimit) {
        return new Builder(Unit.TOKENS, blockTokens, anchorLimit);
    }

    /**
     * A key over token ids, hashed in blocks of {@code blockTokens} tokens.
     *
     * @param boundaries the end offset (exclusive, in tokens) of each message, ascending
     * @param tokens      the prompt's token ids; read, not kept
     * @param blockTokens token ids per block, in [1, 65536]
     * @param anchorLimit tokens the anchor covers at most, at least 1
     * @return the key
     * @throws IllegalArgumentException if an argument is out of range, or the boundaries are not ascending within
     *     the key
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

    /**
     * What the key's lengths count.
     *
     * @return {@link Unit#CHARS} or {@link Unit#TOKENS}
     */
    public Unit unit() {
        return unit;
    }

    /**
     * Units per block.
     *
     * @return the block size, in [1, 65536]
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * Length of the whole key in units (characters or tokens), including a trailing partial block.
     *
     * @return the length, 0 or more
     */
    public int length() {
        return length;
    }

    /**
     * Number of full blocks: the part of the key that can match.
     *
     * @return {@code length() / blockSize()}
     */
    public int blockCount() {
        return blocks.length;
    }

    /**
     * True when the key has no text at all.
     *
     * @return true if {@link #length()} is 0
     */
    public boolean isEmpty() {
        return length == 0;
    }

    /**
     * The chained hash of block {@code i}: it identifies the whole prefix of {@code (i + 1) * blockSize}
     * units, not only that block.
     *
     * @param i a block's index, in [0, {@link #blockCount()})
     * @return the block's chained hash
     * @throws ArrayIndexOutOfBoundsException if {@code i} is out of range
     */
    public long blockHash(int i) {
        return blocks[i];
    }

    /**
     * End offsets (in units, exclusive, ascending) of the messages that make up the key.
     *
     * @return a new array (a copy)
     */
    public int[] boundaries() {
        return boundaries.clone();
    }

    /**
     * Number of message boundaries.
     *
     * @return the count, 0 or more
     */
    public int boundaryCount() {
        return boundaries.length;
    }

    /**
     * The end offset of boundary {@code i}.
     *
     * @param i a boundary's index, in [0, {@link #boundaryCount()})
     * @return its end offset in units
     * @throws ArrayIndexOutOfBoundsException if {@code i} is out of range
     */
    public int boundary(int i) {
        return boundaries[i];
    }

    /**
     * A hash of the key's stable start: the prefix up to the first message boundary, or up to the
     * anchor limit when that comes first (or when the key has no boundary). Requests that share this
     * prefix share the anchor, so a hash placement of an unlearned prefix sends them to one replica.
     *
     * @return the anchor's hash
     */
    public long anchorHash() {
        return anchorHash;
    }

    /**
     * The key of this key's first {@code units} units: the same blocks up to there (only full blocks), the
     * boundaries within it, the same anchor. For a router that should see only the start of a prompt
     * (say, up to its first message boundary).
     *
     * @param units the prefix's length in units, 0 or more
     * @return the prefix; this key when {@code units} is at least its length
     * @throws IllegalArgumentException if {@code units} is negative
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
     * <p>Text keys hold the current block as CESU-8: each UTF-16 unit encoded on its own (U+0000 to U+007F
     * one byte, to U+07FF two, to U+FFFF three; a surrogate, paired or not, is three bytes), and a block is
     * hashed over those bytes. Blocks are cut every {@code blockSize} units whatever their byte length.
     * One byte form for every character lets a UTF-8 request body enter the key as bytes ({@link
     * #appendCesu8}: only four-byte sequences need rewriting), and an ASCII block is its own bytes, hashed
     * straight from the caller's array when it is whole. Whatever mix of {@code append} calls produced a
     * text, its blocks get the same hashes. Not thread-safe; one builder per key. {@link #copy()} forks one.
     */
    public static final class Builder {
        private final Unit unit;
        private final int blockSize;
        private final int anchorLimit;
        /** The current block's units as CESU-8 (text keys): at most three bytes a unit; empty for token keys. */
        private final byte[] buf;
        /** Bytes of {@link #buf} in use. */
        private int bfill;
        /** Scratch for copying out of Strings; made on first use. */
        private char @Nullable [] scratch;

        /** The current block's token ids (token keys); empty for text keys. */
        private final int[] tokens;
        /** Units in the current block. */
        private int fill;

        private int length;
        private long chain = SEED;
        /** The block hashes so far: the first {@link #blockCount}; shared with keys built and copies. */
        private long[] blocks;
        /**
         * Whether {@link #blocks} came from the builder this one is a {@link #copy()} of, and must be copied
         * before a block is added. Blocks are only ever added past {@link #blockCount}, so an array may be
         * shared by a builder, its copies and the keys they built: none of them reads past its own count.
         */
        private boolean blocksShared;

        private int blockCount;
        private int[] bounds;
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
            this.buf = unit == Unit.CHARS ? new byte[blockSize * 3] : NO_BYTES;
            this.tokens = unit == Unit.TOKENS ? new int[blockSize] : NO_TOKENS;
            this.blocks = NO_BLOCKS;
            this.bounds = new int[4];
        }

        private Builder(Builder o) {
            this.unit = o.unit;
            this.blockSize = o.blockSize;
            this.anchorLimit = o.anchorLimit;
            this.buf = o.buf.length == 0 ? NO_BYTES : o.buf.clone();
            this.bfill = o.bfill;
            this.tokens = o.tokens.length == 0 ? NO_TOKENS : o.tokens.clone();
            this.fill = o.fill;
            this.length = o.length;
            this.chain = o.chain;
            this.blocks = o.blocks;
            this.blocksShared = true;
            this.blockCount = o.blockCount;
            this.bounds = Arrays.copyOf(o.bounds, Math.max(4, o.boundCount + 4));
            this.boundCount = o.boundCount;
            this.anchor = o.anchor;
            this.anchorSet = o.anchorSet;
        }

        /**
         * An independent builder in this one's state: appending to either leaves the other unchanged. For
         * keys that extend a key already built (a conversation followed by its reply) without hashing the
         * shared part again. The block hashes so far are shared, and copied by the first of the two to add
         * a block.
         *
         * @return this builder
         */
        public Builder copy() {
            return new Builder(this);
        }

        /**
         * Makes room for the blocks of {@code units} more units, for a caller that knows how long the key
         * will be: the block hashes are then held in one array of the key's size, which {@link #build()}
         * hands to the key as it is, and which never grows. The key is the same with or without it.
         *
         * @param units the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder reserve(int units) {
            if (units < 0) {
                throw new IllegalArgumentException("units must not be negative, was " + units);
            }
            int more = (int) Math.min(Integer.MAX_VALUE - 8, ((long) fill + units) / blockSize);
            if (more > 0 && (blocksShared || blocks.length - blockCount < more)) {
                blocks = Arrays.copyOf(blocks, blockCount + more);
                blocksShared = false;
            }
            return this;
        }

        /** Room for {@code more} blocks past {@link #blockCount} in an array of this builder's own. */
        private void roomForBlocks(int more) {
            if (blocksShared || blocks.length - blockCount < more) {
                int size = blocksShared
                        ? blockCount + Math.max(more, 8)
                        : Math.max(blockCount + more, Math.max(8, blocks.length * 2));
                blocks = Arrays.copyOf(blocks, size);
                blocksShared = false;
            }
        }

        /**
         * Appends the characters of {@code s} (a {@code String}'s or {@code StringBuilder}'s copied out a block at a time).
         *
         * @param s the characters; read, not kept
         * @return this builder
         */
        public Builder append(CharSequence s) {
            requireUnit(Unit.CHARS);
            int n = s.length();
            char[] scratch = this.scratch;
            if (scratch == null) {
                scratch = new char[blockSize];
                this.scratch = scratch;
            }
            for (int pos = 0; pos < n; ) {
                int take = room(n - pos);
                if (s instanceof String str) {
                    str.getChars(pos, pos + take, scratch, 0);
                } else if (s instanceof StringBuilder sb) {
                    sb.getChars(pos, pos + take, scratch, 0);
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

        /**
         * Appends one character.
         *
         * @param c one UTF-16 character
         * @return this builder
         */
        public Builder append(char c) {
            requireUnit(Unit.CHARS);
            if (c < 0x80) {
                buf[bfill++] = (byte) c;
            } else {
                bfill = encode(buf, bfill, c);
            }
            advance(1);
            return this;
        }

        /**
         * Appends {@code len} characters of {@code src} from {@code off}.
         *
         * @param src holds the units; read, not kept
         * @param off the first unit in {@code src}
         * @param len the number of units, 0 or more
         * @return this builder
         */
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
         * is the character U+0000 to U+00FF of the same value. The key is the one {@code
         * append(CharSequence)} makes of the same characters; whole ASCII blocks are hashed straight from
         * {@code src}. For UTF-8 text use {@link #appendCesu8}.
         */
        Builder appendLatin1(byte[] src, int off, int len) {
            requireUnit(Unit.CHARS);
            Objects.checkFromIndexSize(off, len, src.length);
            if (isAscii(src, off, len)) {
                appendAscii(src, off, len);
                return this;
            }
            int pos = 0;
            while (pos < len) {
                if (fill == 0) {
                    int whole = wholeBlocks(src, off + pos, (len - pos) / blockSize, true);
                    if (whole > 0) {
                        pos += whole * blockSize;
                        continue;
                    }
                }
                int take = room(len - pos);
                byte[] b = buf;
                int at = bfill;
                for (int k = off + pos, end = k + take; k < end; k++) {
                    byte v = src[k];
                    if (v >= 0) {
                        b[at++] = v;
                    } else {
                        b[at++] = (byte) (0xC0 | (v & 0xFF) >> 6);
                        b[at++] = (byte) (0x80 | v & 0x3F);
                    }
                }
                bfill = at;
                advance(take);
                pos += take;
            }
            return this;
        }

        /**
         * Appends the {@code units} UTF-16 units encoded as CESU-8 in {@code src[off, off + len)}: each unit
         * on its own in one to three bytes, as UTF-8 encodes U+0000 to U+FFFF (so UTF-8 text without
         * four-byte sequences is CESU-8 as it is; a four-byte sequence is written as its two surrogates,
         * three bytes each). {@code units} equals {@code len} exactly when the bytes are all ASCII, which
         * is the fast path: whole blocks hashed straight from {@code src}. The key is the one {@code
         * append(CharSequence)} makes of the same units. The bytes must be well-formed CESU-8 holding
         * exactly {@code units} units (the caller decoded or validated them); that is not checked beyond
         * what keeps this builder consistent.
         *
         * @throws IllegalArgumentException when the bytes turn out not to hold {@code units} units
         */
        Builder appendCesu8(byte[] src, int off, int len, int units) {
            requireUnit(Unit.CHARS);
            Objects.checkFromIndexSize(off, len, src.length);
            if (units == len) {
                appendAscii(src, off, len);
                return this;
            }
            if (units < 0 || units > len) {
                throw new IllegalArgumentException(len + " bytes cannot hold " + units + " units");
            }
            int p = off;
            int end = off + len;
            int left = units;
            while (left > 0) {
                if (end - p == left) {
                    appendAscii(src, p, left); // no continuation byte left: the rest is ASCII
                    return this;
                }
                int take = room(left);
                int q = take == left ? end : skipUnits(src, p, end, take);
                int nb = q - p;
                if (nb < take || nb > 3 * take) {
                    throw new IllegalArgumentException("the bytes do not hold " + units + " units");
                }
                if (fill == 0 && take == blockSize) {
                    chain = hashBlock(src, p, nb, take, chain);
                    pushBlock();
                    length += take;
                    if (!anchorSet && length == anchorLimit) {
                        setAnchor();
                    }
                } else {
                    System.arraycopy(src, p, buf, bfill, nb);
                    bfill += nb;
                    advance(take);
                }
                p = q;
                left -= take;
            }
            if (p != end) {
                throw new IllegalArgumentException("the bytes hold more than " + units + " units");
            }
            return this;
        }

        /** Appends {@code len} ASCII bytes (one unit each). */
        private void appendAscii(byte[] src, int off, int len) {
            int pos = 0;
            while (pos < len) {
                if (fill == 0) {
                    int whole = wholeBlocks(src, off + pos, (len - pos) / blockSize, false);
                    if (whole > 0) {
                        pos += whole * blockSize;
                        continue;
                    }
                }
                int take = room(len - pos);
                System.arraycopy(src, off + pos, buf, bfill, take);
                bfill += take;
                advance(take);
                pos += take;
            }
        }

        /**
         * Hashes up to {@code max} whole blocks of single-byte units straight from {@code src} at {@code p}
         * (the current block is empty), in one tight loop, up to the anchor limit first; with {@code
         * latin1}, stops at the first block holding a byte of 0x80 or above. Returns the blocks hashed.
         */
        private int wholeBlocks(byte[] src, int p, int max, boolean latin1) {
            int whole = max;
            if (!anchorSet) {
                whole = Math.min(whole, (anchorLimit - length) / blockSize);
            }
            if (whole <= 0) {
                return 0;
            }
            roomForBlocks(whole);
            long[] bl = blocks;
            int bc = blockCount;
            long c = chain;
            int k = 0;
            if (blockSize == 64) {
                // the default block size: each block's own hash straight-line (hash64), chained here
                Objects.checkFromIndexSize(p, whole * 64, src.length);
                for (int at = p; k < whole; k++, at += 64) {
                    if (latin1 && !isAscii(src, at, 64)) {
                        break;
                    }
                    c = chain(c, hash64(src, at));
                    bl[bc++] = c;
                }
            } else {
                for (int at = p; k < whole; k++, at += blockSize) {
                    if (latin1 && !isAscii(src, at, blockSize)) {
                        break;
                    }
                    c = hashBytes(src, at, blockSize, c);
                    bl[bc++] = c;
                }
            }
            chain = c;
            blockCount = bc;
            length += k * blockSize;
            if (!anchorSet && length == anchorLimit) {
                setAnchor();
            }
            return k;
        }

        /** Encodes {@code take} chars (at most the room left) into the current block. */
        private void put(char[] src, int off, int take) {
            byte[] b = buf;
            int at = bfill;
            for (int k = off, end = off + take; k < end; k++) {
                char c = src[k];
                if (c < 0x80) {
                    b[at++] = (byte) c;
                } else {
                    at = encode(b, at, c);
                }
            }
            bfill = at;
            advance(take);
        }

        void appendUnit(int token) {
            tokens[fill] = token;
            advance(1);
        }

        /**
         * Appends {@code len} token ids of {@code src} from {@code off} (token keys only).
         *
         * @param src holds the units; read, not kept
         * @param off the first unit in {@code src}
         * @param len the number of units, 0 or more
         * @return this builder
         */
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
                chain = unit == Unit.TOKENS ? hashInts(tokens, fill, chain) : hashBlock(buf, 0, bfill, fill, chain);
                pushBlock();
            }
            if (!anchorSet && length == anchorLimit) {
                setAnchor();
            }
        }

        private void pushBlock() {
            roomForBlocks(1);
            blocks[blockCount++] = chain;
            fill = 0;
            bfill = 0;
        }

        /** The hash of the current block's units so far, chained on {@code seed}. */
        private long blockHash(long seed) {
            if (unit == Unit.TOKENS) {
                return hashInts(tokens, fill, seed);
            }
            return hashBytes(buf, 0, bfill, seed);
        }

        /**
         * Marks the end of a message at the current length. Repeated marks at one offset count once.
         *
         * @return this builder
         */
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

        /**
         * Current length in units.
         *
         * @return the units appended so far
         */
        public int length() {
            return length;
        }

        private void setAnchor() {
            anchor = fill == 0 ? chain : blockHash(chain) ^ fill;
            anchorSet = true;
        }

        private void requireUnit(Unit expected) {
            if (unit != expected) {
                throw new IllegalStateException("this builder makes " + unit + " keys");
            }
        }

        /**
         * The key of everything appended so far; the builder stays usable (appending continues the text).
         * The block hashes are copied unless they fill the builder's array (see {@link #reserve}), which the
         * key then shares: the builder adds blocks only past them, so into a larger array.
         *
         * @return the key; the builder may go on
         */
        public PromptKey build() {
            long a = anchorSet ? anchor : fill == 0 ? chain : blockHash(chain) ^ fill;
            return new PromptKey(
                    unit,
                    blockSize,
                    length,
                    blocks.length == blockCount ? blocks : Arrays.copyOf(blocks, blockCount),
                    boundCount == 0 ? NO_BOUNDARIES : Arrays.copyOf(bounds, boundCount),
                    a);
        }
    }

    /** Writes the CESU-8 bytes of {@code c} (U+0080 or above) at {@code b[at]}; returns the end. */
    private static int encode(byte[] b, int at, char c) {
        if (c < 0x800) {
            b[at] = (byte) (0xC0 | c >> 6);
            b[at + 1] = (byte) (0x80 | c & 0x3F);
            return at + 2;
        }
        b[at] = (byte) (0xE0 | c >> 12);
        b[at + 1] = (byte) (0x80 | c >> 6 & 0x3F);
        b[at + 2] = (byte) (0x80 | c & 0x3F);
        return at + 3;
    }

    private static final long HIGH = 0x8080808080808080L;

    /** Whether the {@code n} bytes of {@code b} from {@code p} are all below 0x80 (32 at a time). */
    private static boolean isAscii(byte[] b, int p, int n) {
        long or = 0;
        int i = p;
        int end = p + n;
        for (; i + 32 <= end; i += 32) {
            or |= (long) LONGS.get(b, i)
                    | (long) LONGS.get(b, i + 8)
                    | (long) LONGS.get(b, i + 16)
                    | (long) LONGS.get(b, i + 24);
        }
        for (; i + 8 <= end; i += 8) {
            or |= (long) LONGS.get(b, i);
        }
        for (; i < end; i++) {
            or |= b[i] & 0xFF;
        }
        return (or & HIGH) == 0;
    }

    /**
     * The offset in {@code b[p, end)} (CESU-8 starting at a unit) where unit {@code want} starts, that is,
     * after {@code want} units; {@code end} when the bytes run out first. Units start at every byte that is
     * not a continuation byte ({@code 10xxxxxx}), and each takes at least one byte, so the next {@code k}
     * bytes hold at most the {@code k} units still wanted: counting the starts in them (eight bytes at a
     * time, the words independent of each other) and stepping over them converges in a few steps (ASCII in
     * one) without overshooting; the last unit's continuation bytes are then stepped over.
     */
    static int skipUnits(byte[] b, int p, int end, int want) {
        int q = p;
        int need = want;
        while (need > 0) {
            int to = q + need;
            if (to > end) {
                return end;
            }
            need -= starts(b, q, to);
            q = to;
        }
        while (q < end && (b[q] & 0xC0) == 0x80) {
            q++;
        }
        return q;
    }

    /** How many bytes of {@code b[from, to)} start a unit (are not continuation bytes). */
    private static int starts(byte[] b, int from, int to) {
        int n = 0;
        int i = from;
        for (; i + 8 <= to; i += 8) {
            long w = (long) LONGS.get(b, i);
            n += Long.bitCount((~w | w << 1) & HIGH);
        }
        if (i < to) {
            if (i + 8 <= b.length) {
                long w = (long) LONGS.get(b, i);
                n += Long.bitCount((~w | w << 1) & HIGH & ((1L << ((to - i) << 3)) - 1));
            } else {
                for (; i < to; i++) {
                    n += (b[i] & 0xC0) == 0x80 ? 0 : 1;
                }
            }
        }
        return n;
    }

    // Block hashing: the structure of xxHash64 (four accumulator lanes, each round a multiply, a rotate
    // and a multiply, so a difference in any input bit spreads to every output bit). Not cryptographic: a
    // crafted collision could only misroute a request. Chained: the seed is the previous block's hash.
    //
    // A text block is hashed over the CESU-8 bytes of its units (see Builder), eight bytes per 64-bit lane
    // read straight from a byte array (hashBytes: a VarHandle long view, the tail byte by byte). CESU-8 is
    // a prefix-free encoding of the units, so different blocks have different bytes; an ASCII block's
    // bytes are its characters. The block's own hash is then chained on the previous block's by a short
    // mix (chain), so that hashing a block does not wait for the block before it and consecutive blocks
    // overlap in the CPU. Token blocks hash two ids per lane (hashInts).
    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P4 = 0x85EBCA77C2B2AE63L;
    private static final long P5 = 0x27D4EB2F165667C5L;
    /** {@code 64 * P5} wrapped to 64 bits, the length term of a 64-byte block (overflows on purpose). */
    private static final long LEN64 = 0xF53ACBC59599F140L;
    /** The first lane's start, {@code P1 + P2} wrapped to 64 bits (written out: it overflows on purpose). */
    private static final long LANE1 = 0x60EA27EEADC0B5D6L;

    private static long round(long acc, long input) {
        return Long.rotateLeft(acc + input * P2, 31) * P1;
    }

    private static long merge(long h, long acc) {
        return (h ^ round(0, acc)) * P1 + P4;
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private static long word(int[] t, int i) {
        return (t[i] & 0xFFFFFFFFL) | (long) t[i + 1] << 32;
    }

    /**
     * Hash of the {@code n} bytes of {@code b} from {@code off}, chained on {@code seed}: the block's own
     * hash (independent of the seed, so the CPU overlaps consecutive blocks) combined with the seed by
     * {@link #chain}, a bijection of the block hash for a given seed.
     */
    static long hashBytes(byte[] b, int off, int n, long seed) {
        if (n == 64) {
            return chain(seed, hash64(b, off));
        }
        return hashBytesLoop(b, off, n, seed);
    }

    /** {@link #hashBytes} for any length, by its loops (package-private for the test against {@link #hash64}). */
    static long hashBytesLoop(byte[] b, int off, int n, long seed) {
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

    /**
     * The own hash (before {@link #chain}) that {@link #hashBytes} gives the 64 bytes of {@code b} from
     * {@code i}: the same rounds written out for the default block size, with no loop, no tail and the
     * length a constant, which is what the key builder's loop over whole ASCII blocks runs.
     */
    static long hash64(byte[] b, int i) {
        long a1 = round(LANE1, (long) LONGS.get(b, i));
        long a2 = round(P2, (long) LONGS.get(b, i + 8));
        long a3 = round(0, (long) LONGS.get(b, i + 16));
        long a4 = round(-P1, (long) LONGS.get(b, i + 24));
        a1 = round(a1, (long) LONGS.get(b, i + 32));
        a2 = round(a2, (long) LONGS.get(b, i + 40));
        a3 = round(a3, (long) LONGS.get(b, i + 48));
        a4 = round(a4, (long) LONGS.get(b, i + 56));
        long h = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
        return avalanche(h + LEN64);
    }

    /**
     * Hash of a full block of {@code units} units in the {@code n} bytes of {@code b} from {@code off},
     * chained on {@code seed}: {@link #hashBytes} when every unit is one byte (an ASCII block, whatever the
     * block size) or the block is shorter than a word; otherwise the same but for the bytes after the last
     * whole word, which are read as one word (the block's last eight bytes, shifted) instead of one by one.
     * A partial block (the anchor's) is hashed by {@link #hashBytes}.
     */
    static long hashBlock(byte[] b, int off, int n, int units, long seed) {
        if (n == units || n < 8) {
            return hashBytes(b, off, n, seed);
        }
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
        if (i < end) {
            long last = (long) LONGS.get(b, end - 8) >>> ((8 - (end - i)) << 3);
            h = Long.rotateLeft(h ^ round(0, last), 27) * P1 + P4;
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
