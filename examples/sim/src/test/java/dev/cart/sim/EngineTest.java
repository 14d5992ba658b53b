package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import dev.cart.core.PromptKey;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Continuous batching on a virtual timeline. */
class EngineTest {

    static final EngineConfig CFG = EngineConfig.defaults();

    static EngineRequest request(String prompt, int maxTokens) {
        PromptKey k = PromptKey.ofText(prompt, CFG.blockChars());
        long[] b = new long[k.blockCount()];
        for (int i = 0; i < b.length; i++) {
            b[i] = k.blockHash(i);
        }
        return new EngineRequest(b, CFG.tokensOf(prompt.length()), maxTokens, EngineRequest.NO_SINK);
    }

    /** A request whose block hashes cover its prompt followed by {@code output}, as vLLM V1 caches them. */
    static EngineRequest withOutput(String prompt, String output, int maxTokens) {
        return new EngineRequest(
                hashes(prompt + output), CFG.tokensOf(prompt.length()), maxTokens, EngineRequest.NO_SINK);
    }

    static long[] hashes(String text) {
        PromptKey k = PromptKey.ofText(text, CFG.blockChars());
        long[] b = new long[k.blockCount()];
        for (int i = 0; i < b.length; i++) {
            b[i] = k.blockHash(i);
        }
        return b;
    }

    static String text(long seed, int tokens) {
        return Filler.text(seed, tokens * CFG.charsPerToken());
    }

    /** Runs the engine until it has nothing left; returns the time then. */
    static long drain(Engine e, long t) {
        while (e.hasWork()) {
            long d = e.planStep(t);
            assertTrue(d > 0, "an engine with work must be able to step");
            t += d;
            e.completeStep(t);
        }
        return t;
    }

    static long soloTtft(int tokens, long seed) {
        Engine e = new Engine(CFG);
        EngineRequest r = request(text(seed, tokens), 4);
        e.submit(r, 0);
        drain(e, 0);
        return r.ttftNanos();
    }

    @Test
    void ttftOfALonePromptIsItsPrefillSteps() {
        // 4000 tokens at a 2048-token budget: two chunks, each paying the fixed step cost.
        long expected = CFG.stepNanos(2048, 0) + CFG.stepNanos(4000 - 2048, 0);
        assertEquals(expected, soloTtft(4000, 1));
        assertEquals(CFG.stepNanos(1000, 0), soloTtft(1000, 2));
    }

    @Test
    void aSlowedEngineTakesThatMuchLongerPerStep() {
        Engine e = new Engine(CFG);
        e.slowdown(2.0);
        EngineRequest r = request(text(3, 1000), 4);
        e.submit(r, 0);
        drain(e, 0);
        assertEquals(2 * CFG.stepNanos(1000, 0), r.ttftNanos());
        assertThrows(IllegalArgumentException.class, () -> e.slowdown(0));
    }

    @Test
    void ttftGrowsWithUncachedTokens() {
        long prev = 0;
        for (int tokens : new int[] {16, 500, 2000, 2049, 6000, 20000}) {
            long t = soloTtft(tokens, tokens);
            assertTrue(t > prev, tokens + " tokens: " + t + " should exceed " + prev);
            prev = t;
        }
    }

    @Test
    void aCachedPrefixIsSkippedUpToPromptLengthMinusOneToken() {
        Engine e = new Engine(CFG);
        String doc = text(5, 4096); // exactly 256 blocks
        EngineRequest first = request(doc, 2);
        e.submit(first, 0);
        long t = drain(e, 0);
        assertEquals(0, first.cachedTokens());

        EngineRequest same = request(doc, 2);
        e.submit(same, t);
        t = drain(e, t);
        assertEquals(4096 - 16, same.cachedTokens(), "the last block is recomputed, as vLLM does");

        EngineRequest longer = request(doc + text(6, 300), 2);
        e.submit(longer, t);
        drain(e, t);
        assertEquals(4096, longer.cachedTokens());
        assertTrue(longer.ttftNanos() < first.ttftNanos() / 5, "a warm prefix must cut TTFT");
    }

    @Test
    void ttftGrowsWithQueueLength() {
        long prev = 0;
        for (int queued : new int[] {1, 2, 4, 8, 16}) {
            Engine e = new Engine(CFG);
            EngineRequest last = null;
            for (int i = 0; i < queued; i++) {
                last = request(text(100 + i, 1500), 16);
                e.submit(last, 0);
            }
            drain(e, 0);
            assertTrue(last.ttftNanos() > prev, queued + " queued: " + last.ttftNanos() + " vs " + prev);
            prev = last.ttftNanos();
        }
    }

    @Test
    void aStepNeverExceedsItsTokenBudgetAndDecodesPiggyback() {
        Engine e = new Engine(CFG);
        EngineRequest a = request(text(1, 100), 50);
        e.submit(a, 0);
        long t = e.planStep(0);
        assertEquals(CFG.stepNanos(100, 0), t);
        e.completeStep(t);
        assertEquals(1, a.generated());
        e.submit(request(text(2, 5000), 4), t);
        long d = e.planStep(t); // a decodes one token, the newcomer gets the rest of the budget
        assertEquals(CFG.stepNanos(2047, 1), d);
        e.completeStep(t + d);
        assertEquals(2, a.generated());
    }

