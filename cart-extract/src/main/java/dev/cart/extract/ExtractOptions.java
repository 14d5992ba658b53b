package dev.cart.extract;

import dev.cart.core.PromptKey;

/**
 * How {@link PromptExtractor} turns request bodies into keys. Immutable; validated when built.
 *
 * <pre>{@code
 * ExtractOptions opts = ExtractOptions.builder()
 *         .blockChars(64)
 *         .remoteMediaUrlPolicy(403)   // refuse media the replica would fetch from a URL
 *         .build();
 * }</pre>
 */
public final class ExtractOptions {

    /** Default {@link Builder#maxNestingDepth(int)}. */
    public static final int DEFAULT_MAX_NESTING_DEPTH = 64;
    /** Largest accepted {@link Builder#maxNestingDepth(int)}. */
    public static final int MAX_NESTING_DEPTH_LIMIT = 1000;
    /** Default {@link Builder#maxStringLength(int)}: room for 20 MB of inline media and then some. */
    public static final int DEFAULT_MAX_STRING_LENGTH = 50_000_000;

    private static final ExtractOptions DEFAULTS = builder().build();

    private final int blockChars;
    private final int anchorLimit;
    private final Integer remoteMediaUrlPolicy;
    private final int maxNestingDepth;
    private final int maxStringLength;

    private ExtractOptions(Builder b) {
        this.blockChars = b.blockChars;
        this.anchorLimit = b.anchorLimit;
        this.remoteMediaUrlPolicy = b.remoteMediaUrlPolicy;
        this.maxNestingDepth = b.maxNestingDepth;
        this.maxStringLength = b.maxStringLength;
    }

    /** Block size 64 characters, anchor limit 1024, remote media allowed, nesting depth 64, strings up to 50 M. */
    public static ExtractOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Characters per key block. */
    public int blockChars() {
        return blockChars;
    }

    /** Longest prefix, in characters, that the key's anchor hash covers. */
    public int anchorLimit() {
        return anchorLimit;
    }

    /** The HTTP status that rejects a request with remote media, or null when remote media is allowed. */
    public Integer remoteMediaUrlPolicy() {
        return remoteMediaUrlPolicy;
    }

    /** Deepest accepted nesting of JSON objects and arrays (the body object itself is depth 1). */
    public int maxNestingDepth() {
        return maxNestingDepth;
    }

    /** Longest accepted JSON string value, in characters (inline media: in bytes). */
    public int maxStringLength() {
        return maxStringLength;
    }

    @Override
    public String toString() {
        return "ExtractOptions[blockChars=" + blockChars + ", anchorLimit=" + anchorLimit
                + ", remoteMediaUrlPolicy=" + remoteMediaUrlPolicy + ", maxNestingDepth=" + maxNestingDepth
                + ", maxStringLength=" + maxStringLength + "]";
    }

    /** Builds {@link ExtractOptions}; {@link #build()} rejects a bad value naming it and its allowed range. */
    public static final class Builder {
        private int blockChars = PromptKey.DEFAULT_BLOCK_CHARS;
        private int anchorLimit = PromptKey.DEFAULT_ANCHOR_LIMIT;
        private Integer remoteMediaUrlPolicy;
        private int maxNestingDepth = DEFAULT_MAX_NESTING_DEPTH;
        private int maxStringLength = DEFAULT_MAX_STRING_LENGTH;

        private Builder() {
        }

        /** Characters per key block, in [1, 65536]; default 64. Must match the prefix tree's block size. */
        public Builder blockChars(int blockChars) {
            this.blockChars = blockChars;
            return this;
        }

        /** Anchor limit in characters, at least 1; default 1024. */
        public Builder anchorLimit(int anchorLimit) {
            this.anchorLimit = anchorLimit;
            return this;
        }

        /**
         * The HTTP status, in [400, 599], that rejects a request whose media points at a URL the replica
         * would have to fetch; null (the default) allows such requests.
         */
        public Builder remoteMediaUrlPolicy(Integer statusOrNull) {
            this.remoteMediaUrlPolicy = statusOrNull;
            return this;
        }

        /** Deepest accepted JSON nesting, in [1, 1000]; default 64. */
        public Builder maxNestingDepth(int maxNestingDepth) {
            this.maxNestingDepth = maxNestingDepth;
            return this;
        }

        /** Longest accepted JSON string, at least 1; default 50,000,000. */
        public Builder maxStringLength(int maxStringLength) {
            this.maxStringLength = maxStringLength;
            return this;
        }

        /** @throws IllegalArgumentException naming the first out-of-range option and its allowed range */
        public ExtractOptions build() {
            if (blockChars < 1 || blockChars > 1 << 16) {
                throw new IllegalArgumentException("blockChars must be in [1, 65536], was " + blockChars);
            }
            if (anchorLimit < 1) {
                throw new IllegalArgumentException("anchorLimit must be at least 1, was " + anchorLimit);
            }
            if (remoteMediaUrlPolicy != null && (remoteMediaUrlPolicy < 400 || remoteMediaUrlPolicy > 599)) {
                throw new IllegalArgumentException(
                        "remoteMediaUrlPolicy must be null or in [400, 599], was " + remoteMediaUrlPolicy);
            }
            if (maxNestingDepth < 1 || maxNestingDepth > MAX_NESTING_DEPTH_LIMIT) {
                throw new IllegalArgumentException(
                        "maxNestingDepth must be in [1, " + MAX_NESTING_DEPTH_LIMIT + "], was " + maxNestingDepth);
            }
            if (maxStringLength < 1) {
                throw new IllegalArgumentException("maxStringLength must be at least 1, was " + maxStringLength);
            }
            return new ExtractOptions(this);
        }
    }
}
