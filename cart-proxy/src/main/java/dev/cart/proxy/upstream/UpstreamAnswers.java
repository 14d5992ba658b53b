package dev.cart.proxy.upstream;

import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.extract.Endpoint;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.ModelNotFound;
import dev.cart.proxy.observe.DecisionLog;

/**
 * The proxy's own answer for each way an {@link Forwarder.Exchange} ends without a replica's answer to relay: no
 * replica for the request (its model not served, none able to take it, every one tried failed), the request's
 * deadline, a send that failed for good. Each answer is in the API's error shape with the status and code the
 * specification gives it, and is recorded in the request's decision line with its result.
 *
 * <p>How: one static method per outcome, so the exchange's rules (when to retry, what failed) and the answers the
 * client sees are read apart. Messages name replicas and failures, never request content.
 *
 * <p>Concurrency: stateless; the decision log passed in is the caller's (one thread at a time).
 */
final class UpstreamAnswers {

    private UpstreamAnswers() {}

    /** An answer of the proxy's own, recorded in {@code log} with {@code result}. */
    static Forwarder.Reply reply(DecisionLog log, int status, String result, String code, String message) {
        return new Forwarder.Reply(Answer.error(status, code, message)).logged(log, result);
    }

    /**
     * The router found no replica for attempt {@code attempt} (0-based) of a request to {@code endpoint}: its
     * model is served by none (404), no replica can take it now (503, first attempt), or every replica it could
     * go to failed ({@code lastFailure} the last error: 502).
     */
    static Forwarder.Reply notRouted(
            RouteDecision d, Endpoint endpoint, int attempt, String lastFailure, DecisionLog log) {
        if (d.reason() == Reason.MODEL_NOT_SERVED) {
            return new Forwarder.Reply(Answer.json(ModelNotFound.STATUS, ModelNotFound.body(endpoint, d.model())))
                    .logged(log, ModelNotFound.CODE);
        }
        if (attempt == 0) {
            return new Forwarder.Reply(Answer.error(
                                    503,
                                    "no_replica_available",
                                    "no replica can take the request now (all unhealthy, circuit-open or at max_load)")
                            .with("Retry-After", "1"))
                    .logged(log, "no_replica");
        }
        return reply(
                log,
                502,
                "upstream_failed",
                "upstream_failed",
                "the request failed on " + attempt + " replica(s) and no other replica is available; last error: "
                        + lastFailure);
    }

    /**
     * The request's {@code proxy.request_timeout_secs} ended: before a replica was sent it ({@code sent} false)
     * or with no answer head from the replica it was sent to.
     */
    static Forwarder.Reply timeout(DecisionLog log, boolean sent) {
        return reply(
                log,
                504,
                "timeout",
                "upstream_timeout",
                sent
                        ? "the replica did not answer within proxy.request_timeout_secs"
                        : "proxy.request_timeout_secs passed before a replica answered");
    }

    /** A send that failed ({@code kind}, not a timeout) with no retry left: the 502 that says how. */
    static Forwarder.Reply failed(Forwarder.Failure kind, String lastFailure, DecisionLog log) {
        return switch (kind) {
            case CONNECT ->
                reply(log, 502, "connect_failed", "upstream_unreachable", "could not connect: " + lastFailure);
            case INVALID ->
                reply(
                        log,
                        502,
                        "upstream_error",
                        "upstream_invalid_answer",
                        "the replica's answer was not valid HTTP: " + lastFailure);
            default ->
                reply(
                        log,
                        502,
                        "upstream_error",
                        "upstream_connection_error",
                        "the connection to the replica failed: " + lastFailure);
        };
    }
}
