package dev.cart.proxy.http;

import com.fasterxml.jackson.databind.ObjectMapper;

/** Shared pieces of the answers the proxy writes itself ({@link Answer}). */
public final class Responses {

    public static final ObjectMapper JSON = new ObjectMapper();

    private Responses() {}

    /** The OpenAI error type for a status the proxy answers with. */
    public static String typeFor(int status) {
        if (status == 502 || status == 504) {
            return "upstream_error";
        }
        return status >= 500 ? "server_error" : "invalid_request_error";
    }
}