    @Test
    void memoryPressurePreemptsAndEverythingStillFinishes() {
        EngineConfig small = CFG.withCacheTokens(64 * 16); // 64 blocks
        Engine e = new Engine(small);
        List<EngineRequest> all = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            EngineRequest r = request(text(i, 200), 300); // grows to 500 tokens = 32 blocks each
            all.add(r);
            e.submit(r, 0);
        }
        drain(e, 0);
        for (EngineRequest r : all) {
            assertTrue(r.finished());
            assertEquals(300, r.generated());
        }
        assertTrue(e.preemptions() > 0, "six growing sequences cannot share 64 blocks without preemption");
        BlockCache c = e.cache();
        assertEquals(0, c.privateBlocks());
        assertEquals(c.cached(), c.evictable(), "nothing is pinned once every request has left");
    }

    @Test
    void refusesWhatCannotFitTheContext() {
        Engine e = new Engine(CFG.withCacheTokens(1024));
        String[] msg = new String[1];
        EngineRequest r = new EngineRequest(new long[0], 1000, 100, new EngineRequest.Sink() {
            @Override
            public void onRejected(EngineRequest request, String message) {
                msg[0] = message;
            }
        });
        assertFalse(e.submit(r, 0));
        assertFalse(e.hasWork());
        assertTrue(msg[0].contains("maximum context length is 1024 tokens"));
    }

    @Test
    void runsAreDeterministic() {
        assertArrayEquals(randomRun(42), randomRun(42));
    }

    private static long[] randomRun(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        Engine e = new Engine(CFG.withCacheTokens(20_000));
        List<EngineRequest> all = new ArrayList<>();
        String[] shared = {text(1, 700), text(2, 1200), text(3, 300)};
        long t = 0;
        for (int i = 0; i < 200; i++) {
            EngineRequest r =
                    request(shared[rnd.nextInt(3)] + text(1000 + i, 1 + rnd.nextInt(400)), 1 + rnd.nextInt(64));
            all.add(r);
            e.submit(r, t);
            for (int s = rnd.nextInt(3); s > 0 && e.hasWork(); s--) {
                long d = e.planStep(t);
                t += d;
                e.completeStep(t);
            }
        }
        drain(e, t);
        long[] out = new long[all.size() * 3];
        for (int i = 0; i < all.size(); i++) {
            out[3 * i] = all.get(i).ttftNanos();
            out[3 * i + 1] = all.get(i).cachedTokens();
            out[3 * i + 2] = all.get(i).finishNanos;
        }
        return out;
    }

    /**
     * Generated tokens against a naive model of what vLLM V1 keeps: after a request of P prompt tokens has
     * generated O tokens, the replica holds the first (P + O - 1) / 16 full blocks of prompt followed by
     * output (the last token's KV is never computed), and a later prompt reuses the leading blocks it
     * shares with them, capped at its own length minus one token.
     */
    @Test
    void generatedTokensAreCachedAsTheNaiveModelSays() {
        qt().withExamples(150)
                .withShrinkCycles(500)
                .forAll(
                        integers().between(1, 300),
                        integers().between(1, 200),
                        integers().between(0, 220),
                        integers().between(0, 60))
                .checkAssert((prompt, out, keep, suffix) -> {
                    String p = text(prompt, prompt);
                    String reply = text(1000 + out, out);
                    int kept = Math.min(keep, out);
                    String next = p + reply.substring(0, kept * CFG.charsPerToken()) + text(5000 + suffix, suffix);
                    Engine e = new Engine(CFG);
                    EngineRequest first = withOutput(p, reply, out);
                    e.submit(first, 0);
                    long t = drain(e, 0);

                    long[] seq = hashes(p + reply);
                    int held = Math.min(seq.length, (prompt + out - 1) / CFG.blockTokens());
                    assertEquals(held, e.cache().cached(), "full blocks of prompt and output, nothing more");
                    assertEquals(0, e.cache().privateBlocks());
                    assertEquals(held, e.cache().evictable(), "cached, unpinned, evictable once the request left");

                    EngineRequest second = request(next, 1);
                    e.submit(second, t);
                    drain(e, t);
                    long[] b = hashes(next);
                    int cap = Math.min(b.length, (CFG.tokensOf(next.length()) - 1) / CFG.blockTokens());
                    int hit = 0;
                    while (hit < cap && hit < held && b[hit] == seq[hit]) {
                        hit++;
                    }
                    assertEquals(hit * CFG.blockTokens(), second.cachedTokens());
                });
    }

    @Test
    void withoutOutputHashesOnlyThePromptIsCached() {
        Engine e = new Engine(CFG);
        String p = text(7, 160);
        String reply = text(8, 160);
        e.submit(request(p, 160), 0);
        long t = drain(e, 0);
        assertEquals(10, e.cache().cached());
        EngineRequest next = request(p + reply + text(9, 40), 1);
        e.submit(next, t);
        drain(e, t);
        assertEquals(160, next.cachedTokens(), "the reply was computed but not kept");
    }
}
