package dev.cart.policy;

import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Typed reads of a policy's settings map (values as parsed from YAML or given by code): a missing key is
 * empty, a value of the wrong type is an error naming the key. Ranges are not checked here but by the
 * builder method each value goes to ({@link Checks}). Keys a policy does not read are ignored: the
 * configuration layer rejects unknown keys itself.
 */
final class SettingsMap {

    private final Map<String, ?> values;

    SettingsMap(Map<String, ?> values) {
        this.values = values;
    }

    Optional<Double> decimal(String key) {
        Object v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v instanceof Number n) {
            return Optional.of(n.doubleValue());
        }
        if (v instanceof String s) {
            try {
                return Optional.of(Double.parseDouble(s.trim()));
            } catch (NumberFormatException e) {
                throw bad(key, "a number", v);
            }
        }
        throw bad(key, "a number", v);
    }

    Optional<Integer> integer(String key) {
        Object v = values.get(key);
        if (v == null) {
            return Optional.empty();
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
        if (l != (int) l) {
            throw new IllegalArgumentException(
                    key + " must be in [" + Integer.MIN_VALUE + ", " + Integer.MAX_VALUE + "], was " + l);
        }
        return Optional.of((int) l);
    }

    Optional<Boolean> bool(String key) {
        Object v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v instanceof Boolean b) {
            return Optional.of(b);
        }
        String s = v.toString().trim().toLowerCase(Locale.ROOT);
        if (s.equals("true")) {
            return Optional.of(true);
        }
        if (s.equals("false")) {
            return Optional.of(false);
        }
        throw bad(key, "true or false", v);
    }

    <E extends Enum<E>> Optional<E> choice(String key, Class<E> type) {
        Object v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        String s = v.toString().trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(s)) {
                return Optional.of(e);
            }
        }
        StringBuilder allowed = new StringBuilder();
        for (E e : type.getEnumConstants()) {
            allowed.append(allowed.length() == 0 ? "" : ", ").append(e.name().toLowerCase(Locale.ROOT));
        }
        throw new IllegalArgumentException(key + " must be one of " + allowed + ", was '" + v + "'");
    }

    private static IllegalArgumentException bad(String key, String what, Object v) {
        return new IllegalArgumentException(key + " must be " + what + ", was '" + v + "'");
    }
}
