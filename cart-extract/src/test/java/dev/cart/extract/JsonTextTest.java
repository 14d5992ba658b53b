package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class JsonTextTest {

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
