package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class ExtractOptionsTest {

    @Test
    void defaults() {
        ExtractOptions o = ExtractOptions.defaults();
        assertEquals(PromptKey.DEFAULT_BLOCK_CHARS, o.blockChars());
        assertEquals(PromptKey.DEFAULT_ANCHOR_LIMIT, o.anchorLimit());
        assertNull(o.remoteMediaUrlPolicy());
        assertEquals(64, o.maxNestingDepth());
        assertEquals(50_000_000, o.maxStringLength());
        assertTrue(o.toString().contains("maxNestingDepth=64"));
        assertNull(o.tokenizer());
        assertTrue(o.toString().contains("tokenizer=none"));
        assertEquals(16, o.blockTokens());
        assertEquals(256, o.anchorTokens());
        assertEquals(1000, o.tokenCacheEntries());
        assertEquals(65536, o.tokenCacheMaxChars());
        assertEquals(Runtime.getRuntime().availableProcessors(), o.maxConcurrentTokenizations());
    }

    @Test
    void tokenModeOptions() {
        ExtractOptions o = ExtractOptions.builder()
                .tokenizer(Tokenizers.jtokkit("o200k_base"))
                .blockTokens(32)
                .anchorTokens(100)
                .tokenCacheEntries(0)
                .tokenCacheMaxChars(10)
                .maxConcurrentTokenizations(1)
                .build();
        assertEquals("o200k_base", o.tokenizer().name());
        assertEquals(32, o.blockTokens());
        assertEquals(100, o.anchorTokens());
        assertEquals(0, o.tokenCacheEntries());
        assertEquals(10, o.tokenCacheMaxChars());
        assertEquals(1, o.maxConcurrentTokenizations());
        assertTrue(o.toString().contains("tokenizer=o200k_base, blockTokens=32, anchorTokens=100"), o.toString());
        assertEquals(25, ExtractOptions.builder().anchorLimit(100).build().anchorTokens(), "derived: a quarter");
        assertEquals(1, ExtractOptions.builder().anchorLimit(3).build().anchorTokens(), "never below 1");
    }

    private static void rejects(ExtractOptions.Builder b, String name, String range) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build);
        assertTrue(e.getMessage().startsWith(name + " must be"), e.getMessage());
        assertTrue(e.getMessage().contains(range), e.getMessage());
    }

    @Test
    void badValuesAreNamedWithTheirRange() {
        rejects(ExtractOptions.builder().blockChars(0), "blockChars", "[1, 65536]");
        rejects(ExtractOptions.builder().blockChars(65537), "blockChars", "[1, 65536]");
        rejects(ExtractOptions.builder().anchorLimit(0), "anchorLimit", "at least 1");
        rejects(ExtractOptions.builder().remoteMediaUrlPolicy(399), "remoteMediaUrlPolicy", "[400, 599]");
        rejects(ExtractOptions.builder().remoteMediaUrlPolicy(600), "remoteMediaUrlPolicy", "[400, 599]");
        rejects(ExtractOptions.builder().maxNestingDepth(0), "maxNestingDepth", "[1, 1000]");
        rejects(ExtractOptions.builder().maxNestingDepth(1001), "maxNestingDepth", "[1, 1000]");
        rejects(ExtractOptions.builder().maxStringLength(0), "maxStringLength", "at least 1");
        rejects(ExtractOptions.builder().blockTokens(0), "blockTokens", "[1, 65536]");
        rejects(ExtractOptions.builder().blockTokens(65537), "blockTokens", "[1, 65536]");
        rejects(ExtractOptions.builder().anchorTokens(0), "anchorTokens", "at least 1");
        rejects(ExtractOptions.builder().tokenCacheEntries(-1), "tokenCacheEntries", "at least 0");
        rejects(ExtractOptions.builder().tokenCacheMaxChars(-1), "tokenCacheMaxChars", "at least 0");
        rejects(ExtractOptions.builder().maxConcurrentTokenizations(0), "maxConcurrentTokenizations", "at least 1");
        assertEquals(
                599, ExtractOptions.builder().remoteMediaUrlPolicy(599).build().remoteMediaUrlPolicy());
    }

    @Test
    void blockSizeAndAnchorLimitReachTheKey() throws Exception {
        PromptExtractor x = new PromptExtractor(
                ExtractOptions.builder().blockChars(16).anchorLimit(40).build());
        PromptKey k = x.extract(
                        Endpoint.COMPLETIONS, "{\"prompt\":\"0123456789012345678901234567890123456789xyz\"}".getBytes())
                .key();
        assertEquals(16, k.blockSize());
        PromptKey other = x.extract(
                        Endpoint.COMPLETIONS, "{\"prompt\":\"0123456789012345678901234567890123456789abc\"}".getBytes())
                .key();
        assertEquals(k.anchorHash(), other.anchorHash(), "anchor covers only the first 40 characters");
    }

    @Test
    void oneExtractorServesManyThreads() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        List<String> names = Fixtures.all();
        List<PromptKey> expected = new ArrayList<>();
        for (String f : names) {
            expected.add(x.extract(Fixtures.endpoint(f), Fixtures.bytes(f)).key());
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int offset = t;
                Callable<Integer> task = () -> {
                    for (int i = 0; i < 400; i++) {
                        int j = (i + offset) % names.size();
                        String f = names.get(j);
                        assertEquals(
                                expected.get(j),
                                x.extract(Fixtures.endpoint(f), Fixtures.bytes(f))
                                        .key(),
                                f);
                    }
                    return 400;
                };
                results.add(pool.submit(task));
            }
            for (Future<Integer> r : results) {
                assertEquals(400, r.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
