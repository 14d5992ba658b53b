package dev.cart.proxy;

import com.fasterxml.jackson.databind.ObjectMapper;

/** Shared pieces of the answers the proxy writes itself ({@link Answer}). */
final class Responses {

    static final ObjectMapper JSON = new ObjectMapper();

    private Responses() {}

    /** The OpenAI error type for a status the proxy answers with. */
    static String typeFor(int status) {
        if (status == 502 || status == 504) {
            return "upstream_error";
        }
        return status >= 500 ? "server_error" : "invalid_request_error";
    }
}
