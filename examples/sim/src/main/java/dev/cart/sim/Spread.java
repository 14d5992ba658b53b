package dev.cart.sim;

import java.util.Arrays;
import java.util.Locale;

/**
 * A figure over several seeds: its median and its range. {@link #format} prints {@code median [min–max]}
 * (only the value when every seed gave the same, or there was one seed).
 */
record Spread(double median, double min, double max, int n) {

    /** The spread of {@code values}, NaNs left out (all NaN: NaN). */
    static Spread of(double... values) {
        double[] v =
                Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
        if (v.length == 0) {
            return new Spread(Double.NaN, Double.NaN, Double.NaN, 0);
        }
        int m = v.length / 2;
        double median = v.length % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
        return new Spread(median, v[0], v[v.length - 1], v.length);
    }

    /** {@code median [min–max]} with {@code fmt} (a {@link String#format} pattern for one number). */
    String format(String fmt) {
        if (n == 0) {
            return "—";
        }
        String med = String.format(Locale.ROOT, fmt, median);
        String lo = String.format(Locale.ROOT, fmt, min);
        String hi = String.format(Locale.ROOT, fmt, max);
        if (n == 1 || lo.equals(hi)) {
            return med;
        }
        return med + " [" + lo + "–" + hi + "]";
    }
}
