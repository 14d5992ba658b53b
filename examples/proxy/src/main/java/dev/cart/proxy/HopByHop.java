package dev.cart.proxy;

import java.net.http.HttpRequest;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
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
}
