package dev.cart.proxy;

import com.sun.net.httpserver.Headers;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * Header copying between the client side and the replica side. Hop-by-hop headers (RFC 9110 §7.6.1:
 * Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade, and every header the
 * Connection header names) describe one connection, so they are dropped in both directions. Framing
 * headers (Content-Length) are dropped too: each side frames its own body. Host and Expect never go
 * upstream; the HTTP client sets its own.
 */
final class HopByHop {

    static final Set<String> HOP_BY_HOP = Set.of(
            "connection",
            "keep-alive",
            "proxy-authenticate",
            "proxy-authorization",
            "proxy-connection",
            "te",
            "trailer",
            "trailers",
            "transfer-encoding",
            "upgrade");

    /** Never copied upstream: set by the HTTP client itself, or refused by it. */
    private static final Set<String> REQUEST_OWN = Set.of("host", "content-length", "expect", "http2-settings");

    /** Never copied downstream: the proxy's HTTP server frames and dates the response itself. */
    private static final Set<String> RESPONSE_OWN = Set.of("content-length", "date");

    private HopByHop() {}

    /** Lower-cased names listed in Connection header values ({@code Connection: close, X-Foo}). */
    static Set<String> connectionTokens(List<String> connectionValues) {
        if (connectionValues == null || connectionValues.isEmpty()) {
            return Set.of();
        }
        Set<String> out = new HashSet<>();
        for (String v : connectionValues) {
            for (String token : v.split(",")) {
                String t = token.trim().toLowerCase(Locale.ROOT);
                if (!t.isEmpty()) {
                    out.add(t);
                }
            }
        }
        return out;
    }

    static boolean isHopByHop(String lowerName, Set<String> connectionTokens) {
        return HOP_BY_HOP.contains(lowerName) || lowerName.startsWith("proxy-") || connectionTokens.contains(lowerName);
    }

    /** The client's end-to-end headers, as they go upstream (each front's client adds Host and framing). */
    static Headers requestHeaders(Headers from) {
        Headers to = new Headers();
        Set<String> named = connectionTokens(getIgnoreCase(from, "connection"));
        for (Map.Entry<String, List<String>> e : from.entrySet()) {
            String lower = e.getKey().toLowerCase(Locale.ROOT);
            if (isHopByHop(lower, named) || REQUEST_OWN.contains(lower)) {
                continue;
            }
            to.put(e.getKey(), List.copyOf(e.getValue()));
        }
        return to;
    }

    /** Hands the client's end-to-end headers, as they go upstream, to {@code to} (the front's request). */
    static void forEachRequestHeader(HeaderView from, BiConsumer<String, String> to) {
        Set<String> named = connectionTokens(from.all("connection"));
        from.forEach((name, value) -> {
            String lower = name.toLowerCase(Locale.ROOT);
            if (!isHopByHop(lower, named) && !REQUEST_OWN.contains(lower)) {
                to.accept(name, value);
            }
        });
    }

    /**
     * Hands the replica's end-to-end headers, as they go to the client, to {@code to} (the front's
     * response); {@code except} (lower case, or null) is left out too: a header the proxy sets itself.
     */
    static void forEachResponseHeader(HeaderView from, String except, BiConsumer<String, String> to) {
        Set<String> named = connectionTokens(from.all("connection"));
        from.forEach((name, value) -> {
            String lower = name.toLowerCase(Locale.ROOT);
            if (!lower.startsWith(":")
                    && !isHopByHop(lower, named)
                    && !RESPONSE_OWN.contains(lower)
                    && !lower.equals(except)) {
                to.accept(name, value);
            }
        });
    }

    /** Copies the client's end-to-end headers onto a JDK client request, leaving out what it refuses. */
    static void copyTo(HeaderView clientHeaders, HttpRequest.Builder to) {
        forEachRequestHeader(clientHeaders, (name, value) -> {
            try {
                to.header(name, value);
            } catch (IllegalArgumentException refused) {
                // a header the JDK client will not send (restricted or malformed): drop it
            }
        });
    }

    /** Copies already filtered headers ({@link #requestHeaders}) onto a JDK client request. */
    static void copyTo(Headers filtered, HttpRequest.Builder to) {
        for (Map.Entry<String, List<String>> e : filtered.entrySet()) {
            for (String value : e.getValue()) {
                try {
                    to.header(e.getKey(), value);
                } catch (IllegalArgumentException refused) {
                    // a header the JDK client will not send (restricted or malformed): drop it
                }
            }
        }
    }

    /** The JDK client's answer headers as a {@link Headers} multimap (pseudo-headers left out). */
    static Headers of(HttpHeaders from) {
        Headers to = new Headers();
        for (Map.Entry<String, List<String>> e : from.map().entrySet()) {
            if (!e.getKey().startsWith(":")) {
                to.put(e.getKey(), List.copyOf(e.getValue()));
            }
        }
        return to;
    }

    /** Copies the replica's end-to-end headers onto the client response. */
    static void copyResponseHeaders(Headers from, Headers to) {
        Set<String> named = connectionTokens(getIgnoreCase(from, "connection"));
        for (Map.Entry<String, List<String>> e : from.entrySet()) {
            String lower = e.getKey().toLowerCase(Locale.ROOT);
            if (lower.startsWith(":") || isHopByHop(lower, named) || RESPONSE_OWN.contains(lower)) {
                continue;
            }
            for (String value : e.getValue()) {
                to.add(e.getKey(), value);
            }
        }
    }

    private static List<String> getIgnoreCase(Headers h, String name) {
        for (Map.Entry<String, List<String>> e : h.entrySet()) {
            if (e.getKey().equalsIgnoreCase(name)) {
                return e.getValue();
            }
        }
        return null;
    }
}
