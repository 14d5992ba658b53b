package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.PromptKey;
import dev.cart.core.Tokenization;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Keys in token mode: exact boundaries, prefix stability, the segment cache, the bound and its fallback. */
class TokenModeTest {

    private static final Tokenizer CL100K = Tokenizers.jtokkit("cl100k_base");

    /** One token per character, the id being the character: token keys then mirror character keys. */
    private static final Tokenizer PER_CHAR = new Tokenizer() {
        @Override
        public int[] encode(String text) {
            return text.chars().toArray();
        }

        @Override
        public String name() {
            return "per-char";
        }
    };

    private static final PromptExtractor CHARS = new PromptExtractor(ExtractOptions.defaults());

    private static PromptExtractor tokens(Tokenizer t) {
        return new PromptExtractor(ExtractOptions.builder().tokenizer(t).build());
    }

    private static byte[] chat(String system, List<String> turns) {
        ObjectNode body = Json.MAPPER.createObjectNode().put("model", "gpt-4o");
        ArrayNode messages = body.putArray("messages");
        if (system != null) {
            messages.addObject().put("role", "system").put("content", system);
        }
        for (int i = 0; i < turns.size(); i++) {
            messages.addObject().put("role", i % 2 == 0 ? "user" : "assistant").put("content", turns.get(i));
        }
        return Json.bytes(body);
    }

    private static byte[] chat(String system, String... turns) {
        return chat(system, List.of(turns));
    }

    private static final String SYSTEM = "You are a careful assistant for a contracts team. Answer from the "
            + "documents given, cite the clause, and say so when the documents do not answer the question. ".repeat(8);

    // ------------------------------------------------------------------ keys

