package dev.cart.proxy.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;

/**
 * The proxy's own errors in the shape of the API the client called, so that an official SDK raises its own
 * error: OpenAI's {@code {"error": {"message", "type", "code"}}} on every endpoint but {@code /v1/messages},
 * Anthropic's {@code {"type": "error", "error": {"type", "message"}}} there. Two forms: a whole answer
 * ({@link #answer}) and one server-sent event that ends a stream cut short ({@link #streamEvent}). Messages
 * are the proxy's own words and never contain request content.
 */
public final class ApiErrors {

    /** Anthropic's error type for a failure on the server's side. */
    static final String ANTHROPIC_TYPE = "api_error";

    private ApiErrors() {}

    /**
     * A whole error answer: OpenAI's shape with {@code code} and the type {@link Answer#error} gives the status,
     * or, when {@code anthropic}, Anthropic's with the type {@code api_error} (the SDK maps the status itself).
     */
    public static Answer answer(boolean anthropic, int status, String code, String message) {
        if (!anthropic) {
            return Answer.error(status, code, message);
        }
        return Answer.json(status, anthropicBody(message));
    }

    /**
     * The server-sent event that ends a stream the proxy had to cut: for OpenAI-style endpoints
     * {@code data: {"error":{"message","type":"server_error","code"}}}, for {@code /v1/messages}
     * {@code event: error} with {@code data: {"type":"error","error":{"type":"api_error","message"}}}; each
     * followed by the blank line that dispatches it. No {@code [DONE]} follows: the stream did not end well.
     */
    public static byte[] streamEvent(boolean anthropic, String code, String message) {
        if (anthropic) {
            return ("event: error\ndata: " + anthropicBody(message) + "\n\n").getBytes(StandardCharsets.UTF_8);
        }
        ObjectNode root = Responses.JSON.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("message", message);
        err.put("type", "server_error");
        err.put("code", code);
        return ("data: " + root + "\n\n").getBytes(StandardCharsets.UTF_8);
    }

    private static ObjectNode anthropicBody(String message) {
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("type", "error");
        ObjectNode err = root.putObject("error");
        err.put("type", ANTHROPIC_TYPE);
        err.put("message", message);
        return root;
    }
}
