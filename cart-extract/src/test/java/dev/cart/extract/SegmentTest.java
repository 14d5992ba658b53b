package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A segment's pieces (references to a source array, copies, own chunks that fill and are followed by new
 * ones, boundaries between them, marks returned to) replay as one text: the key made from the segment is
 * the key of that text, boundaries and all, however the pieces fell.
 */
class SegmentTest {

    private static final String[] TEXTS = {"a", "hello world ", "caf\u00e9 ", "\u65e5\u672c ", "\ud83d\ude80", "x"};

    @Test
    void piecesReplayAsTheirText() {
        SplittableRandom rnd = new SplittableRandom(11);
        for (int t = 0; t < 2_000; t++) {
            byte[] source = randomText(rnd, 600).getBytes(StandardCharsets.UTF_8);
            Segment seg = new Segment(1 + rnd.nextInt(64)); // small chunks: many of them
            StringBuilder text = new StringBuilder();
            List<Integer> bounds = new ArrayList<>();
            String markedText = null;
            List<Integer> markedBounds = null;
            for (int op = 0, ops = rnd.nextInt(40); op < ops; op++) {
                switch (rnd.nextInt(7)) {
                    case 0 -> {
                        char c = (char) (rnd.nextBoolean() ? 'a' + rnd.nextInt(26) : 0x80 + rnd.nextInt(0xD000));
                        seg.add(c);
                        text.append(c);
                    }
                    case 1 -> {
                        String s = TEXTS[rnd.nextInt(TEXTS.length)].repeat(1 + rnd.nextInt(50));
                        seg.add(s);
                        text.append(s);
                    }
                    case 2, 3 -> {
                        // a range of the source's UTF-8 that holds no four-byte sequence, as the body's runs
                        int[] r = bmpRange(source, rnd);
                        String s = new String(source, r[0], r[1] - r[0], StandardCharsets.UTF_8);
                        if (rnd.nextBoolean()) {
                            seg.addRef(source, r[0], r[1] - r[0], s.length());
                        } else {
                            seg.addCopy(source, r[0], r[1] - r[0], s.length());
                        }
                        text.append(s);
                    }
                    case 4 -> {
                        seg.boundary();
                        if (text.length() > 0 && (bounds.isEmpty() || bounds.get(bounds.size() - 1) != text.length())) {
                            bounds.add(text.length());
                        }
                    }
                    case 5 -> {
                        seg.mark();
                        markedText = text.toString();
                        markedBounds = new ArrayList<>(bounds);
                    }
                    default -> {
                        if (markedText != null) {
                            seg.reset();
                            text.setLength(0);
                            text.append(markedText);
                            bounds = markedBounds;
                            markedText = null;
                        }
                    }
                }
            }
            assertEquals(text.length(), seg.length());
            assertEquals(text.toString(), seg.text());
            PromptKey.Builder fromSegment = PromptKey.textBuilder(16, 40);
            seg.appendTo(Segment.Sink.of(fromSegment));
            PromptKey.Builder fromText = PromptKey.textBuilder(16, 40);
            int at = 0;
            for (int b : bounds) {
                fromText.append(text.subSequence(at, b)).boundary();
                at = b;
            }
            fromText.append(text.subSequence(at, text.length()));
            assertEquals(fromText.build(), fromSegment.build(), "case " + t);
        }
    }

    private static String randomText(SplittableRandom rnd, int n) {
        StringBuilder sb = new StringBuilder();
        while (sb.length() < n) {
            sb.append(TEXTS[rnd.nextInt(TEXTS.length)]);
        }
        return sb.toString();
    }

    /** A random range of {@code utf8} from one char's start to another's, with no four-byte sequence. */
    private static int[] bmpRange(byte[] utf8, SplittableRandom rnd) {
        while (true) {
            int from = start(utf8, rnd.nextInt(utf8.length));
            int to = start(utf8, Math.min(utf8.length, from + rnd.nextInt(300)));
            boolean bmp = true;
            for (int i = from; i < to; i++) {
                bmp &= (utf8[i] & 0xFF) < 0xF0;
            }
            if (bmp) {
                return new int[] {from, to};
            }
        }
    }

    private static int start(byte[] utf8, int i) {
        while (i < utf8.length && (utf8[i] & 0xC0) == 0x80) {
            i++;
        }
        return i;
    }
}
