package dev.cart.extract;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.EncodingType;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The built-in {@link Tokenizer}s.
 *
 * <p>Design: jtokkit's encodings are loaded once per JVM, on the first request for each name, from one
 * lazy registry (its map is a {@code ConcurrentHashMap} filled with {@code computeIfAbsent}, so two
 * threads asking at once load an encoding once). jtokkit documents {@code Encoding} as thread-safe: an
 * encoding is immutable rank tables and a compiled pattern, and {@code encodeOrdinary} keeps its state
 * on the stack, so one instance serves every thread without locking. The returned tokenizer is also
 * cached, so every caller asking for a name gets the same instance.
 */
public final class Tokenizers {

    /** The encodings {@link #jtokkit(String)} accepts. */
    static final Map<String, EncodingType> JTOKKIT = Map.of(
            "cl100k_base", EncodingType.CL100K_BASE,
            "o200k_base", EncodingType.O200K_BASE);

    private static final Map<String, Tokenizer> LOADED = new ConcurrentHashMap<>();

    private Tokenizers() {
    }

    /**
     * The jtokkit tokenizer for {@code encoding}: {@code cl100k_base} (GPT-3.5/GPT-4) or {@code o200k_base}
     * (GPT-4o and later). The first call for a name loads its rank table (a few hundred milliseconds);
     * later calls return the same instance.
     *
     * @throws IllegalArgumentException for any other name
     */
    public static Tokenizer jtokkit(String encoding) {
        Objects.requireNonNull(encoding, "encoding");
        EncodingType type = JTOKKIT.get(encoding);
        if (type == null) {
            throw new IllegalArgumentException("unknown tokenizer encoding \"" + encoding
                    + "\"; expected one of cl100k_base, o200k_base");
        }
        return LOADED.computeIfAbsent(encoding, n -> new Jtokkit(Registry.INSTANCE.getEncoding(type)));
    }

    /** The registry, created on first use (holder idiom), never if token mode is off. */
    private static final class Registry {
        static final EncodingRegistry INSTANCE = Encodings.newLazyEncodingRegistry();
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
