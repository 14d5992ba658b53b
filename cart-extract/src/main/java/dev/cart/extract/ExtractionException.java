package dev.cart.extract;

import org.jspecify.annotations.Nullable;

/**
 * A request body CART cannot route, with everything an HTTP layer needs for an OpenAI-style error:
 * {@code {"error": {"message", "type", "code", "param"}}}. The message never contains prompt text.
 *
 * <p>Unchecked: a body is the client's input, and the caller that turns the exception into an answer is
 * usually far from the call that parsed the body. {@link PromptExtractor#extract} still declares it, so
 * a caller sees where it comes from; catch it where the HTTP answer is written.
 */
public final class ExtractionException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * The HTTP status to answer with.
     */
    private final int status;
    /**
     * The OpenAI error type.
     */
    private final String type;
    /**
     * The machine-readable code.
     */
    private final String code;
    /**
     * The JSON path of the offending part, or null.
     */
    private final @Nullable String param;

    /**
     * @param status  HTTP status to answer with (400 for malformed input; the configured status for a
     *                rejected remote media URL)
     * @param code    machine-readable code, e.g. {@code invalid_json}, {@code invalid_type},
     *                {@code missing_field}, {@code nesting_too_deep}, {@code remote_media_rejected}
     * @param param   JSON path of the offending part, e.g. {@code messages[2].content[0].image_url.url},
     *                or null
     * @param message human-readable explanation naming the field, never its value
     */
    public ExtractionException(int status, String code, @Nullable String param, String message) {
        super(message, null, false, false);
        this.status = status;
        this.type = status >= 500 ? "server_error" : "invalid_request_error";
        this.code = code;
        this.param = param;
    }

    /**
     * The HTTP status to answer with: 400 for a malformed body, or the configured status of a media policy.
     *
     * @return a 4xx status (400 for a malformed body)
     */
    public int status() {
        return status;
    }

    /**
     * OpenAI error type: {@code invalid_request_error} for 4xx.
     *
     * @return {@code invalid_request_error} for a 4xx, {@code server_error} for a 5xx
     */
    public String type() {
        return type;
    }

    /**
     * The machine-readable code, e.g. {@code invalid_json} (the README's table lists them all).
     *
     * @return the code, lower-case words joined by {@code _}
     */
    public String code() {
        return code;
    }

    /**
     * JSON path of the offending part, or null.
     *
     * @return the path, or null when the error is about the body as a whole
     */
    public @Nullable String param() {
        return param;
    }
}
