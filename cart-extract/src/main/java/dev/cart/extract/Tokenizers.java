package dev.cart.extract;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.EncodingType;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The built-in {@link Tokenizer}s.
 *
 * <p>Design: jtokkit is an optional dependency of cart-extract (only token mode needs it), so this class
 * names jtokkit's types only inside {@link Registry} and {@link Jtokkit}, which the JVM loads on the first
 * call of {@link #jtokkit}; without jtokkit on the classpath that call fails with a clear
 * {@link IllegalStateException}, and character mode never touches it. jtokkit's encodings are loaded once
 * per JVM, on the first request for each name, from one lazy registry (its map is a
 * {@code ConcurrentHashMap} filled with {@code computeIfAbsent}, so two threads asking at once load an
 * encoding once). jtokkit documents {@code Encoding} as thread-safe: an encoding is immutable rank tables
 * and a compiled pattern, and {@code encodeOrdinary} keeps its state on the stack, so one instance serves
 * every thread without locking. The returned tokenizer is also cached, so every caller asking for a name
 * gets the same instance.
 */
public final class Tokenizers {

    /** The encodings {@link #jtokkit(String)} accepts. */
    static final Set<String> JTOKKIT = Set.of("cl100k_base", "o200k_base");

    /** The class whose presence says jtokkit is on the classpath. */
    static final String JTOKKIT_CLASS = "com.knuddels.jtokkit.Encodings";

    private static final Map<String, Tokenizer> LOADED = new ConcurrentHashMap<>();

    private Tokenizers() {}

    /**
     * The jtokkit tokenizer for {@code encoding}: {@code cl100k_base} (GPT-3.5/GPT-4) or {@code o200k_base}
     * (GPT-4o and later). The first call for a name loads its rank table (a few hundred milliseconds);
     * later calls return the same instance. Needs {@code com.knuddels:jtokkit} on the classpath, which
     * cart-extract declares as an optional dependency: add it to a project that uses token mode.
     *
     * @throws IllegalArgumentException for any other name
     * @throws IllegalStateException    when jtokkit is not on the classpath
     * @param encoding a jtokkit encoding's name, e.g. {@code cl100k_base}
     * @return a thread-safe tokenizer
     */
    public static Tokenizer jtokkit(String encoding) {
        Objects.requireNonNull(encoding, "encoding");
        if (!JTOKKIT.contains(encoding)) {
            throw new IllegalArgumentException(
                    "unknown tokenizer encoding \"" + encoding + "\"; expected one of cl100k_base, o200k_base");
        }
        Tokenizer loaded = LOADED.get(encoding);
        if (loaded != null) {
            return loaded;
        }
        requireJtokkit(Tokenizers.class.getClassLoader());
        return LOADED.computeIfAbsent(encoding, Registry::load);
    }

    /** Fails with a message that says what to add when jtokkit's classes cannot be loaded. */
    static void requireJtokkit(ClassLoader loader) {
        try {
            Class.forName(JTOKKIT_CLASS, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalStateException(
                    "token mode needs jtokkit on the classpath: add the dependency"
                            + " com.knuddels:jtokkit (cart-extract declares it optional), or set no tokenizer"
                            + " to use character mode",
                    e);
        }
    }

    /** The registry, created on first use (holder idiom), never if token mode is off. */
    private static final class Registry {
        static final EncodingRegistry INSTANCE = Encodings.newLazyEncodingRegistry();

        static Tokenizer load(String name) {
            EncodingType type = name.equals("o200k_base") ? EncodingType.O200K_BASE : EncodingType.CL100K_BASE;
            return new Jtokkit(INSTANCE.getEncoding(type));
        }
    }

    private static final class Jtokkit implements Tokenizer {
        private final Encoding encoding;

        Jtokkit(Encoding encoding) {
            this.encoding = encoding;
        }

        @Override
        public int[] encode(String text) {
            // encodeOrdinary: "<|endoftext|>" in a prompt is text, not a special token (encode() would throw).
            return encoding.encodeOrdinary(text).toArray();
        }

        @Override
        public String name() {
            return encoding.getName();
        }

        @Override
        public String toString() {
            return "jtokkit:" + encoding.getName();
        }
    }
}
