package dev.cart.core.spi;

import dev.cart.core.internal.Names;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The settings a routing policy takes by name, as its {@link RoutingPolicyProvider} describes them
 * ({@link RoutingPolicyProvider#settings()}), and the one check of a settings map against them.
 *
 * <p>Each {@link Setting} has a key, a type, a default, the values it allows and one line of doc. A
 * settings map, as a configuration gives it (values as parsed from YAML, or given by code: numbers may be
 * strings, booleans {@code "true"}/{@code "false"}, a choice any case with {@code -} for {@code _}), is
 * checked once, here: {@link #problems} lists every problem at once (an unknown key with a suggestion, a
 * value of the wrong type, a value out of range, each naming the key and what it allows), and
 * {@link #values} turns a map without problems into typed {@link Values}, defaults filled in, or throws an
 * {@link IllegalArgumentException} carrying every problem. A policy's builder checks the values code gives
 * it with the same settings ({@link Setting#check}), so the configuration's ranges and the builder's never
 * disagree.
 *
 * <pre>{@code
 * static final PolicySettings.Setting<Double> THRESHOLD =
 *         PolicySettings.number("threshold", 0.3, 0, 1, "matched share of the key that makes a hit");
 * static final PolicySettings SETTINGS = PolicySettings.of("my_policy", THRESHOLD);
 * ...
 * double t = SETTINGS.values(Map.of("threshold", 0.5)).get(THRESHOLD);
 * }</pre>
 *
 * <p>Immutable and thread-safe, like its settings, values and problems.
 */
public final class PolicySettings {

    private final String policy;
    private final List<Setting<?>> settings;
    private final Map<String, Setting<?>> byName;

    private PolicySettings(String policy, List<Setting<?>> settings) {
        this.policy = Objects.requireNonNull(policy, "policy");
        Map<String, Setting<?>> m = new LinkedHashMap<>();
        for (Setting<?> s : settings) {
            if (m.putIfAbsent(s.name, s) != null) {
                throw new IllegalArgumentException(policy + ": setting '" + s.name + "' described twice");
            }
        }
        this.settings = List.copyOf(settings);
        this.byName = Collections.unmodifiableMap(m);
    }

    /**
     * The settings of the policy named {@code policy}, in the order given (the order of documentation).
     *
     * @param policy   the policy's name ({@link RoutingPolicyProvider#name()}), which messages start with
     * @param settings its settings; none for a policy that takes none
     * @return the description
     * @throws IllegalArgumentException if two settings have the same name
     */
    public static PolicySettings of(String policy, Setting<?>... settings) {
        return new PolicySettings(policy, List.of(settings));
    }

    /**
     * A number, such as a threshold or a factor: any {@link Number}, or a string that parses as one.
     *
     * @param name         the key, lower-case words joined by {@code _}
     * @param defaultValue the value when the key is absent; in [min, max]
     * @param min          the least value allowed
     * @param max          the greatest value allowed ({@link Double#MAX_VALUE} for no bound)
     * @param doc          one line saying what it does
     * @return the setting
     * @throws IllegalArgumentException if the default is outside [min, max]
     */
    public static Setting<Double> number(String name, double defaultValue, double min, double max, String doc) {
        return new Setting<>(name, Type.NUMBER, defaultValue, min, max, null, null, doc);
    }

    /**
     * A whole number, such as a length or a count: an integral {@link Number}, or a string that parses as one.
     *
     * @param name         the key, lower-case words joined by {@code _}
     * @param defaultValue the value when the key is absent; in [min, max]
     * @param min          the least value allowed
     * @param max          the greatest value allowed ({@link Integer#MAX_VALUE} for no bound)
     * @param doc          one line saying what it does
     * @return the setting
     * @throws IllegalArgumentException if the default is outside [min, max]
     */
    public static Setting<Integer> integer(String name, int defaultValue, int min, int max, String doc) {
        return new Setting<>(name, Type.INTEGER, defaultValue, min, max, null, null, doc);
    }

    /**
     * A switch: a {@link Boolean}, or the string {@code true} or {@code false} (any case).
     *
     * @param name         the key, lower-case words joined by {@code _}
     * @param defaultValue the value when the key is absent
     * @param doc          one line saying what it does
     * @return the setting
     */
    public static Setting<Boolean> bool(String name, boolean defaultValue, String doc) {
        return new Setting<>(name, Type.BOOLEAN, defaultValue, 0, 0, null, null, doc);
    }

    /**
     * One of an enum's constants, written in configuration as the constant's name in lower case
     * ({@code bounded_load} for {@code BOUNDED_LOAD}; {@code bounded-load} and any case are accepted too).
     *
     * @param name         the key, lower-case words joined by {@code _}
     * @param defaultValue the default constant, whose enum gives the choices
     * @param doc          one line saying what it does
     * @param <E>          the enum
     * @return the setting
     */
    public static <E extends Enum<E>> Setting<E> choice(String name, E defaultValue, String doc) {
        List<String> choices = new ArrayList<>();
        for (E e : defaultValue.getDeclaringClass().getEnumConstants()) {
            choices.add(e.name().toLowerCase(Locale.ROOT));
        }
        return new Setting<>(name, Type.CHOICE, defaultValue, 0, 0, List.copyOf(choices), null, doc);
    }

    /**
     * The name of the policy these settings belong to.
     *
     * @return the policy's name, as given to {@link #of}
     */
    public String policy() {
        return policy;
    }

    /**
     * Every setting, in the order given.
     *
     * @return an unmodifiable list of the settings
     */
    public List<Setting<?>> list() {
        return settings;
    }

    /**
     * The setting with this key, or null.
     *
     * @param name a key, e.g. {@code threshold}
     * @return the setting, or null if there is none by that name
     */
    public @Nullable Setting<?> setting(String name) {
        return byName.get(name);
    }

    /**
     * Every problem of {@code values} against these settings, in the map's order: each key that is not a
     * setting (with a close name suggested), and each value of the wrong type or outside what its setting
     * allows. A null value counts as absent (the default applies).
     *
     * @param values the settings by key, as a configuration gives them
     * @return the problems; empty when {@code values} is fine
     */
    public List<Problem> problems(Map<String, ?> values) {
        List<Problem> problems = new ArrayList<>();
        for (Map.Entry<String, ?> e : values.entrySet()) {
            String key = String.valueOf(e.getKey());
            Setting<?> s = byName.get(key);
            if (s == null) {
                problems.add(unknown(key));
            } else if (e.getValue() != null) {
                Problem p = s.problem(e.getValue());
                if (p != null) {
                    problems.add(p);
                }
            }
        }
        return problems;
    }

    /**
     * {@code values} checked and converted, with the default of every setting they leave out.
     *
     * @param values the settings by key, as a configuration gives them
     * @return the typed values
     * @throws IllegalArgumentException carrying every problem {@link #problems} finds, one per line, each
     *     starting with the policy's name: {@code cache_aware: unknown setting 'treshold' (did you mean
     *     'threshold'?)}
     */
    public Values values(Map<String, ?> values) {
        List<Problem> problems = problems(values);
        if (!problems.isEmpty()) {
            StringBuilder sb = new StringBuilder();
            for (Problem p : problems) {
                sb.append(sb.length() == 0 ? "" : "\n")
                        .append(policy)
                        .append(": ")
                        .append(p);
            }
            throw new IllegalArgumentException(sb.toString());
        }
        Map<String, Object> typed = new LinkedHashMap<>();
        Set<String> given = new LinkedHashSet<>();
        for (Setting<?> s : settings) {
            Object raw = values.get(s.name);
            if (raw == null) {
                typed.put(s.name, s.defaultValue);
            } else {
                typed.put(s.name, s.convert(raw));
                given.add(s.name);
            }
        }
        return new Values(this, typed, given);
    }

    private Problem unknown(String key) {
        String hint = Names.didYouMean(key, byName.keySet());
        if (hint.isEmpty()) {
            hint = byName.isEmpty()
                    ? " (" + policy + " takes no settings)"
                    : "; settings of " + policy + ": " + String.join(", ", byName.keySet());
        }
        return new Problem(key, "unknown setting" + hint, "unknown setting '" + key + "'" + hint);
    }

    @Override
    public String toString() {
        return policy + byName.keySet();
    }

    /** What kind of value a setting takes. */
    public enum Type {
        /** A number ({@link Double}). */
        NUMBER,
        /** A whole number ({@link Integer}). */
        INTEGER,
        /** True or false ({@link Boolean}). */
        BOOLEAN,
        /** One of a fixed set of names (an enum constant). */
        CHOICE
    }

    /**
     * One setting: key, type, default, allowed values and a line of doc. Made by {@link #number},
     * {@link #integer}, {@link #bool} and {@link #choice}.
     *
     * @param <T> the type of its value: {@link Double}, {@link Integer}, {@link Boolean} or an enum
     */
    public static final class Setting<T> {
        private final String name;
        private final Type type;
        private final T defaultValue;
        private final double min;
        private final double max;
        private final List<String> choices;
        /** What 0 means when 0 is allowed below the range ({@link #orZero}), else null. */
        private final @Nullable String zero;

        private final String doc;

        private Setting(
                String name,
                Type type,
                T defaultValue,
                double min,
                double max,
                @Nullable List<String> choices,
                @Nullable String zero,
                String doc) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("a setting needs a name");
            }
            this.name = name;
            this.type = type;
            this.defaultValue = Objects.requireNonNull(defaultValue, "defaultValue");
            this.min = min;
            this.max = max;
            this.choices = choices == null ? List.of() : choices;
            this.zero = zero;
            this.doc = Objects.requireNonNull(doc, "doc");
            if ((type == Type.NUMBER || type == Type.INTEGER) && !(min <= max)) {
                throw new IllegalArgumentException(name + ": the range [" + min + ", " + max + "] is empty");
            }
            if (!allows(defaultValue)) {
                throw new IllegalArgumentException(
                        name + ": the default " + show(defaultValue) + " is not " + allowed());
            }
        }

        /**
         * This number setting allowing 0 as well, below its range, with the meaning given: for a bound that
         * 0 turns off ({@code 0 (unbounded) or in [1, 1000]}).
         *
         * @param meaning what 0 means, e.g. {@code unbounded}
         * @return the setting that also allows 0
         * @throws IllegalStateException if the setting is not a number or whole number
         */
        public Setting<T> orZero(String meaning) {
            if (type != Type.NUMBER && type != Type.INTEGER) {
                throw new IllegalStateException(name + " is not a number");
            }
            return new Setting<>(name, type, defaultValue, min, max, choices, Objects.requireNonNull(meaning), doc);
        }

        /**
         * The key, e.g. {@code threshold}.
         *
         * @return the key, lower-case words joined by {@code _}
         */
        public String name() {
            return name;
        }

        /**
         * The kind of value it takes.
         *
         * @return the type
         */
        public Type type() {
            return type;
        }

        /**
         * The value when the key is absent.
         *
         * @return the default, never null
         */
        public T defaultValue() {
            return defaultValue;
        }

        /**
         * For a {@link Type#CHOICE}, the names allowed, in the enum's order; otherwise empty.
         *
         * @return an unmodifiable list, empty unless the type is {@link Type#CHOICE}
         */
        public List<String> choices() {
            return choices;
        }

        /**
         * One line saying what the setting does.
         *
         * @return the line of documentation
         */
        public String doc() {
            return doc;
        }

        /**
         * What the setting allows, in words: {@code in [0, 1]}, {@code >= 1}, {@code 0 (unbounded) or in
         * [1, 1000]}, {@code true or false}, {@code one of abs_rel, median, bounded_load}.
         *
         * @return the allowed values in words
         */
        public String allowed() {
            String range;
            switch (type) {
                case BOOLEAN:
                    return "true or false";
                case CHOICE:
                    return "one of " + String.join(", ", choices);
                default:
                    boolean unbounded = type == Type.INTEGER ? max >= Integer.MAX_VALUE : max >= Double.MAX_VALUE;
                    range = unbounded ? ">= " + format(min) : "in [" + format(min) + ", " + format(max) + "]";
            }
            return zero == null ? range : "0 (" + zero + ") or " + range;
        }

        /**
         * {@code value} if this setting allows it: for a policy's builder, which checks what code gives it
         * against the same range as a configuration.
         *
         * @param nameInError how the message names the setting (a builder method's name, say)
         * @param value       the value
         * @return {@code value}
         * @throws IllegalArgumentException {@code <nameInError> must be <allowed>, was <value>}
         * @throws NullPointerException if {@code value} is null
         */
        public T check(String nameInError, T value) {
            if (!allows(Objects.requireNonNull(value, nameInError))) {
                throw new IllegalArgumentException(nameInError + " must be " + allowed() + ", was " + show(value));
            }
            return value;
        }

        private boolean allows(Object v) {
            switch (type) {
                case NUMBER:
                case INTEGER:
                    double d = ((Number) v).doubleValue();
                    return (d >= min && d <= max) || (zero != null && d == 0);
                case CHOICE:
                    return choices.contains(((Enum<?>) v).name().toLowerCase(Locale.ROOT));
                default:
                    return true;
            }
        }

        /** The problem with a configured value, or null when it is fine. */
        @Nullable
        Problem problem(Object raw) {
            Object v = parse(raw);
            if (v == null) {
                return problem("must be " + what() + ", was " + quoted(raw));
            }
            if (type == Type.CHOICE) {
                String given = raw.toString();
                return choices.contains((String) v)
                        ? null
                        : problem("must be " + allowed() + ", was " + quoted(raw) + Names.didYouMean(given, choices));
            }
            if (type == Type.INTEGER && ((Long) v) != ((Long) v).intValue()) {
                return problem("must be " + allowed() + ", was " + v);
            }
            Object typed = type == Type.INTEGER ? (Object) ((Long) v).intValue() : v;
            return allows(typed) ? null : problem("must be " + allowed() + ", was " + show(typed));
        }

        private Problem problem(String text) {
            return new Problem(name, text, name + " " + text);
        }

        /** A configured value that {@link #problem} accepted, as a {@code T}. */
        @SuppressWarnings("unchecked")
        T convert(Object raw) {
            Object v = parse(raw);
            if (v == null) {
                throw new IllegalStateException(name + ": converting a value its check refused");
            }
            switch (type) {
                case INTEGER:
                    return (T) Integer.valueOf(((Long) v).intValue());
                case CHOICE:
                    for (Object e : ((Enum<?>) defaultValue).getDeclaringClass().getEnumConstants()) {
                        if (((Enum<?>) e).name().toLowerCase(Locale.ROOT).equals(v)) {
                            return (T) e;
                        }
                    }
                    throw new IllegalStateException(name + ": no constant " + v);
                default:
                    return (T) v;
            }
        }

        /**
         * The value read as its type: a Double, a Long (for a whole number, before the range check), a
         * Boolean, or a normalised choice name (which may still not be one of the choices); null when it
         * cannot be read as the type at all.
         */
        private @Nullable Object parse(Object raw) {
            switch (type) {
                case NUMBER:
                    if (raw instanceof Number n) {
                        return n.doubleValue();
                    }
                    if (raw instanceof String s) {
                        try {
                            return Double.parseDouble(s.trim());
                        } catch (NumberFormatException e) {
                            return null;
                        }
                    }
                    return null;
                case INTEGER:
                    if (raw instanceof Integer || raw instanceof Long || raw instanceof Short || raw instanceof Byte) {
                        return ((Number) raw).longValue();
                    }
                    if (raw instanceof Number n) {
                        double d = n.doubleValue();
                        return d == Math.rint(d) && Math.abs(d) < 0x1p62 ? (Object) (long) d : null;
                    }
                    if (raw instanceof String s) {
                        try {
                            return Long.parseLong(s.trim());
                        } catch (NumberFormatException e) {
                            return null;
                        }
                    }
                    return null;
                case BOOLEAN:
                    if (raw instanceof Boolean b) {
                        return b;
                    }
                    String b = raw instanceof String s ? s.trim().toLowerCase(Locale.ROOT) : "";
                    return b.equals("true") ? Boolean.TRUE : b.equals("false") ? Boolean.FALSE : null;
                default:
                    return raw instanceof String || raw instanceof Enum<?>
                            ? raw.toString().trim().toLowerCase(Locale.ROOT).replace('-', '_')
                            : null;
            }
        }

        /** The type in words, for a value that is not of it. */
        private String what() {
            return switch (type) {
                case NUMBER -> "a number";
                case INTEGER -> "an integer";
                case BOOLEAN, CHOICE -> allowed();
            };
        }

        private static String show(Object v) {
            if (v instanceof Double d) {
                return format(d);
            }
            if (v instanceof Enum<?> e) {
                return "'" + e.name().toLowerCase(Locale.ROOT) + "'";
            }
            return String.valueOf(v);
        }

        private static String quoted(Object raw) {
            return raw instanceof Number || raw instanceof Boolean ? raw.toString() : "'" + raw + "'";
        }

        private static String format(double d) {
            if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                return Long.toString((long) d);
            }
            return Double.isFinite(d)
                    ? BigDecimal.valueOf(d).stripTrailingZeros().toPlainString()
                    : Double.toString(d);
        }

        /** {@code name: type, default, allowed: doc}. */
        @Override
        public String toString() {
            return name + ": " + type.name().toLowerCase(Locale.ROOT) + ", default " + show(defaultValue) + ", "
                    + allowed() + ": " + doc;
        }
    }

    /**
     * One problem of a settings map: the key it concerns and what is wrong. Its {@link #toString()} is one
     * sentence naming the key ({@code threshold must be in [0, 1], was 1.5}); {@link #problem()} is the
     * same without the key ({@code must be in [0, 1], was 1.5}), for a configuration layer that names the
     * key its own way ({@code config.yaml: cache.threshold: must be in [0, 1], was 1.5}).
     */
    public static final class Problem {
        private final String key;
        private final String problem;
        private final String sentence;

        private Problem(String key, String problem, String sentence) {
            this.key = key;
            this.problem = problem;
            this.sentence = sentence;
        }

        /**
         * The key as given.
         *
         * @return the key
         */
        public String key() {
            return key;
        }

        /**
         * What is wrong, without the key: {@code must be in [0, 1], was 1.5}, {@code unknown setting (...)}.
         *
         * @return the problem in words
         */
        public String problem() {
            return problem;
        }

        /**
         * One sentence naming the key: {@code threshold must be in [0, 1], was 1.5}, or {@code unknown
         * setting 'treshold' (did you mean 'threshold'?)}.
         */
        @Override
        public String toString() {
            return sentence;
        }
    }

    /**
     * A settings map checked against a policy's settings, every setting's value typed, the defaults filled
     * in ({@link PolicySettings#values}).
     */
    public static final class Values {
        private final PolicySettings owner;
        private final Map<String, Object> values;
        private final Set<String> given;

        private Values(PolicySettings owner, Map<String, Object> values, Set<String> given) {
            this.owner = owner;
            this.values = Collections.unmodifiableMap(values);
            this.given = Collections.unmodifiableSet(given);
        }

        /**
         * The value of {@code setting}: as configured, or its default.
         *
         * @param setting one of the settings these values were checked against (matched by name and type)
         * @param <T>     the setting's value type
         * @return the value, never null
         * @throws IllegalArgumentException if {@code setting} is not one of these settings
         */
        public <T> T get(Setting<T> setting) {
            Setting<?> mine = owner.byName.get(setting.name);
            if (mine == null || mine.type != setting.type) {
                throw new IllegalArgumentException(owner.policy + " has no "
                        + setting.type.name().toLowerCase(Locale.ROOT) + " setting '" + setting.name + "'");
            }
            @SuppressWarnings("unchecked")
            T v = (T) values.get(setting.name);
            if (v == null) { // every setting of the owner has a value, its default at least
                throw new IllegalStateException(owner.policy + ": no value for '" + setting.name + "'");
            }
            return v;
        }

        /**
         * True if the map set {@code setting} (to a value other than null).
         *
         * @param setting one of the settings these values were checked against
         * @return true if the configuration gave it a value; false if it has its default
         */
        public boolean isSet(Setting<?> setting) {
            return given.contains(setting.name);
        }

        /** {@code {threshold=0.5, guard=median, ...}}: every setting's value, defaults included. */
        @Override
        public String toString() {
            return owner.policy + values;
        }
    }
}
