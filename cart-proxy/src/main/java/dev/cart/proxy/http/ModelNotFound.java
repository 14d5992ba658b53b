package dev.cart.proxy.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.extract.Endpoint;

/**
 * The 404 a client gets when no replica of the pool serves the model its request names (the router's
 * {@code model_not_served}): in the shape of the API it called, so an official SDK raises its own
 * "not found" error. OpenAI endpoints get {@code {"error": {"type": "invalid_request_error", "code":
 * "model_not_found", "param": "model", "message"}}}; {@code /v1/messages} gets Anthropic's
 * {@code {"type": "error", "error": {"type": "not_found_error", "message"}}}. The message names the
 * model (at most {@link #MAX_NAME_CHARS} characters of it, JSON-escaped); a model that some replica serves
 * but that none can take now is a 503, not this.
 */
public final class ModelNotFound {

    public static final int STATUS = 404;
    public static final String CODE = "model_not_found";
    static final String ANTHROPIC_TYPE = "not_found_error";
    static final int MAX_NAME_CHARS = 200;

    private ModelNotFound() {}

    /** The error body for a request to {@code endpoint} naming {@code model}. */
    public static ObjectNode body(Endpoint endpoint, String model) {
        String name = model.length() > MAX_NAME_CHARS ? model.substring(0, MAX_NAME_CHARS) + "..." : model;
        String message = "The model '" + name + "' does not exist: no replica of this pool serves it";
        ObjectNode root = Responses.JSON.createObjectNode();
        if (endpoint == Endpoint.MESSAGES) {
            root.put("type", "error");
            ObjectNode err = root.putObject("error");
            err.put("type", ANTHROPIC_TYPE);
            err.put("message", message);
            return root;
        }
        ObjectNode err = root.putObject("error");
        err.put("message", message);
        err.put("type", "invalid_request_error");
        err.put("param", "model");
        err.put("code", CODE);
        return root;
    }
}
