package dev.cart.extract;

import dev.cart.core.PromptKey;
import dev.cart.core.Tokenization;
import java.util.Arrays;
import java.util.concurrent.Semaphore;
import org.jspecify.annotations.Nullable;

/**
 * Makes keys in token mode: the key's text is tokenized one segment at a time (model marker and tools,
 * system prompt, each message: the runs between message boundaries), and the ids are concatenated.
 *
 * <p>Why per segment. A boundary then falls exactly on a token position, by construction: it is the
 * sum of the token counts of the segments before it. Nothing has to be found again in the token array
 * (no scan for template markers, which only works for templates with single-token markers) or estimated
 * (no proportional mapping of character offsets, which is off by a few tokens). It also makes keys
 * prefix-stable: a segment's ids depend on its text alone, so two requests that share their first k
 * segments share the first k segments' ids, and so every full block before the first difference. And it
 * makes the cache work: the segments that repeat (system prompt, tools, earlier turns) are cached one by
 * one, while a whole prompt would be new every time. The replica's template, too, separates messages
 * with special tokens no merge crosses, so per-segment tokenization breaks tokens where it does.
 *
 * <p>The bound. Tokenizing is CPU work on the calling thread (one request, one thread; no event loop to
 * keep free), so there is no handoff to a pool: a {@link Semaphore} of {@code maxConcurrentTokenizations}
 * permits is taken with {@code tryAcquire()}, once per request that has an uncached segment, and held
 * while that request's uncached segments are tokenized. When no permit is free the request does not
 * wait: its key is made in characters, exactly as character mode would make it, and it says so
 * ({@link Tokenization.Status#SATURATED}). A request whose segments are all cached needs no permit.
 * An executor would add a queue, a context switch and a thread blocked on a future, and buy nothing here.
 *
 * <p>Thread-safe: the tokenizer is thread-safe by contract, the cache by its monitor, the semaphore by
 * itself; a {@link Chunks} belongs to one extraction.
 */
final class TokenMode {

    private final Tokenizer tokenizer;
    private final TokenCache cache;
    private final Semaphore permits;
    private final int blockTokens;
    private final int anchorTokens;
    private final int blockChars;
    private final int anchorChars;

    /** @throws IllegalArgumentException if {@code opts} sets no tokenizer (character mode) */
    TokenMode(ExtractOptions opts) {
        Tokenizer t = opts.tokenizer();
        if (t == null) {
            throw new IllegalArgumentException("token mode needs a tokenizer");
        }
        this.tokenizer = t;
        this.cache = new TokenCache(opts.tokenCacheEntries(), opts.tokenCacheMaxChars());
        this.permits = new Semaphore(opts.maxConcurrentTokenizations());
        this.blockTokens = opts.blockTokens();
        this.anchorTokens = opts.anchorTokens();
        this.blockChars = opts.blockChars();
        this.anchorChars = opts.anchorLimit();
    }

    TokenCache cache() {
        return cache;
    }

    /** A key, how it was made, and (for a token key) its builder, to continue it. */
    record Keyed(PromptKey key, Tokenization tokenization, PromptKey.@Nullable Builder builder) {

        Keyed(PromptKey key, Tokenization tokenization) {
            this(key, tokenization, null);
        }
    }

    /** The key for the segments collected in {@code chunks}. */
    Keyed key(Chunks chunks) {
        chunks.finish();
        int n = chunks.count;
        String[] texts = chunks.texts;
        int[][] ids = new int[n][];
        int hits = 0;
        for (int i = 0; i < n; i++) {
            ids[i] = cache.get(texts[i]);
            if (ids[i] != null) {
                hits++;
            }
        }
        long nanos = 0;
        if (hits < n) {
            if (!permits.tryAcquire()) {
                return new Keyed(chars(chunks), new Tokenization(Tokenization.Status.SATURATED, n, hits, 0));
            }
            try {
                for (int i = 0; i < n; i++) {
                    if (ids[i] == null) {
                        long t0 = System.nanoTime();
                        int[] t = tokenizer.encode(texts[i]);
                        nanos += System.nanoTime() - t0;
                        if (t == null) {
                            throw new IllegalStateException("tokenizer returned null");
                        }
                        ids[i] = t;
                        cache.put(texts[i], t);
                    }
                }
            } catch (RuntimeException | StackOverflowError e) {
                // A tokenizer bug (or a regular expression recursing too deep on a pathological text) must
                // not fail the request: route it by characters. Nothing is logged; the outcome says it.
                return new Keyed(chars(chunks), new Tokenization(Tokenization.Status.FAILED, n, hits, nanos));
            } finally {
                permits.release();
            }
        }
        PromptKey.Builder b = tokens(ids, chunks);
        return new Keyed(b.build(), new Tokenization(Tokenization.Status.TOKENIZED, n, hits, nanos), b);
    }

