package dev.cart.proxy.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class DecisionLogTest {

    /** The decision line's ratio reads as {@code %.3f} wrote it, ties and all, without a Formatter. */
    @Test
    void ratioIsWrittenAsFormatWritesIt() {
        double[] fixed = {0, 1, 0.951, 0.5035, 0.0005, 0.9995, 2.0275, 1e-9, 0.1, 0.125, Double.NaN, -0.25, 1e12};
        for (double r : fixed) {
            assertEquals(String.format(Locale.ROOT, "%.3f", r), DecisionLog.ratio(r), "ratio " + r);
        }
        SplittableRandom rnd = new SplittableRandom(7);
        for (int i = 0; i < 200_000; i++) {
            double r = i % 2 == 0 ? rnd.nextDouble() : (double) rnd.nextInt(5000) / (1 + rnd.nextInt(5000));
            assertEquals(String.format(Locale.ROOT, "%.3f", r), DecisionLog.ratio(r), "ratio " + r);
        }
    }
}
