package dev.cart.proxy.config;

import java.util.List;

/** A configuration that cannot be used, with every problem found (each naming its key or file). */
public final class ConfigException extends Exception {

    private static final long serialVersionUID = 1L;

    private final List<String> problems;

    ConfigException(List<String> problems) {
        super(
                problems.size() == 1
                        ? problems.get(0)
                        : problems.size() + " configuration problems:\n  " + String.join("\n  ", problems));
        this.problems = List.copyOf(problems);
    }

    public List<String> problems() {
        return problems;
    }
}
