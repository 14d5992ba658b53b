package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class JsonTextTest {

    /** JSON string content: plain words (long runs), escapes, raw and escaped non-ASCII, emoji both ways. */
    private static final String[] PIECES = {
        "plain words of the prompt ",
        "\\n",
        "\\\"",
        "\\\\",
        "\\t",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\u00fcber ",
        "\u65e5\u672c ",
        "\ud83d\ude80",
        "/",
    };

    @Test
    void decodedTextIsJacksonsWhereverTheRunsFall() throws Exception {
        SplittableRandom rnd = new SplittableRandom(5);
        JsonFactory jackson = new JsonFactory();
        for (int t = 0; t < 3_000; t++) {
            StringBuilder json = new StringBuilder("\"");
            for (int k = 0, n = rnd.nextInt(30); k < n; k++) {
                // mostly one piece; sometimes a run long enough to be kept by reference
                json.append(PIECES[rnd.nextInt(PIECES.length)].repeat(rnd.nextInt(8) == 0 ? 1 + rnd.nextInt(12) : 1));
            }
            json.append('"');
            int closing = json.toString().getBytes(StandardCharsets.UTF_8).length - 1;
            // what follows a string in a body (a string in the body's last bytes is left to Jackson)
            json.append("}]}            ");
            byte[] body = json.toString().getBytes(StandardCharsets.UTF_8);
            String expected;
            try (JsonParser p = jackson.createParser(body)) {
                p.nextToken();
                expected = p.getText();
            }
            Segment out = new Segment(1 + rnd.nextInt(300));
            String before = rnd.nextBoolean() ? "" : "\u0001user\u0002";
            out.add(before);
            assertEquals(closing, JsonText.decode(body, 0, out), json.toString());
            assertEquals(before + expected, out.text(), json.toString());
            assertEquals(before.length() + expected.length(), out.length());
        }
    }

    @Test
    void aDeclinedStringLeavesTheSegmentAsItWas() {
        String run = "plain words of the prompt ".repeat(10);
        for (String bad : new String[] {"\\x", "\\u12G4", "\u0001", ""}) {
            byte[] body = ("\"" + run + "\\n" + run + bad).getBytes(StandardCharsets.UTF_8);
            Segment out = new Segment(16);
            out.add("\u0001user\u0002").add(run);
            assertEquals(-1, JsonText.decode(body, 0, out), bad);
            assertEquals("\u0001user\u0002" + run, out.text());
            out.add('!');
            assertEquals("\u0001user\u0002" + run + "!", out.text());
        }
    }

    /** The first byte of the word (little-endian) that is a quote, backslash, control or 0x80 and above; 8 if none. */
    private static int firstSpecialOrHigh(long w) {
        for (int k = 0; k < 8; k++) {
            int c = (int) (w >>> (8 * k)) & 0xFF;
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) {
                return k;
            }
        }
        return 8;
    }

    @Test
    void theWordTestFlagsExactlyTheFirstStopByte() {
        SplittableRandom rnd = new SplittableRandom(3);
        int[] edges = {0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0x81, 0xA2, 0xDC, 0xFF};
        for (int t = 0; t < 1_000_000; t++) {
            long w = 0;
            for (int k = 0; k < 8; k++) {
                // mostly plain ASCII, some edge bytes, as prompt text is
                int c = rnd.nextInt(4) == 0 ? edges[rnd.nextInt(edges.length)] : 0x20 + rnd.nextInt(0x60);
                w |= (long) c << (8 * k);
            }
            long m = JsonText.specialOrHigh(w);
            int want = firstSpecialOrHigh(w);
            assertEquals(want, m == 0 ? 8 : Long.numberOfTrailingZeros(m) >>> 3, Long.toHexString(w));
            long before = JsonText.special(w) | w & 0x8080808080808080L; // the test's former formula
            assertEquals(Long.numberOfTrailingZeros(before), Long.numberOfTrailingZeros(m), Long.toHexString(w));
        }
    }
}
