package dev.cart.proxy.http;

import java.net.http.HttpRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Header copying between the client side and the replica side. Hop-by-hop headers (RFC 9110 §7.6.1:
 * Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade, and every header the
 * Connection header names) describe one connection, so they are dropped in both directions. Framing
 * headers (Content-Length) are dropped too: each side frames its own body. Host and Expect never go
 * upstream; the HTTP client sets its own.
 */
public final class HopByHop {

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

    /** The names never copied upstream (hop-by-hop or the client's own), in lower case, by length. */
    private static final String[][] REQUEST_DROPPED = byLength(HOP_BY_HOP, REQUEST_OWN);

    /** The names never copied downstream (hop-by-hop or the server's own), in lower case, by length. */
    private static final String[][] RESPONSE_DROPPED = byLength(HOP_BY_HOP, RESPONSE_OWN);

    /** Hands the client's end-to-end headers, as they go upstream, to {@code to} (the front's request). */
    static void forEachRequestHeader(HeaderView from, BiConsumer<String, String> to) {
        Set<String> named = named(from);
        from.forEach((name, value) -> {
            if (!dropped(name, REQUEST_DROPPED, named, null)) {
                to.accept(name, value);
            }
        });
    }

    /**
     * Hands the names of the client's headers that do not go upstream to {@code to}, as they come (a name
     * repeated as its lines are): what {@link #forEachRequestHeader} leaves out, for a front that makes the
     * upstream request's headers from the client's own map by removing these.
     */
    public static void forEachDroppedRequestName(HeaderView from, Consumer<CharSequence> to) {
        Set<String> named = named(from);
        from.forEachName(name -> {
            if (dropped(name, REQUEST_DROPPED, named, null)) {
                to.accept(name);
            }
        });
    }

    /**
     * Hands the replica's end-to-end headers, as they go to the client, to {@code to} (the front's
     * response); {@code except} (lower case, or null) is left out too: a header the proxy sets itself.
     */
    public static void forEachResponseHeader(HeaderView from, String except, BiConsumer<String, String> to) {
        Set<String> named = named(from);
        from.forEach((name, value) -> {
            if (!droppedDownstream(name, named, except)) {
                to.accept(name, value);
            }
        });
    }

    /**
     * Hands the names of the replica's headers that do not go to the client to {@code to}, as they come: what
     * {@link #forEachResponseHeader} leaves out, for a front that relays the replica's own map less these.
     */
    public static void forEachDroppedResponseName(HeaderView from, String except, Consumer<CharSequence> to) {
        Set<String> named = named(from);
        from.forEachName(name -> {
            if (droppedDownstream(name, named, except)) {
                to.accept(name);
            }
        });
    }

    /** The names {@code from}'s Connection header lists; none (no list made) when it has no Connection header. */
    private static Set<String> named(HeaderView from) {
        return from.has("connection") ? connectionTokens(from.all("connection")) : Set.of();
    }

    private static boolean droppedDownstream(CharSequence name, Set<String> named, String except) {
        return (name.length() > 0 && name.charAt(0) == ':') || dropped(name, RESPONSE_DROPPED, named, except);
    }

    /**
     * Whether {@code name}, in lower case, is in {@code listed}, is hop-by-hop or is {@code except}. A header
     * name is a token, ASCII: such a name is compared in place, letter case folded, without the lower-case
     * copy and its hash; any other name goes the long way, through {@link String#toLowerCase}.
     */
    private static boolean dropped(CharSequence name, String[][] listed, Set<String> named, String except) {
        int n = name.length();
        for (int i = 0; i < n; i++) {
            if (name.charAt(i) >= 0x80) {
                String lower = name.toString().toLowerCase(Locale.ROOT);
                return isHopByHop(lower, named) || contains(listed, lower) || lower.equals(except);
            }
        }
        if (n < listed.length) {
            for (String l : listed[n]) {
                if (asciiEqualsLower(name, l)) {
                    return true;
                }
            }
        }
        if (startsWithLower(name, PROXY_PREFIX)) {
            return true;
        }
        if (except != null && asciiEqualsLower(name, except)) {
            return true;
        }
        return !named.isEmpty() && named.contains(name.toString().toLowerCase(Locale.ROOT));
    }

    private static final String PROXY_PREFIX = "proxy-";

    private static boolean contains(String[][] listed, String lower) {
        return lower.length() < listed.length
                && Arrays.asList(listed[lower.length()]).contains(lower);
    }

    /** {@code name} (ASCII) equals {@code lower} (lower-case ASCII) but for letter case. */
    private static boolean asciiEqualsLower(CharSequence name, String lower) {
        return name.length() == lower.length() && startsWithLower(name, lower);
    }

    /** {@code name} (ASCII) starts with {@code lower} (lower-case ASCII) but for letter case. */
    private static boolean startsWithLower(CharSequence name, String lower) {
        int n = lower.length();
        if (name.length() < n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = name.charAt(i);
            if (c >= 'A' && c <= 'Z') {
                c = (char) (c + ('a' - 'A'));
            }
            if (c != lower.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    @SafeVarargs
    private static String[][] byLength(Set<String>... sets) {
        int max = 0;
        for (Set<String> set : sets) {
            for (String name : set) {
                max = Math.max(max, name.length());
            }
        }
        List<List<String>> by = new ArrayList<>();
        for (int i = 0; i <= max; i++) {
            by.add(new ArrayList<>());
        }
        for (Set<String> set : sets) {
            for (String name : set) {
                by.get(name.length()).add(name);
            }
        }
        String[][] out = new String[max + 1][];
        for (int i = 0; i <= max; i++) {
            out[i] = by.get(i).toArray(new String[0]);
        }
        return out;
    }

    /** Copies the client's end-to-end headers onto a JDK client request, leaving out what it refuses. */
    public static void copyTo(HeaderView clientHeaders, HttpRequest.Builder to) {
        forEachRequestHeader(clientHeaders, (name, value) -> {
            try {
                to.header(name, value);
            } catch (IllegalArgumentException refused) {
                // a header the JDK client will not send (restricted or malformed): drop it
            }
        });
    }
}
