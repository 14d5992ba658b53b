package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The text reads back as appended, whichever way it was appended and however long, held or copied. */
class AnswerTextTest {

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
