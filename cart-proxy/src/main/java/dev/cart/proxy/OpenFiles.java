package dev.cart.proxy;

import dev.cart.proxy.config.ProxyConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The process's open-file limit against what the configured limits can use: every client connection
 * ({@code server.max_connections}) and, for each proxied request in progress
 * ({@code server.max_concurrent_requests}), an upstream connection, plus {@link #OTHER_FILES} for the JVM's own
 * files. The launcher logs {@link #warning} at startup.
 */
final class OpenFiles {

    /** Files a running proxy holds besides its connections: jars, logs, the JVM's own. */
    static final long OTHER_FILES = 256;

    private OpenFiles() {}

    /** Open files the configured limits can use at once: client connections, upstream ones, the JVM's. */
    static long needed(ProxyConfig.Server server) {
        return (long) server.maxConnections() + server.maxConcurrentRequests() + OTHER_FILES;
    }

    /** The warning to log at an open-file limit of {@code limit}, or empty when it covers what the limits use. */
    static Optional<String> warning(long limit, ProxyConfig.Server server) {
        long needed = needed(server);
        if (limit >= needed) {
            return Optional.empty();
        }
        return Optional.of("the open-file limit is " + limit + " (ulimit -n), below the " + needed
                + " that server.max_connections (" + server.maxConnections() + ") plus server.max_concurrent_requests ("
                + server.maxConcurrentRequests() + ") upstream connections can use; raise it (ulimit -n " + needed
                + ") or lower those limits");
    }

    /** The soft open-file limit of this process, best effort (Linux {@code /proc/self/limits}). */
    static OptionalLong limit() {
        return limit(Path.of("/proc/self/limits"));
    }

    /** The soft open-file limit read from {@code limits} (a {@code /proc/<pid>/limits} file); empty if unknown. */
    static OptionalLong limit(Path limits) {
        try {
            List<String> lines = Files.readAllLines(limits);
            for (String line : lines) {
                if (line.startsWith("Max open files")) {
                    String[] parts =
                            line.substring("Max open files".length()).trim().split("\\s+");
                    if (parts.length > 0) {
                        if (parts[0].equals("unlimited")) {
                            return OptionalLong.of(Long.MAX_VALUE);
                        }
                        return OptionalLong.of(Long.parseLong(parts[0]));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or unreadable: no warning rather than a wrong one
        }
        return OptionalLong.empty();
    }
}
