package dev.cart.proxy.http;

import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * A message's headers as the core reads them, over the type the front's HTTP library keeps them in, with
 * no copy: Netty's headers ({@code NettyHeaders}), the JDK client's answer headers ({@link #of}), or the core's
 * own {@link HeaderList}. Names are
 * matched in any case. The core reads a client request's headers and a replica answer's headers through
 * this view and hands the end-to-end ones to the front's own sink ({@link HopByHop}), so a header crosses
 * from one side to the other once, not through a map of another library's type on the way.
 */
public interface HeaderView {

    /** The first value of {@code name}, or null when there is none. */
    String first(String name);

    /** Every value of {@code name}, in order; empty when there is none. */
    List<String> all(String name);

    /** Each header line in order: its name as received (or as the library keeps it) and its value. */
    void forEach(BiConsumer<String, String> each);

    /** Each header line's name in order, as {@link #forEach} has it (a view may hand its own type's name). */
    default void forEachName(Consumer<CharSequence> each) {
        forEach((name, value) -> each.accept(name));
    }

    /** Whether {@code name} is present (with any value, empty included). */
    default boolean has(String name) {
        return first(name) != null;
    }

    /** The view of the JDK client's answer headers (its pseudo-headers are never asked for, nor passed on). */
    static HeaderView of(java.net.http.HttpHeaders h) {
        return new HeaderView() {
            @Override
            public String first(String name) {
                return h.firstValue(name).orElse(null);
            }

            @Override
            public List<String> all(String name) {
                return h.allValues(name);
            }

            @Override
            public void forEach(BiConsumer<String, String> each) {
                for (Map.Entry<String, List<String>> e : h.map().entrySet()) {
                    for (String v : e.getValue()) {
                        each.accept(e.getKey(), v);
                    }
                }
            }
        };
    }
}
