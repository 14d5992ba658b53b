package dev.cart.proxy;

import com.sun.net.httpserver.Headers;

/**
 * A client request's head as a front parsed it: method, the raw path and query of the request target,
 * the percent-decoded path ({@code decodedPath}, null when the target does not decode), the headers (the
 * JDK's case-insensitive {@link Headers} as a plain multimap) and the length of the request line.
 */
record RequestHead(
        String method, String rawPath, String rawQuery, String decodedPath, Headers headers, int requestLineLength) {

    /** The raw path, or {@code "/"} when the target has none. */
    String rawPathOrRoot() {
        return rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
    }
}
