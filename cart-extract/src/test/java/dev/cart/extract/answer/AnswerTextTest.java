package dev.cart.extract.answer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The text reads back as appended, whichever way it was appended and however long, held or copied. */
class AnswerTextTest {

    @Test
    void blocksHoldWhatWasAppendedInOrder() {
        SplittableRandom rnd = new SplittableRandom(11);
        for (int run = 0; run < 5_000; run++) {
            AnswerText t = new AnswerText(true);
            List<StringBuilder> reference = new ArrayList<>();
            int appends = rnd.nextInt(6);
            for (int i = 0; i < appends; i++) {
                int block = rnd.nextInt(4);
                String text =
                        "x".repeat(rnd.nextInt(3)) + (char) ('a' + rnd.nextInt(26)) + "\u00e9".repeat(rnd.nextInt(2));
                if (rnd.nextBoolean()) {
                    t.append(block, text);
                } else {
                    char[] c = ("<" + text + ">").toCharArray();
                    t.append(block, c, 1, c.length - 2);
                }
                while (reference.size() <= block) {
                    reference.add(new StringBuilder());
                }
                reference.get(block).append(text);
            }
            assertEquals(reference.size(), t.blockCount());
            if (reference.isEmpty()) {
                assertNull(t.text());
                assertEquals("empty", t.problem());
                continue;
            }
            List<String> expected = new ArrayList<>();
            reference.forEach(b -> expected.add(b.toString()));
            assertEquals(expected, t.text());
            assertNull(t.problem());
        }
    }

    @Test
    void oneTextIsGivenBackAsItIs() {
        AnswerText t = new AnswerText(true);
        String text = "the whole answer";
        t.append(0, text);
        assertSame(text, t.text().get(0));
    }

    @Test
    void theFirstReasonStandsAndTheTextIsDropped() {
        AnswerText t = new AnswerText(true);
        t.append(0, "a");
        t.append(65, "b");
        assertNull(t.text());
        assertEquals("not_text", t.problem());
        assertEquals(0, t.blockCount());
        t.append(0, "c");
        assertEquals("not_text", t.problem());
        AnswerText off = new AnswerText(false);
        off.append(0, "a");
        assertEquals("not_collected", off.problem());
        AnswerText longer = new AnswerText(true);
        longer.append(0, "a".repeat(AnswerText.MAX_CHARS));
        longer.append(0, new char[] {'b'}, 0, 1);
        assertEquals("too_long", longer.problem());
    }

    @Test
    void textReadsBackAsAppended() {
        SplittableRandom rnd = new SplittableRandom(16);
        for (int round = 0; round < 300; round++) {
            AnswerText answer = new AnswerText(true);
            int blocks = rnd.nextInt(1, 4);
            List<StringBuilder> expected = new ArrayList<>();
            for (int b = 0; b < blocks; b++) {
                expected.add(new StringBuilder());
            }
            int appends = rnd.nextInt(0, 400);
            for (int i = 0; i < appends; i++) {
                int b = rnd.nextInt(blocks);
                String t = text(rnd, rnd.nextInt(0, rnd.nextInt(4) == 0 ? 3000 : 12));
                if (rnd.nextBoolean()) {
                    answer.append(b, t);
                } else {
                    char[] padded = ("<" + t + ">").toCharArray();
                    answer.append(b, padded, 1, t.length());
                }
                expected.get(b).append(t);
            }
            if (answer.problem() != null) {
                assertNull(answer.held());
                assertNull(answer.text());
                continue;
            }
            List<String> perBlock = new ArrayList<>();
            for (int b = 0; b < answer.blockCount(); b++) {
                perBlock.add(expected.get(b).toString());
            }
            assertEquals(perBlock, answer.text());
            List<String> held = new ArrayList<>();
            for (CharSequence c : answer.held()) {
                held.add(c.toString());
            }
            assertEquals(perBlock, held);
        }
    }

    /** ASCII, Latin-1, other BMP characters and surrogate pairs, so that a block may change its coder. */
    private static String text(SplittableRandom rnd, int len) {
        StringBuilder sb = new StringBuilder(len);
        while (sb.length() < len) {
            switch (rnd.nextInt(8)) {
                case 0 -> sb.append((char) rnd.nextInt(0x80, 0x100));
                case 1 -> sb.append((char) rnd.nextInt(0x100, 0xD800));
                case 2 -> sb.appendCodePoint(rnd.nextInt(0x10000, 0x110000));
                default -> sb.append((char) rnd.nextInt(0x20, 0x7F));
            }
        }
        return sb.toString();
    }
}
