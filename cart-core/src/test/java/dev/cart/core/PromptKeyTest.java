package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.strings;

import org.junit.jupiter.api.Test;

class PromptKeyTest {

    @Test
    void onlyFullBlocksCount() {
        PromptKey k = PromptKey.ofText("x".repeat(130), 64);
        assertEquals(130, k.length());
        assertEquals(2, k.blockCount());
        assertEquals(0, PromptKey.ofText("short", 64).blockCount());
        assertTrue(PromptKey.empty().isEmpty());
    }

    @Test
    void howTextIsAppendedDoesNotMatter() {
        qt().withFixedSeed(11L).forAll(strings().allPossible().ofLengthBetween(0, 400), integers().between(0, 400))
                .checkAssert((text, cut) -> {
                    int c = Math.min(cut, text.length());
                    PromptKey whole = PromptKey.ofText(text, 16);
                    PromptKey parts = PromptKey.textBuilder(16).append(text.substring(0, c))
                            .append(text.toCharArray(), c, text.length() - c).build();
                    assertEquals(whole, parts);
                });
    }

    @Test
    void aLongerTextSharesTheBlocksOfItsPrefix() {
        qt().withFixedSeed(12L).forAll(strings().basicLatinAlphabet().ofLengthBetween(0, 300),
                strings().basicLatinAlphabet().ofLengthBetween(0, 300)).checkAssert((a, b) -> {
                    PromptKey shorter = PromptKey.ofText(a, 16);
                    PromptKey longer = PromptKey.ofText(a + b, 16);
                    for (int i = 0; i < shorter.blockCount(); i++) {
                        assertEquals(shorter.blockHash(i), longer.blockHash(i));
                    }
                });
    }

    @Test
    void blocksAreChainedOnTheirPrefix() {
        String block = "b".repeat(16);
        PromptKey k1 = PromptKey.ofText("a".repeat(16) + block, 16);
        PromptKey k2 = PromptKey.ofText("c".repeat(16) + block, 16);
        assertNotEquals(k1.blockHash(1), k2.blockHash(1), "the same block after different prefixes differs");
    }

    @Test
    void boundariesAndAnchor() {
        PromptKey.Builder b = PromptKey.textBuilder(8, 1000);
        b.append("system prompt").boundary().append("user one").boundary().boundary().append("tail");
        PromptKey k = b.build();
        assertArrayEquals(new int[] {13, 21}, k.boundaries());
        PromptKey other = PromptKey.textBuilder(8, 1000).append("system prompt").boundary().append("different")
                .build();
        assertEquals(k.anchorHash(), other.anchorHash(), "same first message, same anchor");
        PromptKey third = PromptKey.textBuilder(8, 1000).append("system prompT").boundary().build();
        assertNotEquals(k.anchorHash(), third.anchorHash());
        PromptKey capped1 = PromptKey.textBuilder(8, 4).append("abcdXXXX").build();
        PromptKey capped2 = PromptKey.textBuilder(8, 4).append("abcdYYYYYYYY").build();
        assertEquals(capped1.anchorHash(), capped2.anchorHash(), "anchor stops at the limit");
    }

    @Test
    void tokenKeys() {
        int[] tokens = new int[40];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = 100_000 + i;
        }
        PromptKey k = PromptKey.ofTokens(tokens, new int[] {10, 25}, 16, 1024);
        assertEquals(PromptKey.Unit.TOKENS, k.unit());
        assertEquals(40, k.length());
        assertEquals(2, k.blockCount());
        assertArrayEquals(new int[] {10, 25}, k.boundaries());
        assertThrows(IllegalArgumentException.class, () -> PromptKey.ofTokens(tokens, new int[] {30, 20}, 16, 1024));
    }

    @Test
    void aPrefixKeyIsTheKeyOfThePrefix() {
        qt().withFixedSeed(13L).forAll(strings().basicLatinAlphabet().ofLengthBetween(0, 300), integers().between(0, 300))
                .checkAssert((text, cut) -> {
                    int c = Math.min(cut, text.length());
                    PromptKey whole = PromptKey.textBuilder(16).append(text.substring(0, c / 2)).boundary()
                            .append(text.substring(c / 2)).build();
                    PromptKey prefix = whole.prefix(c);
                    PromptKey direct = PromptKey.ofText(text.substring(0, c), 16);
                    assertEquals(c, prefix.length());
                    assertEquals(direct.blockCount(), prefix.blockCount());
                    for (int i = 0; i < direct.blockCount(); i++) {
                        assertEquals(direct.blockHash(i), prefix.blockHash(i));
                    }
                    for (int b : prefix.boundaries()) {
                        assertTrue(b <= c);
                    }
                });
    }

    @Test
    void toStringNeverShowsText() {
        String s = PromptKey.ofText("secret prompt text that must not leak", 8).toString();
        assertFalse(s.contains("secret"));
    }
}
