package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

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
}
