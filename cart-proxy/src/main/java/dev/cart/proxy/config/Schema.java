package dev.cart.proxy.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.proxy.config.Constraints.Bounds;
import dev.cart.proxy.config.Constraints.HttpStatus;
import dev.cart.proxy.config.Constraints.NotBlank;
import dev.cart.proxy.config.Constraints.Nullable;
import dev.cart.proxy.config.Constraints.OneOf;
import dev.cart.proxy.config.Constraints.PolicyKeys;
import dev.cart.proxy.config.Constraints.RealBounds;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The configuration's keys, as the records of {@link ProxyConfig} declare them: a section per record, a
 * key per component, named as Jackson binds it ({@code snake_case}), of a {@link Kind} given by the
 * component's Java type, with what its {@link Constraints} annotations allow. Read once by reflection; the
 * validator checks the files against it, and the binder and {@link #toTree} use the same names, so there
 * is no second list of keys to keep in step. Immutable.
 */
final class Schema {

    /** What a key holds, from its component's type. */
    enum Kind {
        /** {@code int} or {@code long}. */
        INTEGER,
        /** {@code double}. */
        NUMBER,
        BOOLEAN,
        /** A string. */
        TEXT,
        /** An enum (its constants in lower case) or a string {@link OneOf} some names. */
        CHOICE,
        /** A nullable {@link HttpStatus}. */
        OPTIONAL_STATUS,
        /** A list of {@link HttpStatus}es. */
        STATUS_LIST,
        /** A list of names (a worker's models). */
        NAME_LIST,
        /** A nested section (a record). */
        SECTION,
        /** A list of sections (the workers). */
        SECTION_LIST,
        /** The policy's settings ({@link PolicyKeys}). */
        POLICY_KEYS
    }

    /** One key: its name within its section, its path ({@code server.port}, {@code workers[].url}), and what it allows. */
    record Key(
            String name,
            String path,
            RecordComponent component,
            Kind kind,
            ProxyConfig.IntRange range,
            ProxyConfig.RealRange realRange,
            List<String> choices,
            boolean notBlank,
            boolean nullable,
            Section section) {}

    /** One section: the record it binds to and its keys, in the record's order. */
    record Section(String path, Class<? extends Record> type, Map<String, Key> keys) {
        Key key(String name) {
            return keys.get(name);
        }

        /** The name of the component (its policy settings) that {@link Kind#POLICY_KEYS} binds to, or null. */
        String policyKeysName() {
            for (Key k : keys.values()) {
                if (k.kind == Kind.POLICY_KEYS) {
                    return k.name;
                }
            }
            return null;
        }

        /** The key names a file may write here (not the policy settings' component). */
        List<String> names() {
            List<String> out = new ArrayList<>();
            for (Key k : keys.values()) {
                if (k.kind != Kind.POLICY_KEYS) {
                    out.add(k.name);
                }
            }
            return out;
        }
    }

    private static final PropertyNamingStrategies.NamingBase SNAKE =
            (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;

    /** The whole configuration: the sections of {@link ProxyConfig}. */
    static final Section ROOT = section("", ProxyConfig.class);

    private static final Map<Class<?>, Section> BY_TYPE = byType();

    private Schema() {}

    /** The section a record type binds, wherever it sits. */
    static Section of(Class<? extends Record> type) {
        Section s = BY_TYPE.get(type);
        if (s == null) {
            throw new IllegalArgumentException(type + " is not a configuration section");
        }
        return s;
    }

    /** The range a component declares with {@link Bounds}, e.g. {@code range(Server.class, "port")}. */
    static ProxyConfig.IntRange range(Class<? extends Record> type, String component) {
        Key k = of(type).key(SNAKE.translate(component));
        if (k == null || k.range == null) {
            throw new IllegalArgumentException(type.getSimpleName() + "." + component + " has no bounds");
        }
        return k.range;
    }

    /**
     * Every key a file may write, by path ({@code server.port}, {@code workers[].url}); the policy settings
     * are not among them (the policies describe those).
     */
    static Set<String> keyPaths() {
        Set<String> out = new TreeSet<>();
        addPaths(ROOT, out);
        return Collections.unmodifiableSet(out);
    }

    private static void addPaths(Section s, Set<String> out) {
        for (Key k : s.keys.values()) {
            if (k.section != null) {
                addPaths(k.section, out);
            } else if (k.kind != Kind.POLICY_KEYS) {
                out.add(k.path);
            }
        }
    }

    /**
     * A record as the files would write it: each component under its key, a policy settings map spread
     * into its section, an enum in lower case, a nullable list that is empty (unset) as null.
     */
    static ObjectNode toTree(Record r) {
        Section s = of(r.getClass());
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        for (Key k : s.keys.values()) {
            Object v = value(k, r);
            if (k.kind == Kind.POLICY_KEYS) {
                if (v != null) {
                    ((Map<?, ?>) v).forEach((name, setting) -> o.set(String.valueOf(name), node(setting)));
                }
            } else if (k.nullable && v instanceof List<?> l && l.isEmpty()) {
                o.putNull(k.name);
            } else {
                o.set(k.name, node(v));
            }
        }
        return o;
    }

    private static Object value(Key k, Record r) {
        try {
            return k.component.getAccessor().invoke(r);
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new IllegalStateException("cannot read " + k.path, e);
        }
    }

    /** A value of a record component as a tree node. */
    static JsonNode node(Object v) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (v == null) {
            return f.nullNode();
        }
        if (v instanceof Record r) {
            return toTree(r);
        }
        if (v instanceof List<?> l) {
            ArrayNode a = f.arrayNode();
            l.forEach(e -> a.add(node(e)));
            return a;
        }
        if (v instanceof Enum<?> e) {
            return f.textNode(e.name().toLowerCase(Locale.ROOT));
        }
        if (v instanceof Integer i) {
            return f.numberNode(i);
        }
        if (v instanceof Long l) {
            return f.numberNode(l);
        }
        if (v instanceof Double d) {
            return f.numberNode(d);
        }
        if (v instanceof Boolean b) {
            return f.booleanNode(b);
        }
        return f.textNode(v.toString());
    }

    private static Section section(String path, Class<? extends Record> type) {
        Map<String, Key> keys = new LinkedHashMap<>();
        for (RecordComponent c : type.getRecordComponents()) {
            String name = SNAKE.translate(c.getName());
            String keyPath = path.isEmpty() ? name : path + "." + name;
            keys.put(name, key(name, keyPath, c));
        }
        return new Section(path, type, Collections.unmodifiableMap(keys));
    }

    @SuppressWarnings("unchecked")
    private static Key key(String name, String path, RecordComponent c) {
        Class<?> t = c.getType();
        boolean nullable = c.isAnnotationPresent(Nullable.class);
        boolean notBlank = c.isAnnotationPresent(NotBlank.class);
        boolean status = c.isAnnotationPresent(HttpStatus.class);
        ProxyConfig.IntRange range = c.isAnnotationPresent(Bounds.class) ? intRange(path, c) : null;
        if (status) {
            range = new ProxyConfig.IntRange(path, 400, 599);
        }
        ProxyConfig.RealRange real = null;
        if (c.isAnnotationPresent(RealBounds.class)) {
            RealBounds b = c.getAnnotation(RealBounds.class);
            real = new ProxyConfig.RealRange(path, b.min(), b.max());
        }
        List<String> choices = List.of();
        Section section = null;
        Kind kind;
        if (t == int.class || t == long.class) {
            kind = Kind.INTEGER;
        } else if (t == Integer.class && status && nullable) {
            kind = Kind.OPTIONAL_STATUS;
        } else if (t == double.class) {
            kind = Kind.NUMBER;
        } else if (t == boolean.class) {
            kind = Kind.BOOLEAN;
        } else if (t == String.class && c.isAnnotationPresent(OneOf.class)) {
            kind = Kind.CHOICE;
            choices = List.of(c.getAnnotation(OneOf.class).value());
        } else if (t == String.class) {
            kind = Kind.TEXT;
        } else if (t.isEnum()) {
            kind = Kind.CHOICE;
            List<String> names = new ArrayList<>();
            for (Object e : t.getEnumConstants()) {
                names.add(((Enum<?>) e).name().toLowerCase(Locale.ROOT));
            }
            choices = List.copyOf(names);
        } else if (t.isRecord()) {
            kind = Kind.SECTION;
            section = section(path, (Class<? extends Record>) t);
        } else if (t == List.class && elementType(c) == Integer.class && status) {
            kind = Kind.STATUS_LIST;
        } else if (t == List.class && elementType(c) == String.class) {
            kind = Kind.NAME_LIST;
        } else if (t == List.class && elementType(c) instanceof Class<?> e && e.isRecord()) {
            kind = Kind.SECTION_LIST;
            section = section(path + "[]", (Class<? extends Record>) e);
        } else if (t == Map.class && c.isAnnotationPresent(PolicyKeys.class)) {
            kind = Kind.POLICY_KEYS;
        } else {
            throw new IllegalStateException(path + ": no configuration kind for " + c.getGenericType());
        }
        return new Key(name, path, c, kind, range, real, choices, notBlank, nullable, section);
    }

    private static ProxyConfig.IntRange intRange(String path, RecordComponent c) {
        Bounds b = c.getAnnotation(Bounds.class);
        return new ProxyConfig.IntRange(path, b.min(), b.max());
    }

    private static Type elementType(RecordComponent c) {
        return c.getGenericType() instanceof ParameterizedType p ? p.getActualTypeArguments()[0] : Object.class;
    }

    private static Map<Class<?>, Section> byType() {
        Map<Class<?>, Section> m = new LinkedHashMap<>();
        m.put(ProxyConfig.class, ROOT);
        for (Key k : ROOT.keys.values()) {
            if (k.section != null) {
                m.put(k.section.type, k.section);
            }
        }
        return Collections.unmodifiableMap(m);
    }
}
