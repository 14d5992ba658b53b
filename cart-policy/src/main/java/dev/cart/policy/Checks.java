package dev.cart.policy;

/**
 * The range checks of the policies' settings: each setting is checked once, by the builder method that
 * takes it, and the error names the setting as the caller spelled it: {@link #BY_METHOD} for a builder
 * used from code, {@link #BY_KEY} for one filled from a settings map.
 */
final class Checks {

    /** Names a setting by its builder method. */
    static final Checks BY_METHOD = new Checks(false);
    /** Names a setting by its settings key. */
    static final Checks BY_KEY = new Checks(true);

    private final boolean byKey;

    private Checks(boolean byKey) {
        this.byKey = byKey;
    }

    /** {@code value} if it is in [min, max]; the error names the setting {@code method} or {@code key}. */
    double inRange(String method, String key, double value, double min, double max) {
        return inRange(byKey ? key : method, value, min, max);
    }

    /** {@code value} if it is in [min, max], as an int. */
    int inRange(String method, String key, int value, int min, int max) {
        return (int) inRange(byKey ? key : method, value, min, max);
    }

    /** {@code value} if it is a load-bound factor: 0 for unbounded, otherwise in [1, 1000]. */
    double loadFactor(String method, String key, double value) {
        return loadFactor(byKey ? key : method, value);
    }

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
