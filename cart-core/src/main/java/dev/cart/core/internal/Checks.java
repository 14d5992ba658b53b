package dev.cart.core.internal;

import java.time.Duration;

/** Argument checks whose messages name the setting and the allowed range. */
public final class Checks {
    private Checks() {}

    public static void atLeast(String name, long value, long min) {
        if (value < min) {
            throw new IllegalArgumentException(name + " must be at least " + min + ", was " + value);
        }
    }

    public static void inRange(String name, double value, double min, double max) {
        if (!(value >= min && value <= max)) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + value);
        }
    }

    public static void positive(String name, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be a positive duration, was " + value);
        }
    }

    public static void notNegative(String name, Duration value) {
        if (value == null || value.isNegative()) {
            throw new IllegalArgumentException(name + " must not be negative, was " + value);
        }
    }
}
