package dev.cart.proxy.http;

/**
 * A client request's head as a front parsed it: method, the raw path and query of the request target,
 * the percent-decoded path ({@code decodedPath}, null when the target does not decode), the headers (a
 * {@link HeaderView} over the front's own type) and the length of the request line.
 */
public record RequestHead(
        String method, String rawPath, String rawQuery, String decodedPath, HeaderView headers, int requestLineLength) {

    /** The raw path, or {@code "/"} when the target has none. */
    public String rawPathOrRoot() {
        return rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
    }
}
