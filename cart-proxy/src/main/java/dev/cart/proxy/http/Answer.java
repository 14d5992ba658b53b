package dev.cart.proxy.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;

/**
 * An answer the proxy writes itself, whole (an error, {@code /health}, {@code /workers}, {@code /metrics}, a
 * cached {@code /v1/models}), in a form the front does not own: status, end-to-end headers and body. The front
 * writes it with its own HTTP machinery (the Netty front); a {@code HEAD} request gets
 * the head only. {@code closeConnection} asks the front to close the client connection afterwards (the
 * request's framing could not be trusted). The headers are the core's own {@link HeaderList}, not the type of
 * any front's library; an answer is not changed once built ({@link #with} makes a new one).
 */
public record Answer(int status, HeaderList headers, byte[] body, boolean closeConnection) {

    public static Answer of(int status, String contentType, byte[] body) {
        HeaderList h = new HeaderList();
        if (contentType != null) {
            h.set("Content-Type", contentType);
        }
        return new Answer(status, h, body, false);
    }

    /** A JSON body ending with a newline (so {@code curl} leaves the shell prompt on its own line). */
    public static Answer json(int status, Object body) {
        try {
            byte[] bytes = (Responses.JSON.writeValueAsString(body) + "\n").getBytes(StandardCharsets.UTF_8);
            return of(status, "application/json", bytes);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree the proxy built does not serialise", e);
        }
    }

    /**
     * An OpenAI-style error: {@code {"error": {"message", "type", "code", "param"}}}. The type is
     * {@code invalid_request_error} for 4xx and {@code server_error} (or {@code upstream_error} for 502/504)
     * otherwise. Messages are written by the proxy and never contain request content.
     */
    public static Answer error(int status, String code, String message) {
        return error(status, Responses.typeFor(status), code, null, message);
    }

    public static Answer error(int status, String type, String code, String param, String message) {
        ObjectNode root = Responses.JSON.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("message", message);
        err.put("type", type);
        err.put("code", code);
        if (param == null) {
            err.putNull("param");
        } else {
            err.put("param", param);
        }
        return json(status, root);
    }

    /** This answer with {@code name: value} set. */
    public Answer with(String name, String value) {
        HeaderList h = HeaderList.copyOf(headers);
        h.set(name, value);
        return new Answer(status, h, body, closeConnection);
    }

    /** This answer, after which the client connection is closed. */
    public Answer closing() {
        return new Answer(status, headers, body, true).with("Connection", "close");
    }
}
