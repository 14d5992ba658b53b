package dev.cart.proxy.config;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * The default of every key, read once from {@code defaults.yaml} (beside this class): the layer the binder
 * puts under the files, and the sections' {@code defaults()}. Immutable once loaded.
 */
final class Defaults {
    private static final String RESOURCE = "defaults.yaml";

    /** The defaults in the files' shape; {@code workers} holds the defaults of one entry. */
    private static final ObjectNode TREE = read();

    private Defaults() {}

    /** A copy of the defaults in the files' shape. */
    static ObjectNode tree() {
        return TREE.deepCopy();
    }

    /** The defaults of one entry of {@code workers} (its {@code url} null). */
    static ObjectNode workerTree() {
        return (ObjectNode) TREE.get("workers").get(0).deepCopy();
    }

    /** The defaults bound, with no worker (bound on first use: loading a file does not need them). */
    static ProxyConfig config() {
        return Bound.CONFIG;
    }

    private static final class Bound {
        static final ProxyConfig CONFIG =
                ConfigLoader.bind(ProxyConfig.class, ConfigLoader.effective(JsonNodeFactory.instance.objectNode()));
    }

    private static ObjectNode read() {
        try (InputStream in = Defaults.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing beside " + Defaults.class.getName());
            }
            return (ObjectNode) Layers.YAML.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE, e);
        }
    }
}