    @Test
    void characterModeIsTheDefault() throws Exception {
        ExtractedRequest r = CHARS.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, "hi"));
        assertEquals(PromptKey.Unit.CHARS, r.key().unit());
        assertSame(Tokenization.CHARACTER_MODE, r.tokenization());
        assertFalse(r.tokenization().fellBack());
        assertNull(CHARS.tokenCache());
    }

    @Test
    void perCharacterTokenizerGivesTheCharacterKeysBoundaries() throws Exception {
        // With one token per character, a token key must have exactly the character key's length and
        // boundaries, for every endpoint and fixture: the segments are cut where the boundaries are.
        PromptExtractor x = tokens(PER_CHAR);
        for (String f : Fixtures.all()) {
            PromptKey c = CHARS.extract(Fixtures.endpoint(f), Fixtures.bytes(f)).key();
            ExtractedRequest t = x.extract(Fixtures.endpoint(f), Fixtures.bytes(f));
            assertEquals(Tokenization.Status.TOKENIZED, t.tokenization().status(), f);
            assertEquals(PromptKey.Unit.TOKENS, t.key().unit(), f);
            assertEquals(c.length(), t.key().length(), f);
            assertArrayEquals(c.boundaries(), t.key().boundaries(), f);
            int expectedSegments = c.isEmpty()
                    ? 0
                    : c.boundaryCount()
                            + (c.boundaryCount() > 0 && c.boundary(c.boundaryCount() - 1) == c.length() ? 0 : 1);
            assertEquals(expectedSegments, t.tokenization().segments(), f);
        }
    }

    @Test
    void boundariesFallOnTheSumsOfSegmentTokenCounts() throws Exception {
        PromptExtractor x = tokens(CL100K);
        for (String f : Fixtures.all()) {
            String text = CHARS.keyText(Fixtures.endpoint(f), Fixtures.bytes(f));
            String[] segments = text.split(String.valueOf(Extraction.BOUNDARY_MARK), -1);
            List<Integer> all = new ArrayList<>();
            List<Integer> bounds = new ArrayList<>();
            for (int i = 0; i < segments.length; i++) {
                for (int id : CL100K.encode(segments[i])) {
                    all.add(id);
                }
                if (i < segments.length - 1) {
                    bounds.add(all.size());
                }
            }
            PromptKey expected = PromptKey.ofTokens(
                    all.stream().mapToInt(Integer::intValue).toArray(),
                    bounds.stream().mapToInt(Integer::intValue).toArray(),
                    16,
                    256);
            assertEquals(
                    expected, x.extract(Fixtures.endpoint(f), Fixtures.bytes(f)).key(), f);
        }
    }

    @Test
    void blockSizeAndAnchorReachTheKey() throws Exception {
        assertEquals(16, ExtractOptions.defaults().blockTokens());
        assertEquals(256, ExtractOptions.defaults().anchorTokens());
        assertEquals(512, ExtractOptions.builder().anchorLimit(2048).build().anchorTokens());
        PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(PER_CHAR)
                .blockTokens(8)
                .anchorTokens(30)
                .build());
        PromptKey a = x.extract(
                        Endpoint.COMPLETIONS,
                        "{\"prompt\":\"0123456789012345678901234567890123456789xyzxyzxyzxyz\"}".getBytes())
                .key();
        PromptKey b = x.extract(
                        Endpoint.COMPLETIONS,
                        "{\"prompt\":\"0123456789012345678901234567890123456789abcabcabcabc\"}".getBytes())
                .key();
        assertEquals(8, a.blockSize());
        assertEquals(a.anchorHash(), b.anchorHash(), "the anchor covers only the first 30 tokens");
        assertNotEquals(a.blockHash(a.blockCount() - 1), b.blockHash(b.blockCount() - 1));
    }

    @Test
    void specialTokenTextIsOrdinaryText() throws Exception {
        ExtractedRequest r =
                tokens(CL100K).extract(Endpoint.CHAT_COMPLETIONS, chat(null, "say <|endoftext|> and <|im_start|>"));
        assertEquals(Tokenization.Status.TOKENIZED, r.tokenization().status());
    }

    @Test
    void emptyPromptGivesAnEmptyTokenKey() throws Exception {
        ExtractedRequest r =
                tokens(CL100K).extract(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"\"}".getBytes());
        assertTrue(r.key().isEmpty());
        assertEquals(new Tokenization(Tokenization.Status.TOKENIZED, 0, 0, 0), r.tokenization());
    }

    @Test
    void equalPrefixesGiveEqualBlocks() {
        // A conversation cut after k turns shares every full block of its key with the whole conversation,
        // and its boundaries are the first boundaries of the whole one: turn N+1 matches what turn N learned.
        String[] words = ("the contract clause termination notice party shall days written within agreement , . ; "
                        + "é ü 日本 🙂 \n\n  -- 42 1999 don't isn't")
                .split(" ");
        PromptExtractor x = tokens(CL100K);
        qt().withFixedSeed(8080L)
                .withExamples(150)
                .forAll(
                        lists().of(integers().between(0, 400)).ofSizeBetween(1, 8),
                        integers().between(0, 7),
                        integers().all())
                .checkAssert((turnLengths, cut, seed) -> {
                    Random rnd = new Random(seed);
                    List<String> turns = new ArrayList<>();
                    for (int n : turnLengths) {
                        StringBuilder sb = new StringBuilder();
                        for (int i = 0; i < n; i++) {
                            sb.append(words[rnd.nextInt(words.length)]).append(rnd.nextInt(5) == 0 ? "" : " ");
                        }
                        turns.add(sb.toString());
                    }
                    int k = Math.min(cut, turns.size());
                    try {
                        PromptKey whole = x.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, turns))
                                .key();
                        PromptKey part = x.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, turns.subList(0, k)))
                                .key();
                        assertTrue(part.blockCount() <= whole.blockCount());
                        for (int i = 0; i < part.blockCount(); i++) {
                            assertEquals(whole.blockHash(i), part.blockHash(i), "block " + i);
                        }
                        assertArrayEquals(Arrays.copyOf(whole.boundaries(), part.boundaryCount()), part.boundaries());
                        assertEquals(part.length(), part.boundary(part.boundaryCount() - 1));
                        assertEquals(whole.anchorHash(), part.anchorHash());
                    } catch (ExtractionException e) {
                        throw new AssertionError(e);
                    }
                });
    }

    // ------------------------------------------------------------------ cache

    @Test
    void segmentsRepeatFromTheCache() throws Exception {
        PromptExtractor x = tokens(CL100K);
        ExtractedRequest first = x.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, "What is the notice period?"));
        assertEquals(
                new Tokenization(
                        Tokenization.Status.TOKENIZED,
                        2,
                        0,
                        first.tokenization().tokenizerNanos()),
                first.tokenization());
        assertTrue(first.tokenization().tokenizerNanos() > 0);
        assertEquals(2, first.tokenization().tokenizedSegments());

        // The same system prompt, another question: the system prompt (with the model marker) is a hit.
        ExtractedRequest branch = x.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, "Who can terminate?"));
        assertEquals(2, branch.tokenization().segments());
        assertEquals(1, branch.tokenization().cacheHits());

        // The next turn of the first conversation: every earlier message is a hit, only the new two are not.
        ExtractedRequest next = x.extract(
                Endpoint.CHAT_COMPLETIONS,
                chat(SYSTEM, "What is the notice period?", "Thirty days, clause 12.", "Written notice?"));
        assertEquals(4, next.tokenization().segments());
        assertEquals(2, next.tokenization().cacheHits());

        // The same request again: nothing to tokenize, and the same key.
        ExtractedRequest again = x.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, "What is the notice period?"));
        assertEquals(new Tokenization(Tokenization.Status.TOKENIZED, 2, 2, 0), again.tokenization());
        assertEquals(first.key(), again.key());

        TokenCache.Stats s = x.tokenCache().stats();
        assertEquals(1 + 2 + 2, s.hits());
        assertEquals(2 + 1 + 2, s.misses());
        assertEquals(5, s.size());
        assertEquals(0, s.evictions());
    }

    @Test
    void cacheLimitsAreConfigurable() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(CL100K)
                .tokenCacheEntries(1)
                .tokenCacheMaxChars(100)
                .build());
        assertEquals(1, x.tokenCache().maxEntries());
        assertEquals(100, x.tokenCache().maxChars());
        x.extract(Endpoint.CHAT_COMPLETIONS, chat(SYSTEM, "a", "b"));
        TokenCache.Stats s = x.tokenCache().stats();
        assertEquals(1, s.tooLong(), "the system prompt is longer than 100 characters");
        assertEquals(1, s.evictions(), "two short messages, one entry");
        assertEquals(1, s.size());
    }

    // ------------------------------------------------------------------ bound and fallback

    /** Blocks inside {@code encode} of any text containing "BLOCK" until released; counts calls. */
    private static final class BlockingTokenizer implements Tokenizer {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        @Override
        public int[] encode(String text) {
            if (text.contains("BLOCK")) {
                entered.countDown();
                try {
                    if (!release.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("never released");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            return CL100K.encode(text);
        }

        @Override
        public String name() {
            return "blocking";
        }
    }

    @Test
    void saturatedRequestsFallBackInsteadOfWaiting() throws Exception {
        BlockingTokenizer tok = new BlockingTokenizer();
        PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(tok)
                .maxConcurrentTokenizations(1)
                .build());
        byte[] cached = chat(SYSTEM, "cached question");
        PromptKey cachedKey = x.extract(Endpoint.CHAT_COMPLETIONS, cached).key();
        byte[] blocking = chat(SYSTEM, "BLOCK here");
        byte[] uncached = chat(SYSTEM, "a question nobody asked before");

        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<ExtractedRequest> holder = pool.submit(() -> x.extract(Endpoint.CHAT_COMPLETIONS, blocking));
            assertTrue(tok.entered.await(30, TimeUnit.SECONDS), "the first request is inside the tokenizer");

            // The only permit is taken: a request with an uncached segment gets the character key, now.
            ExtractedRequest fell = x.extract(Endpoint.CHAT_COMPLETIONS, uncached);
            assertEquals(new Tokenization(Tokenization.Status.SATURATED, 2, 1, 0), fell.tokenization());
            assertTrue(fell.tokenization().fellBack());
            assertEquals(0, fell.tokenization().tokenizedSegments());
            assertEquals(PromptKey.Unit.CHARS, fell.key().unit());
            assertEquals(CHARS.extract(Endpoint.CHAT_COMPLETIONS, uncached).key(), fell.key());

            // A request whose segments are all cached needs no permit.
            ExtractedRequest hit = x.extract(Endpoint.CHAT_COMPLETIONS, cached);
            assertEquals(new Tokenization(Tokenization.Status.TOKENIZED, 2, 2, 0), hit.tokenization());
            assertEquals(cachedKey, hit.key());

            tok.release.countDown();
            ExtractedRequest held = holder.get(30, TimeUnit.SECONDS);
            assertEquals(Tokenization.Status.TOKENIZED, held.tokenization().status());
            assertEquals(PromptKey.Unit.TOKENS, held.key().unit());
        } finally {
            tok.release.countDown();
            pool.shutdownNow();
        }
        // The permit is back.
        ExtractedRequest after = x.extract(Endpoint.CHAT_COMPLETIONS, uncached);
        assertEquals(Tokenization.Status.TOKENIZED, after.tokenization().status());
        assertEquals(1, after.tokenization().cacheHits());
    }

    @Test
    void permitsBoundConcurrentTokenizations() throws Exception {
        // N permits: N requests can be inside the tokenizer at once, the N+1st falls back.
        int n = 3;
        CountDownLatch entered = new CountDownLatch(n);
        CountDownLatch release = new CountDownLatch(1);
        Tokenizer tok = new Tokenizer() {
            @Override
            public int[] encode(String text) {
                if (text.contains("BLOCK")) {
                    entered.countDown();
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return PER_CHAR.encode(text);
            }

            @Override
            public String name() {
                return "blocking";
            }
        };
        PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(tok)
                .maxConcurrentTokenizations(n)
                .build());
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<ExtractedRequest>> held = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byte[] body = chat(null, "BLOCK " + i);
                held.add(pool.submit(() -> x.extract(Endpoint.CHAT_COMPLETIONS, body)));
            }
            assertTrue(entered.await(30, TimeUnit.SECONDS), "all " + n + " are tokenizing");
            assertEquals(
                    Tokenization.Status.SATURATED,
                    x.extract(Endpoint.CHAT_COMPLETIONS, chat(null, "one more"))
                            .tokenization()
                            .status());
            release.countDown();
            for (Future<ExtractedRequest> f : held) {
                assertEquals(
                        Tokenization.Status.TOKENIZED,
                        f.get(30, TimeUnit.SECONDS).tokenization().status());
            }
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
    }

    @Test
    void aFailingTokenizerGivesTheCharacterKey() throws Exception {
        Tokenizer broken = new Tokenizer() {
            @Override
            public int[] encode(String text) {
                throw new IllegalStateException("broken");
            }

            @Override
            public String name() {
                return "broken";
            }
        };
        PromptExtractor x = tokens(broken);
        for (String f : Fixtures.all()) {
            ExtractedRequest r = x.extract(Fixtures.endpoint(f), Fixtures.bytes(f));
            PromptKey expected =
                    CHARS.extract(Fixtures.endpoint(f), Fixtures.bytes(f)).key();
            if (expected.isEmpty()) {
                continue;
            }
            assertEquals(Tokenization.Status.FAILED, r.tokenization().status(), f);
            assertTrue(r.tokenization().fellBack(), f);
            assertEquals(expected, r.key(), f + ": the fallback key is the character-mode key");
        }
        // And the permit was released every time.
        PromptExtractor one = new PromptExtractor(ExtractOptions.builder()
                .tokenizer(broken)
                .maxConcurrentTokenizations(1)
                .build());
        for (int i = 0; i < 3; i++) {
            assertEquals(
                    Tokenization.Status.FAILED,
                    one.extract(Endpoint.CHAT_COMPLETIONS, chat(null, "q" + i))
                            .tokenization()
                            .status());
        }
    }

    @Test
    void tokenizerIsLoadedOnceAndSharedSafely() throws Exception {
        assertSame(CL100K, Tokenizers.jtokkit("cl100k_base"));
        assertEquals("cl100k_base", CL100K.name());
        assertArrayEquals(new int[] {15339, 1917}, CL100K.encode("hello world"));
        Tokenizer o200k = Tokenizers.jtokkit("o200k_base");
        assertEquals("o200k_base", o200k.name());
        assertArrayEquals(new int[] {24912, 2375}, o200k.encode("hello world"));
        assertEquals(
                "unknown tokenizer encoding \"gpt2\"; expected one of cl100k_base, o200k_base",
                org.junit.jupiter.api.Assertions.assertThrows(
                                IllegalArgumentException.class, () -> Tokenizers.jtokkit("gpt2"))
                        .getMessage());

        // One extractor, many threads, a shared cache: every key equals the single-threaded one.
        PromptExtractor x = new PromptExtractor(
                ExtractOptions.builder().tokenizer(o200k).tokenCacheEntries(8).build());
        List<byte[]> bodies = new ArrayList<>();
        List<PromptKey> expected = new ArrayList<>();
        PromptExtractor reference = new PromptExtractor(
                ExtractOptions.builder().tokenizer(o200k).tokenCacheEntries(0).build());
        for (int i = 0; i < 12; i++) {
            byte[] b = chat(SYSTEM, "question " + i, "answer " + i, "follow-up " + (i % 3));
            bodies.add(b);
            expected.add(reference.extract(Endpoint.CHAT_COMPLETIONS, b).key());
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Integer>> fs = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int offset = t;
                fs.add(pool.submit(() -> {
                    int tokenized = 0;
                    for (int i = 0; i < 300; i++) {
                        int j = (i * 7 + offset) % bodies.size();
                        ExtractedRequest r = x.extract(Endpoint.CHAT_COMPLETIONS, bodies.get(j));
                        if (r.tokenization().status() == Tokenization.Status.TOKENIZED) {
                            assertEquals(expected.get(j), r.key());
                            tokenized++;
                        } else {
                            assertEquals(
                                    Tokenization.Status.SATURATED,
                                    r.tokenization().status());
                        }
                    }
                    return tokenized;
                }));
            }
            int tokenized = 0;
            for (Future<Integer> f : fs) {
                tokenized += f.get(60, TimeUnit.SECONDS);
            }
            assertTrue(tokenized > 0);
        } finally {
            pool.shutdownNow();
        }
    }
}