    private PromptKey.Builder tokens(int[][] ids, Chunks chunks) {
        int n = chunks.count;
        long total = 0;
        for (int[] t : ids) {
            total += t.length;
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new OutOfMemoryError("key too long");
        }
        PromptKey.Builder b = PromptKey.tokenBuilder(blockTokens, anchorTokens);
        for (int i = 0; i < n; i++) {
            b.append(ids[i], 0, ids[i].length);
            if (i < n - 1 || chunks.endsWithBoundary) {
                b.boundary();
            }
        }
        return b;
    }

    /**
     * The ids of one more segment, {@code text}, from the cache or the tokenizer; null when no permit is
     * free or the tokenizer fails (the caller then makes no key rather than wait or mix units).
     */
    int @Nullable [] segmentIds(String text) {
        int[] ids = cache.get(text);
        if (ids != null) {
            return ids;
        }
        if (!permits.tryAcquire()) {
            return null;
        }
        try {
            ids = tokenizer.encode(text);
            if (ids != null) {
                cache.put(text, ids);
            }
            return ids;
        } catch (RuntimeException | StackOverflowError e) {
            return null;
        } finally {
            permits.release();
        }
    }

    /** The character key of the same segments: identical to the one character mode makes. */
    private PromptKey chars(Chunks chunks) {
        PromptKey.Builder b = PromptKey.textBuilder(blockChars, anchorChars);
        int n = chunks.count;
        for (int i = 0; i < n; i++) {
            b.append(chunks.texts[i]);
            if (i < n - 1 || chunks.endsWithBoundary) {
                b.boundary();
            }
        }
        return b.build();
    }

    /**
     * Receives the assembled key (from {@code Extraction.assemble}) and cuts it into segments at its
     * boundaries. A boundary with nothing before it (at offset 0, or repeated) is dropped, as the key
     * builder drops it. Not thread-safe; one per extraction.
     */
    static final class Chunks implements Segment.Sink {
        private String[] texts = new String[8];
        private int count;
        private boolean endsWithBoundary;
        private char[] pending = new char[256];
        private int pendingLen;
        private boolean finished;

        @Override
        public void appendCesu8(byte[] bytes, int off, int len, int units) {
            if (pendingLen + units > pending.length) {
                int need = pendingLen + units;
                if (need < 0) {
                    throw new OutOfMemoryError("key segment too large");
                }
                pending = Arrays.copyOf(pending, Math.max(need, pending.length + (pending.length >> 1)));
            }
            pendingLen = Cesu8.decode(bytes, off, len, pending, pendingLen);
        }

        @Override
        public void boundary() {
            if (pendingLen > 0) {
                add(true);
            }
        }

        private void add(boolean boundaryAfter) {
            if (count == texts.length) {
                texts = Arrays.copyOf(texts, count * 2);
            }
            texts[count++] = new String(pending, 0, pendingLen);
            pendingLen = 0;
            endsWithBoundary = boundaryAfter;
        }

        void finish() {
            if (!finished) {
                finished = true;
                if (pendingLen > 0) {
                    add(false);
                }
            }
        }

        /** Number of segments (after {@link #finish()}). */
        int count() {
            return count;
        }

        /** Segment {@code i}'s text (tests). */
        String text(int i) {
            return texts[i];
        }
    }
}
