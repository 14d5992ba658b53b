package dev.cart.proxy;

import dev.cart.proxy.core.ProxyCore;

/** A listening HTTP front ({@code server.engine}): accepts client connections and drives {@link ProxyCore}. */
public interface Front extends AutoCloseable {

    /** The port it listens on. */
    int port();

    /** Starts accepting connections. */
    void start();

    /** What serves requests, for the startup log line. */
    String description();

    /** Stops accepting and cuts the connections off; in-flight exchanges end. */
    @Override
    void close();
}
