package dev.cart.policy;

/**
 * The range checks of the policies' settings: each setting is checked once, by the builder method that
 * takes it, and the error names the setting as the caller spelled it (builder method or settings key).
 */
final class Checks {

    private Checks() {}

    /** {@code value} if it is in [min, max]. */
    static double inRange(String name, double value, double min, double max) {
        if (!(value >= min && value <= max)) {
            throw new IllegalArgumentException(
                    name + " must be in [" + fmt(min) + ", " + fmt(max) + "], was " + fmt(value));
        }
        return value;
    }

    /** {@code value} if it is a load-bound factor: 0 for unbounded, otherwise in [1, 1000]. */
    static double loadFactor(String name, double value) {
        if (!(value == 0.0 || (value >= 1.0 && value <= 1000.0))) {
            throw new IllegalArgumentException(name + " must be 0 (unbounded) or in [1, 1000], was " + fmt(value));
        }
        return value;
    }

    private static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
}
