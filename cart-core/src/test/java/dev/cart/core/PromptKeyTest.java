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

    /** CESU-8 by hand: each UTF-16 unit on its own, lone surrogates included (an encoder would replace them). */
    static byte[] cesu8(String s) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                out.write(c);
            } else if (c < 0x800) {
                out.write(0xC0 | c >> 6);
                out.write(0x80 | c & 0x3F);
            } else {
                out.write(0xE0 | c >> 12);
                out.write(0x80 | c >> 6 & 0x3F);
                out.write(0x80 | c & 0x3F);
            }
        }
        return out.toByteArray();
    }

    /** CESU-8 bytes, appended in pieces cut at any unit, give the key of their units. */
    @Test
    void cesu8BytesGiveTheKeyOfTheirUnits() {
        qt().withFixedSeed(5L)
                .withExamples(400)
                .forAll(
                        mixedText(),
                        integers().between(1, 70),
                        integers().between(1, 300),
                        integers().all())
                .checkAssert((text, block, anchor, seed) -> {
                    PromptKey whole =
                            PromptKey.textBuilder(block, anchor).append(text).build();
                    java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
                    PromptKey.Builder b = PromptKey.textBuilder(block, anchor);
                    for (int pos = 0; pos < text.length(); ) {
                        int n = Math.min(text.length() - pos, rnd.nextInt(1, 200));
                        byte[] bytes = cesu8(text.substring(pos, pos + n));
                        byte[] padded = new byte[bytes.length + 5];
                        System.arraycopy(bytes, 0, padded, 2, bytes.length);
                        b.appendCesu8(padded, 2, bytes.length, n);
                        pos += n;
                    }
                    assertEquals(whole, b.build());
                });
    }

    @Test
    void cesu8WithTheWrongUnitCountIsRefused() {
        byte[] bytes = cesu8("h\u00e9llo \u4e16\u754c");
        assertThrows(
                IllegalArgumentException.class, () -> PromptKey.textBuilder(4).appendCesu8(bytes, 0, bytes.length, 3));
        assertThrows(
                IllegalArgumentException.class, () -> PromptKey.textBuilder(4).appendCesu8(bytes, 0, bytes.length, 9));
        assertThrows(
                IllegalArgumentException.class,
                () -> PromptKey.textBuilder(4).appendCesu8(bytes, 0, bytes.length, bytes.length + 1));
    }

    @Test
    void howTextIsAppendedDoesNotMatter() {
        qt().withFixedSeed(11L)
                .forAll(
                        strings().allPossible().ofLengthBetween(0, 400),
                        integers().between(0, 400))
                .checkAssert((text, cut) -> {
                    int c = Math.min(cut, text.length());
                    PromptKey whole = PromptKey.ofText(text, 16);
                    PromptKey parts = PromptKey.textBuilder(16)
                            .append(text.substring(0, c))
                            .append(text.toCharArray(), c, text.length() - c)
                            .build();
                    assertEquals(whole, parts);
                });
    }

    /**
     * Every way of appending a text gives the same key: a String, a char array in pieces, one char at a
     * time, and (for Latin-1 runs) bytes, with pieces cut anywhere, including across block edges and
     * between the halves of a surrogate pair. Texts mix ASCII, Latin-1 and wider characters, so blocks
     * switch between the byte and the char hashing in every order.
     */
    @Test
    void everyAppendPathGivesTheSameKey() {
        qt().withFixedSeed(13L)
                .withExamples(400)
                .forAll(
                        mixedText(),
                        integers().between(1, 70),
                        integers().between(1, 300),
                        integers().all())
                .checkAssert((text, block, anchor, seed) -> {
                    PromptKey whole =
                            PromptKey.textBuilder(block, anchor).append(text).build();
                    java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
                    PromptKey.Builder b = PromptKey.textBuilder(block, anchor);
                    char[] cs = text.toCharArray();
                    int pos = 0;
                    while (pos < cs.length) {
                        int n = Math.min(cs.length - pos, rnd.nextInt(1, 150));
                        switch (rnd.nextInt(5)) {
                            case 0 -> b.append(text.substring(pos, pos + n));
                            case 1 -> b.append(cs, pos, n);
                            case 2 -> {
                                for (int k = 0; k < n; k++) {
                                    b.append(cs[pos + k]);
                                }
                            }
                            case 3 -> {
                                byte[] bytes = cesu8(text.substring(pos, pos + n));
                                b.appendCesu8(bytes, 0, bytes.length, n);
                            }
                            default -> {
                                int k = 0;
                                while (k < n && cs[pos + k] <= 0xFF) {
                                    k++;
                                }
                                if (k == 0) {
                                    b.append(cs[pos]);
                                    k = 1;
                                } else {
                                    byte[] bytes = new byte[k + 6];
                                    for (int j = 0; j < k; j++) {
                                        bytes[3 + j] = (byte) cs[pos + j];
                                    }
                                    b.appendLatin1(bytes, 3, k);
                                }
                                n = k;
                            }
                        }
                        pos += n;
                        if (rnd.nextInt(8) == 0) {
                            b.boundary();
                        }
                    }
                    // Boundaries do not change block hashes; compare those and the length.
                    PromptKey parts = b.build();
                    assertEquals(whole.length(), parts.length());
                    assertEquals(whole.blockCount(), parts.blockCount());
                    for (int i = 0; i < whole.blockCount(); i++) {
                        assertEquals(whole.blockHash(i), parts.blockHash(i), "block " + i);
                    }
                });
    }

    @Test
    void latin1BytesAndWiderCharsHashDifferentlyButConsistently() {
        String ascii = "a".repeat(64);
        String wide = "\u0101".repeat(64);
        assertNotEquals(
                PromptKey.ofText(ascii, 64).blockHash(0),
                PromptKey.ofText(wide, 64).blockHash(0));
        byte[] bytes = ascii.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        assertEquals(
                PromptKey.ofText(ascii, 64),
                PromptKey.textBuilder(64).appendLatin1(bytes, 0, 64).build());
    }

    @Test
    void aCopyContinuesIndependently() {
        PromptKey.Builder b = PromptKey.textBuilder(16, 40)
                .append("conversation so far \u00e9")
                .boundary()
                .append("and a tail");
        PromptKey before = b.build();
        PromptKey.Builder c = b.copy().append(" reply \u4e16\u754c").boundary();
        assertEquals(before, b.build());
        assertEquals(
                PromptKey.textBuilder(16, 40)
                        .append("conversation so far \u00e9")
                        .boundary()
                        .append("and a tail reply \u4e16\u754c")
                        .boundary()
                        .build(),
                c.build());
        b.append("x");
        assertEquals(before.length() + 1, b.build().length());
    }

    @Test
    void reservedAndSharedBlocksLeaveKeysAsTheyWere() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(9);
        for (int t = 0; t < 500; t++) {
            String head = "h".repeat(rnd.nextInt(300));
            String tail = "t\u00e9".repeat(rnd.nextInt(100));
            String[] replies = {"r".repeat(rnd.nextInt(100)), "s".repeat(rnd.nextInt(100))};
            PromptKey.Builder plain = PromptKey.textBuilder(16, 40).append(head).boundary();
            // reserved exactly, too little or too much
            int reserve = head.length() + rnd.nextInt(-20, 40);
            PromptKey.Builder reserved = PromptKey.textBuilder(16, 40)
                    .reserve(Math.max(0, reserve))
                    .append(head)
                    .boundary();
            PromptKey key = reserved.build();
            long[] seen = key.blocks().clone();
            assertEquals(plain.build(), key);
            // copies continued (two from one builder, as from two threads), and the builder itself
            PromptKey.Builder c0 = reserved.copy().reserve(rnd.nextInt(0, 200)).append(replies[0]);
            PromptKey.Builder c1 = reserved.copy().append(replies[1]);
            PromptKey continued = plain.copy().append(replies[0]).build();
            assertEquals(continued, c0.build());
            assertEquals(plain.copy().append(replies[1]).build(), c1.build());
            reserved.append(tail);
            assertEquals(plain.append(tail).build(), reserved.build());
            assertArrayEquals(seen, key.blocks(), "a key's blocks never change");
            assertEquals(continued, c0.build());
        }
    }

    /** Strings of ASCII, Latin-1, other BMP characters and surrogate pairs, in runs. */
    private static org.quicktheories.core.Gen<String> mixedText() {
        return integers().between(0, 600).zip(integers().all(), (len, seed) -> {
            java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
            StringBuilder sb = new StringBuilder();
            while (sb.length() < len) {
                int run = rnd.nextInt(1, 80);
                int kind = rnd.nextInt(10);
                for (int k = 0; k < run; k++) {
                    switch (kind) {
                        case 0 -> sb.append((char) rnd.nextInt(0x80, 0x100));
                        case 1 -> sb.append((char) rnd.nextInt(0x100, 0xD800));
                        case 2 -> sb.appendCodePoint(rnd.nextInt(0x10000, 0x110000));
                        case 3 -> sb.append((char) rnd.nextInt(0, 0x20));
                        case 4 -> sb.append((char) rnd.nextInt(0xD800, 0x10000)); // lone surrogates, private use
                        default -> sb.append((char) rnd.nextInt(0x20, 0x7F));
                    }
                }
            }
            return sb.toString();
        });
    }

    @Test
    void aLongerTextSharesTheBlocksOfItsPrefix() {
        qt().withFixedSeed(12L)
                .forAll(
                        strings().basicLatinAlphabet().ofLengthBetween(0, 300),
                        strings().basicLatinAlphabet().ofLengthBetween(0, 300))
                .checkAssert((a, b) -> {
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
        b.append("system prompt")
                .boundary()
                .append("user one")
                .boundary()
                .boundary()
                .append("tail");
        PromptKey k = b.build();
        assertArrayEquals(new int[] {13, 21}, k.boundaries());
        PromptKey other = PromptKey.textBuilder(8, 1000)
                .append("system prompt")
                .boundary()
                .append("different")
                .build();
        assertEquals(k.anchorHash(), other.anchorHash(), "same first message, same anchor");
        PromptKey third = PromptKey.textBuilder(8, 1000)
                .append("system prompT")
                .boundary()
                .build();
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
        qt().withFixedSeed(13L)
                .forAll(
                        strings().basicLatinAlphabet().ofLengthBetween(0, 300),
                        integers().between(0, 300))
                .checkAssert((text, cut) -> {
                    int c = Math.min(cut, text.length());
                    PromptKey whole = PromptKey.textBuilder(16)
                            .append(text.substring(0, c / 2))
                            .boundary()
                            .append(text.substring(c / 2))
                            .build();
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

    /**
     * Where a block of text that is not ASCII ends: {@code skipUnits} against a byte-by-byte count of unit starts,
     * over text of one- to three-byte units (CESU-8), from every start, for every count up to past the end, with
     * the array longer than the text and not.
     */
    @Test
    void skipUnitsFindsTheByteAfterThatManyUnits() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(17);
        for (int round = 0; round < 300; round++) {
            java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();
            int units = rnd.nextInt(60);
            for (int u = 0; u < units; u++) {
                int kind = rnd.nextInt(round % 3 == 0 ? 2 : 4); // some texts mostly ASCII, some mostly not
                int bytes = kind <= 1 ? 1 : kind;
                text.write(bytes == 1 ? 'a' + rnd.nextInt(26) : bytes == 2 ? 0xC3 : 0xE2);
                for (int k = 1; k < bytes; k++) {
                    text.write(0x80 | rnd.nextInt(64));
                }
            }
            byte[] t = text.toByteArray();
            byte[] b = java.util.Arrays.copyOf(t, t.length + rnd.nextInt(9)); // bytes past the end are not read as text
            java.util.Arrays.fill(b, t.length, b.length, (byte) 0x80);
            for (int p = 0; p < t.length; p++) {
                if ((t[p] & 0xC0) == 0x80) {
                    continue; // a start is always a unit's first byte
                }
                for (int want = 0; want <= units + 1; want++) {
                    assertEquals(
                            slowSkip(t, p, t.length, want),
                            PromptKey.skipUnits(b, p, t.length, want),
                            "round " + round + " from " + p + " want " + want);
                }
            }
        }
    }

    /** The offset where unit {@code want} of {@code b[p, end)} starts, counted a byte at a time; {@code end} if none. */
    private static int slowSkip(byte[] b, int p, int end, int want) {
        int seen = 0;
        for (int i = p; i < end; i++) {
            if ((b[i] & 0xC0) != 0x80) {
                if (seen == want) {
                    return i;
                }
                seen++;
            }
        }
        return end;
    }

    @Test
    void theWrittenOutBlockHashIsTheLoopsHash() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(5);
        for (int t = 0; t < 2_000; t++) {
            byte[] b = new byte[64 + 24];
            rnd.nextBytes(b);
            int off = rnd.nextInt(25);
            long seed = rnd.nextLong();
            assertEquals(PromptKey.hashBytesLoop(b, off, 64, seed), PromptKey.hashBytes(b, off, 64, seed));
        }
    }

    @Test
    void keysOfEveryBlockSizeAgreeBetweenBytesAndText() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(9);
        for (int blockSize : new int[] {1, 7, 32, 63, 64, 65, 128}) {
            for (int t = 0; t < 50; t++) {
                int n = rnd.nextInt(1_000);
                char[] c = new char[n];
                for (int i = 0; i < n; i++) {
                    c[i] = (char) (32 + rnd.nextInt(95));
                }
                String text = new String(c);
                byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                PromptKey want = PromptKey.textBuilder(blockSize).append(text).build();
                assertEquals(
                        want,
                        PromptKey.textBuilder(blockSize)
                                .appendCesu8(bytes, 0, n, n)
                                .build());
                assertEquals(
                        want,
                        PromptKey.textBuilder(blockSize)
                                .appendLatin1(bytes, 0, n)
                                .build());
            }
        }
    }
}
