package dev.cart.proxy.flow;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.extract.Endpoint;
import dev.cart.flow.FlowResult;
import dev.cart.flow.ShedReason;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.Responses;

/**
 * The answers of the admission queue, in the shape of the API the client called (so an official SDK raises
 * its own error type): a request shed with 429 gets {@code Retry-After} and OpenAI's
 * {@code {"error": {"message", "type": "rate_limit_error", "code": "<reason>", "param": null}}}, or on
 * {@code /v1/messages} Anthropic's {@code {"type": "error", "error": {"type": "rate_limit_error", "message"}}};
 * an unusable flow header is a 400 ({@code invalid_request_error}) in the same two shapes. Messages are the
 * proxy's own: they never repeat a header's value or anything of the request.
 */
public final class FlowAnswers {

    /** The error type of a 429. */
    static final String RATE_LIMIT = "rate_limit_error";

    private FlowAnswers() {}

    /** The 429 (or 503) for a request the queue shed, with {@code Retry-After}. */
    public static Answer shed(Endpoint endpoint, FlowResult r) {
        ShedReason reason = r.shedReason();
        int status = reason.status();
        long retry = Math.max(1, r.retryAfterSeconds());
        if (status != 429) {
            return Answer.error(
                            status,
                            "no_replica_available",
                            "no replica can take the request now (all unhealthy or circuit-open"
                                    + (reason == ShedReason.CLOSED ? ", or the admission queue was closed" : "")
                                    + ")")
                    .with("Retry-After", Long.toString(retry));
        }
        String message = message(reason) + "; retry after " + retry + " s";
        return body(endpoint, status, RATE_LIMIT, reason.code(), message).with("Retry-After", Long.toString(retry));
    }

    /** The 400 for a flow header the request cannot be queued with ({@code message} names the header). */
    public static Answer badHeader(Endpoint endpoint, String message) {
        return body(endpoint, 400, "invalid_request_error", "invalid_header", message);
    }

    private static String message(ShedReason reason) {
        return switch (reason) {
            case QUEUE_FULL -> "the admission queue of this model is full (flow.max_depth)";
            case DEADLINE -> "the expected wait for a replica is longer than the request's deadline";
            case EXPIRED -> "no replica freed a slot within the request's deadline";
            case DISPLACED ->
                "the admission queue is full and the request gave its place to one of a higher priority or of a"
                        + " tenant with fewer requests waiting";
            default -> "the request was not admitted";
        };
    }

    private static Answer body(Endpoint endpoint, int status, String type, String code, String message) {
        if (endpoint != Endpoint.MESSAGES) {
            return Answer.error(status, type, code, null, message);
        }
        ObjectNode root = Responses.JSON.createObjectNode();
        root.put("type", "error");
        ObjectNode err = root.putObject("error");
        err.put("type", type);
        err.put("message", message);
        return Answer.json(status, root);
    }
}
