package dev.cart.proxy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;

/** Responses the proxy writes itself: JSON bodies and OpenAI-style errors. */
final class Responses {

    static final ObjectMapper JSON = new ObjectMapper();

    private Responses() {}

    /**
     * An OpenAI-style error: {@code {"error": {"message", "type", "code", "param"}}}. The type is
     * {@code invalid_request_error} for 4xx and {@code server_error} (or {@code upstream_error} for 502/504)
     * otherwise. Messages are written by the proxy and never contain request content.
     */
    static void error(HttpExchange ex, int status, String code, String message) throws IOException {
        error(ex, status, typeFor(status), code, null, message);
    }

    static void error(HttpExchange ex, int status, String type, String code, String param, String message)
            throws IOException {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("message", message);
        err.put("type", type);
        err.put("code", code);
        if (param == null) {
            err.putNull("param");
        } else {
            err.put("param", param);
        }
        json(ex, status, root);
    }

    static String typeFor(int status) {
        if (status == 502 || status == 504) {
            return "upstream_error";
        }
        return status >= 500 ? "server_error" : "invalid_request_error";
    }

    /** A JSON body ending with a newline (so {@code curl} leaves the shell prompt on its own line). */
    static void json(HttpExchange ex, int status, Object body) throws IOException {
        byte[] bytes = (JSON.writeValueAsString(body) + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        bytes(ex, status, bytes);
    }

    static void bytes(HttpExchange ex, int status, byte[] bytes) throws IOException {
        boolean head = "HEAD".equalsIgnoreCase(ex.getRequestMethod());
        if (head || bytes.length == 0) {
            ex.sendResponseHeaders(status, -1);
            return;
        }
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(bytes);
        }
    }
}
