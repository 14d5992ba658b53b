package dev.cart.proxy.jdk;

import dev.cart.proxy.Main;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ProxyCore;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands the connection-level limits of {@code server.*} to the JDK HTTP server, which reads them only from
 * system properties, once per process, when its first server is created (present on Java 17.0.15+ and 25,
 * checked): {@code jdk.httpserver.maxConnections}, {@code sun.net.httpserver.maxReqHeaderSize},
 * {@code sun.net.httpserver.maxReqHeaders} (distinct header names), {@code sun.net.httpserver.maxReqTime}
 * (seconds to read a request's head and body, which is what stops a client trickling bytes) and
 * {@code sun.net.httpserver.idleInterval} (seconds a kept-alive or newly accepted connection may stay
 * silent), and {@code sun.net.httpserver.maxRspTime} (seconds a response may take once the request has
 * been read): {@code proxy.request_timeout_secs} plus {@link #RESPONSE_GRACE_SECS}; and always
 * {@code sun.net.httpserver.nodelay} (TCP_NODELAY, see {@link #properties}). The forwarder ends the
 * upstream side of an exchange at the request timeout itself; the JDK's response limit is what ends the
 * client side when the client has stopped reading and the handler is blocked writing to it (nothing else
 * can interrupt that write). The values from the configuration override any {@code -D} given for the
 * same properties.
 *
 * <p>Because the JDK reads them once, {@link #apply} must run before anything in the process creates an
 * {@code HttpServer} ({@link Main} calls it first, before demo replicas start). A later call with other
 * values cannot change what the JDK already read: it logs a warning (only tests and embedders start several
 * proxies in one process). The limits the JDK does not offer (header count across repeated names, request
 * line length, concurrent requests) are enforced by {@link ProxyCore}.
 */
public final class ServerLimits {

    private static final Logger LOG = LoggerFactory.getLogger(ServerLimits.class);

    /** Seconds the JDK server adds to {@code proxy.request_timeout_secs} before it drops a response. */
    static final int RESPONSE_GRACE_SECS = 2;

    private static Map<String, String> applied;

    private ServerLimits() {}

    /** The JDK system properties for {@code config}. */
    static Map<String, String> properties(ProxyConfig config) {
        ProxyConfig.Server s = config.server();
        Map<String, String> p = new LinkedHashMap<>();
        p.put("jdk.httpserver.maxConnections", Integer.toString(s.maxConnections()));
        p.put("sun.net.httpserver.maxReqHeaderSize", Integer.toString(s.maxHeaderBytes()));
        p.put("sun.net.httpserver.maxReqHeaders", Integer.toString(s.maxHeaders()));
        p.put("sun.net.httpserver.maxReqTime", Integer.toString(s.requestReadTimeoutSecs()));
        p.put("sun.net.httpserver.idleInterval", Integer.toString(s.idleTimeoutSecs()));
        p.put(
                "sun.net.httpserver.maxRspTime",
                Long.toString((long) config.proxy().requestTimeoutSecs() + RESPONSE_GRACE_SECS));
        // TCP_NODELAY on client connections, as nginx's tcp_nodelay does by default. The JDK server writes
        // an answer's head and body as separate small segments; with Nagle's algorithm on, the body waits
        // for the client's delayed ACK of the head, about 40 ms on Linux, on every kept-alive exchange.
        p.put("sun.net.httpserver.nodelay", "true");
        return p;
    }

    /** Sets the properties for {@code config}; see the class comment for when this has an effect. */
    public static synchronized void apply(ProxyConfig config) {
        Map<String, String> p = properties(config);
        if (applied != null) {
            if (!applied.equals(p)) {
                LOG.warn("the JDK HTTP server reads its limits once per process; keeping {} (wanted {})", applied, p);
            }
            return;
        }
        p.forEach(System::setProperty);
        applied = p;
    }
}
