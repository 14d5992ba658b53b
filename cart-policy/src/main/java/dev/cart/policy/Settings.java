package dev.cart.policy;

import java.util.Locale;
import java.util.Map;

/**
 * Typed reads of a policy's settings map (values as parsed from YAML or given by code). Every error names
 * the setting and the allowed range. Keys a policy does not read are ignored: the configuration layer
 * rejects unknown keys itself.
 */
final class Settings {

    private final Map<String, ?> values;
    private final String prefix;

    Settings(Map<String, ?> values, String prefix) {
        this.values = values;
        this.prefix = prefix;
    }

    double decimal(String key, double def, double min, double max) {
        Object v = values.get(key);
        if (v == null) {
            return def;
        }
        double d;
        if (v instanceof Number n) {
            d = n.doubleValue();
        } else if (v instanceof String s) {
            try {
                d = Double.parseDouble(s.trim());
            } catch (NumberFormatException e) {
                throw bad(key, "a number", v);
            }
        } else {
            throw bad(key, "a number", v);
        }
        if (!(d >= min && d <= max)) {
            throw new IllegalArgumentException(prefix + key + " must be in [" + fmt(min) + ", " + fmt(max)
                    + "], was " + fmt(d));
        }
        return d;
    }

    int integer(String key, int def, int min, int max) {
        Object v = values.get(key);
        if (v == null) {
            return def;
        }
        long l;
        if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            l = ((Number) v).longValue();
        } else if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) {
            l = (long) n.doubleValue();
        } else if (v instanceof String s) {
            try {
                l = Long.parseLong(s.trim());
            } catch (NumberFormatException e) {
                throw bad(key, "an integer", v);
            }
        } else {
            throw bad(key, "an integer", v);
        }
        if (l < min || l > max) {
            throw new IllegalArgumentException(prefix + key + " must be in [" + min + ", " + max + "], was " + l);
        }
        return (int) l;
    }

    boolean bool(String key, boolean def) {
        Object v = values.get(key);
        if (v == null) {
            return def;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        String s = v.toString().trim().toLowerCase(Locale.ROOT);
        if (s.equals("true")) {
            return true;
        }
        if (s.equals("false")) {
            return false;
        }
        throw bad(key, "true or false", v);
    }

    /** A load-bound factor: 0 for unbounded, otherwise at least 1. */
    double loadFactor(String key, double def) {
        double c = decimal(key, def, 0.0, 1000.0);
        if (c != 0.0 && c < 1.0) {
            throw new IllegalArgumentException(prefix + key + " must be 0 (unbounded) or at least 1, was " + c);
        }
        return c;
    }

    <E extends Enum<E>> E choice(String key, E def, Class<E> type) {
        Object v = values.get(key);
        if (v == null) {
            return def;
        }
        String s = v.toString().trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(s)) {
                return e;
            }
        }
        StringBuilder allowed = new StringBuilder();
        for (E e : type.getEnumConstants()) {
            allowed.append(allowed.length() == 0 ? "" : ", ").append(e.name().toLowerCase(Locale.ROOT));
        }
        throw new IllegalArgumentException(prefix + key + " must be one of " + allowed + ", was '" + v + "'");
    }

    private IllegalArgumentException bad(String key, String what, Object v) {
        return new IllegalArgumentException(prefix + key + " must be " + what + ", was '" + v + "'");
    }

    private static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
}
