package dev.cart.proxy.http;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * The core's own headers, for what the proxy writes or keeps itself (its answers, the {@code /v1/models} union and
 * cache): header lines in order, names compared without letter case, as HTTP compares them. No front's type: each
 * front writes these lines with its own HTTP library. Small by design (a handful of lines), so lookups walk the
 * list.
 *
 * <p>Not thread-safe while it is changed; a list that is no longer changed may be read by any thread (the proxy
 * shares only lists it has finished building).
 */
public final class HeaderList implements HeaderView {

    private final List<String> names = new ArrayList<>(4);
    private final List<String> values = new ArrayList<>(4);

    /** An empty list. */
    public HeaderList() {}

    /** A copy of {@code from}'s lines, in order. */
    public static HeaderList copyOf(HeaderView from) {
        HeaderList out = new HeaderList();
        from.forEach(out::add);
        return out;
    }

    /** Adds a line {@code name: value} after the others; returns this list. */
    public HeaderList add(String name, String value) {
        names.add(name);
        values.add(value);
        return this;
    }

    /** Replaces every line of {@code name} with one {@code name: value} (at the place of the first); returns this. */
    public HeaderList set(String name, String value) {
        int first = -1;
        for (int i = names.size() - 1; i >= 0; i--) {
            if (names.get(i).equalsIgnoreCase(name)) {
                if (first >= 0) {
                    names.remove(first);
                    values.remove(first);
                }
                first = i;
            }
        }
        if (first >= 0) {
            names.set(first, name);
            values.set(first, value);
        } else {
            add(name, value);
        }
        return this;
    }

    @Override
    public String first(String name) {
        for (int i = 0; i < names.size(); i++) {
            if (names.get(i).equalsIgnoreCase(name)) {
                return values.get(i);
            }
        }
        return null;
    }

    @Override
    public List<String> all(String name) {
        List<String> out = new ArrayList<>(1);
        for (int i = 0; i < names.size(); i++) {
            if (names.get(i).equalsIgnoreCase(name)) {
                out.add(values.get(i));
            }
        }
        return out;
    }

    @Override
    public void forEach(BiConsumer<String, String> each) {
        for (int i = 0; i < names.size(); i++) {
            each.accept(names.get(i), values.get(i));
        }
    }

    /** The number of lines. */
    public int size() {
        return names.size();
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < names.size(); i++) {
            b.append(i == 0 ? "" : ", ").append(names.get(i)).append(": ").append(values.get(i));
        }
        return b.append(']').toString();
    }
}
