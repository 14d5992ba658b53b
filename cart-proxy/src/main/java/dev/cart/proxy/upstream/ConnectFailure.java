package dev.cart.proxy.upstream;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.ClosedChannelException;
import java.util.Locale;

/**
 * Says in plain words why the proxy could not reach a replica, for the 502 a client gets and the warning an
 * operator reads: {@code refused the connection (connection refused)}, {@code timed out connecting},
 * {@code could not resolve host ...}, rather than the exception's class (Netty's
 * {@code AnnotatedConnectException}, the JDK's {@code ConnectException}). The words follow {@code "replica
 * <id> "} ({@link #describe}). Stateless.
 */
public final class ConnectFailure {

    private ConnectFailure() {}

    /**
     * What went wrong, as the predicate of a sentence whose subject is the replica: for instance
     * {@code "refused the connection (connection refused)"}. Looks through the causes for the first one it
     * knows; never names an exception class.
     */
    public static String describe(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String m = t.getMessage() == null ? "" : t.getMessage();
            String lower = m.toLowerCase(Locale.ROOT);
            if (t instanceof UnknownHostException) {
                String host = m.contains(":") ? m.substring(0, m.indexOf(':')) : m;
                return "could not be reached: could not resolve host"
                        + (host.isBlank() ? "" : " '" + host.strip() + "'");
            }
            if (t instanceof HttpConnectTimeoutException
                    || t.getClass().getName().equals("io.netty.channel.ConnectTimeoutException")
                    || (t instanceof ConnectException && lower.contains("timed out"))) {
                return "timed out connecting (nothing answered within proxy.connect_timeout_secs)";
            }
            if (t instanceof NoRouteToHostException || lower.contains("no route to host")) {
                return "could not be reached: no route to host";
            }
            if (lower.contains("connection refused")) {
                return "refused the connection (connection refused)";
            }
            if (lower.contains("network is unreachable")) {
                return "could not be reached: network is unreachable";
            }
            if (lower.contains("connection reset")) {
                return "reset the connection (connection reset by peer)";
            }
            if (t instanceof HttpTimeoutException || t instanceof SocketTimeoutException) {
                return "did not answer in time";
            }
        }
        if (failure instanceof ClosedChannelException) {
            return "closed the connection";
        }
        return "could not be reached (" + plain(failure) + ")";
    }

    /** A throwable's message without the class names some libraries put in it; a generic phrase without one. */
    private static String plain(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = c.getMessage();
            if (m != null && !m.isBlank()) {
                return m.replaceAll("(?:[a-z][a-z0-9_]*\\.)+[A-Z][A-Za-z0-9_$]*(?:Exception|Error): ?", "")
                        .strip();
            }
        }
        return "an I/O error";
    }
}
