package dev.cart.core.internal;

import dev.cart.core.Router;
import org.jspecify.annotations.Nullable;

/**
 * Lets the library's own benchmarks build a {@link Router} over a tree they filled beforehand, without
 * making that a builder method of the public API. {@code Router} installs the implementation from its
 * static initialiser (see {@link KeyAccess} for the pattern and its concurrency).
 */
public final class RouterAccess {

    /** What {@link Router} lets its siblings do. */
    public interface Secrets {
        /**
         * Makes {@code builder} use {@code tree} instead of building one from its settings.
         *
         * @param builder a router builder
         * @param tree a tree built elsewhere
         * @return {@code builder}
         */
        Router.Builder tree(Router.Builder builder, PrefixTree tree);
    }

    private static @Nullable Secrets secrets;

    private RouterAccess() {}

    /**
     * Installs the implementation; called once, by {@code Router}.
     *
     * @param s the implementation
     * @throws IllegalStateException when one is installed already
     */
    public static synchronized void install(Secrets s) {
        if (secrets != null) {
            throw new IllegalStateException("already installed");
        }
        secrets = s;
    }

    /**
     * Makes {@code builder} use {@code tree} instead of building one from its settings.
     *
     * @param builder a router builder
     * @param tree a tree built elsewhere
     * @return {@code builder}
     */
    public static Router.Builder tree(Router.Builder builder, PrefixTree tree) {
        Secrets s;
        synchronized (RouterAccess.class) {
            s = secrets;
        }
        if (s == null) {
            Router.builder(); // initialises Router, which installs it
            synchronized (RouterAccess.class) {
                s = secrets;
            }
            if (s == null) {
                throw new IllegalStateException("Router did not install its access");
            }
        }
        return s.tree(builder, tree);
    }
}
