package dev.cart.extract;

import dev.cart.core.PromptKey;
import org.jspecify.annotations.Nullable;

/**
 * How {@link PromptExtractor} turns request bodies into keys. Immutable; validated when built.
 *
 * <pre>{@code
 * ExtractOptions opts = ExtractOptions.builder()
 *         .blockChars(64)
 *         .remoteMediaUrlPolicy(403)   // refuse media the replica would fetch from a URL
 *         .build();
 *
 * ExtractOptions tokens = ExtractOptions.builder()
 *         .tokenizer(Tokenizers.jtokkit("cl100k_base"))   // token mode
 *         .blockTokens(16)
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
    /** Default {@link Builder#tokenCacheEntries(int)}. */
    public static final int DEFAULT_TOKEN_CACHE_ENTRIES = 1000;
    /** Default {@link Builder#tokenCacheMaxChars(int)}: 64 Ki characters. */
    public static final int DEFAULT_TOKEN_CACHE_MAX_CHARS = 64 * 1024;
    /** Characters per token assumed when the token anchor limit is derived from the character one. */
    static final int CHARS_PER_TOKEN = 4;

    private static final ExtractOptions DEFAULTS = builder().build();

    private final int blockChars;
    private final int anchorLimit;
    private final @Nullable Integer remoteMediaUrlPolicy;
    private final int maxNestingDepth;
    private final int maxStringLength;
    private final @Nullable Tokenizer tokenizer;
    private final int blockTokens;
    private final int anchorTokens;
    private final int tokenCacheEntries;
    private final int tokenCacheMaxChars;
    private final int maxConcurrentTokenizations;

    private ExtractOptions(Builder b) {
        this.blockChars = b.blockChars;
        this.anchorLimit = b.anchorLimit;
        this.remoteMediaUrlPolicy = b.remoteMediaUrlPolicy;
        this.maxNestingDepth = b.maxNestingDepth;
        this.maxStringLength = b.maxStringLength;
        this.tokenizer = b.tokenizer;
        this.blockTokens = b.blockTokens;
        this.anchorTokens = b.anchorTokens != null ? b.anchorTokens : Math.max(1, b.anchorLimit / CHARS_PER_TOKEN);
        this.tokenCacheEntries = b.tokenCacheEntries;
        this.tokenCacheMaxChars = b.tokenCacheMaxChars;
        this.maxConcurrentTokenizations = b.maxConcurrentTokenizations != null
                ? b.maxConcurrentTokenizations
                : Runtime.getRuntime().availableProcessors();
    }

    /**
     * Character mode, block size 64 characters, anchor limit 1024, remote media allowed, nesting depth 64,
     * strings up to 50 M.
     *
     * @return the defaults (shared; options are immutable)
     */
    public static ExtractOptions defaults() {
        return DEFAULTS;
    }

    /**
     * A builder at the defaults.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Characters per key block.
     *
     * @return characters per block, in [1, 65536]
     */
    public int blockChars() {
        return blockChars;
    }

    /**
     * Longest prefix, in characters, that the key's anchor hash covers.
     *
     * @return the limit in characters, at least 1
     */
    public int anchorLimit() {
        return anchorLimit;
    }

    /**
     * The HTTP status that rejects a request with remote media, or null when remote media is allowed.
     *
     * @return a 4xx status, or null
     */
    public @Nullable Integer remoteMediaUrlPolicy() {
        return remoteMediaUrlPolicy;
    }

    /**
     * Deepest accepted nesting of JSON objects and arrays (the body object itself is depth 1).
     *
     * @return the depth, at least 1
     */
    public int maxNestingDepth() {
        return maxNestingDepth;
    }

    /**
     * Longest accepted JSON string value, in characters (inline media: in bytes).
     *
     * @return the length, at least 1
     */
    public int maxStringLength() {
        return maxStringLength;
    }

    /**
     * The tokenizer of token mode, or null in character mode (the default).
     *
     * @return the tokenizer, or null
     */
    public @Nullable Tokenizer tokenizer() {
        return tokenizer;
    }

    /**
     * Token ids per key block in token mode.
     *
     * @return token ids per block, in [1, 65536]
     */
    public int blockTokens() {
        return blockTokens;
    }

    /**
     * Longest prefix, in tokens, that the key's anchor hash covers in token mode.
     *
     * @return the limit in tokens, at least 1
     */
    public int anchorTokens() {
        return anchorTokens;
    }

    /**
     * Most segments the token cache holds (0: no cache).
     *
     * @return the entry cap, 0 or more
     */
    public int tokenCacheEntries() {
        return tokenCacheEntries;
    }

    /**
     * Longest segment, in characters, the token cache holds.
     *
     * @return the length cap, 0 or more
     */
    public int tokenCacheMaxChars() {
        return tokenCacheMaxChars;
    }

    /**
     * Most tokenizations of uncached segments running at once; a request that finds none free falls back.
     *
     * @return the limit, at least 1
     */
    public int maxConcurrentTokenizations() {
        return maxConcurrentTokenizations;
    }

    @Override
    public String toString() {
        return "ExtractOptions[blockChars=" + blockChars + ", anchorLimit=" + anchorLimit
                + ", remoteMediaUrlPolicy=" + remoteMediaUrlPolicy + ", maxNestingDepth=" + maxNestingDepth
                + ", maxStringLength=" + maxStringLength
                + (tokenizer == null
                        ? ", tokenizer=none"
                        : ", tokenizer=" + tokenizer.name()
                                + ", blockTokens=" + blockTokens + ", anchorTokens=" + anchorTokens
                                + ", tokenCacheEntries=" + tokenCacheEntries + ", tokenCacheMaxChars="
                                + tokenCacheMaxChars
                                + ", maxConcurrentTokenizations=" + maxConcurrentTokenizations)
                + "]";
    }

    /** Builds {@link ExtractOptions}; {@link #build()} rejects a bad value naming it and its allowed range. */
    public static final class Builder {
        private int blockChars = PromptKey.DEFAULT_BLOCK_CHARS;
        private int anchorLimit = PromptKey.DEFAULT_ANCHOR_LIMIT;
        private @Nullable Integer remoteMediaUrlPolicy;
        private int maxNestingDepth = DEFAULT_MAX_NESTING_DEPTH;
        private int maxStringLength = DEFAULT_MAX_STRING_LENGTH;
        private @Nullable Tokenizer tokenizer;
        private int blockTokens = PromptKey.DEFAULT_BLOCK_TOKENS;
        private @Nullable Integer anchorTokens; // null: derived from anchorLimit
        private int tokenCacheEntries = DEFAULT_TOKEN_CACHE_ENTRIES;
        private int tokenCacheMaxChars = DEFAULT_TOKEN_CACHE_MAX_CHARS;
        private @Nullable Integer maxConcurrentTokenizations; // null: the number of processors

        private Builder() {}

        /**
         * Characters per key block, in [1, 65536]; default 64. Must match the prefix tree's block size.
         *
         * @param blockChars characters per block, in [1, 65536]
         * @return this builder
         */
        public Builder blockChars(int blockChars) {
            this.blockChars = blockChars;
            return this;
        }

        /**
         * Anchor limit in characters, at least 1; default 1024.
         *
         * @param anchorLimit characters, at least 1
         * @return this builder
         */
        public Builder anchorLimit(int anchorLimit) {
            this.anchorLimit = anchorLimit;
            return this;
        }

        /**
         * The HTTP status, in [400, 599], that rejects a request whose media points at a URL the replica
         * would have to fetch; null (the default) allows such requests.
         *
         * @param statusOrNull a 4xx status, or null to allow remote media
         * @return this builder
         */
        public Builder remoteMediaUrlPolicy(@Nullable Integer statusOrNull) {
            this.remoteMediaUrlPolicy = statusOrNull;
            return this;
        }

        /**
         * Deepest accepted JSON nesting, in [1, 1000]; default 64.
         *
         * @param maxNestingDepth the depth, at least 1
         * @return this builder
         */
        public Builder maxNestingDepth(int maxNestingDepth) {
            this.maxNestingDepth = maxNestingDepth;
            return this;
        }

        /**
         * Longest accepted JSON string, at least 1; default 50,000,000.
         *
         * @param maxStringLength the length, at least 1
         * @return this builder
         */
        public Builder maxStringLength(int maxStringLength) {
            this.maxStringLength = maxStringLength;
            return this;
        }

        /**
         * Token mode: keys become token ids from {@code tokenizerOrNull} (e.g.
         * {@link Tokenizers#jtokkit(String) Tokenizers.jtokkit("cl100k_base")}); null (the default) keeps
         * character mode. See the module README, "Token mode".
         *
         * @param tokenizerOrNull the tokenizer, or null for character mode
         * @return this builder
         */
        public Builder tokenizer(@Nullable Tokenizer tokenizerOrNull) {
            this.tokenizer = tokenizerOrNull;
            return this;
        }

        /**
         * Token ids per key block in token mode, in [1, 65536]; default 16 (vLLM's block). Must match the tree's.
         *
         * @param blockTokens token ids per block, in [1, 65536]
         * @return this builder
         */
        public Builder blockTokens(int blockTokens) {
            this.blockTokens = blockTokens;
            return this;
        }

        /**
         * Anchor limit in tokens for token mode, at least 1; default {@code anchorLimit / 4} (256 by default).
         *
         * @param anchorTokens tokens, at least 1
         * @return this builder
         */
        public Builder anchorTokens(int anchorTokens) {
            this.anchorTokens = anchorTokens;
            return this;
        }

        /**
         * Most segments the token cache holds, at least 0 (no cache); default 1,000.
         *
         * @param entries the entry cap, 0 or more
         * @return this builder
         */
        public Builder tokenCacheEntries(int entries) {
            this.tokenCacheEntries = entries;
            return this;
        }

        /**
         * Longest segment, in characters, the token cache holds, at least 0; default 65,536.
         *
         * @param maxChars characters, 0 or more
         * @return this builder
         */
        public Builder tokenCacheMaxChars(int maxChars) {
            this.tokenCacheMaxChars = maxChars;
            return this;
        }

        /**
         * Most tokenizations of uncached segments running at once, at least 1; default the number of
         * processors. A request that finds none free does not wait: its key is made in characters.
         *
         * @param max the limit, at least 1
         * @return this builder
         */
        public Builder maxConcurrentTokenizations(int max) {
            this.maxConcurrentTokenizations = max;
            return this;
        }

        /**
         * @throws IllegalArgumentException naming the first out-of-range option and its allowed range
         *
         * @return the options
         */
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
            if (blockTokens < 1 || blockTokens > 1 << 16) {
                throw new IllegalArgumentException("blockTokens must be in [1, 65536], was " + blockTokens);
            }
            if (anchorTokens != null && anchorTokens < 1) {
                throw new IllegalArgumentException("anchorTokens must be at least 1, was " + anchorTokens);
            }
            if (tokenCacheEntries < 0) {
                throw new IllegalArgumentException("tokenCacheEntries must be at least 0, was " + tokenCacheEntries);
            }
            if (tokenCacheMaxChars < 0) {
                throw new IllegalArgumentException("tokenCacheMaxChars must be at least 0, was " + tokenCacheMaxChars);
            }
            if (maxConcurrentTokenizations != null && maxConcurrentTokenizations < 1) {
                throw new IllegalArgumentException(
                        "maxConcurrentTokenizations must be at least 1, was " + maxConcurrentTokenizations);
            }
            return new ExtractOptions(this);
        }
    }
}
