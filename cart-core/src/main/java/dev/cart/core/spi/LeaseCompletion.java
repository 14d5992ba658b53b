package dev.cart.core.spi;

import dev.cart.core.Lease;
import dev.cart.core.Outcome;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;

/**
 * How one lease ended, as reported to {@link RoutingListener#onLeaseCompleted}.
 *
 * @param decision      the decision the lease belongs to (replica, reason, match)
 * @param outcome       the outcome recorded before the close ({@link Outcome#CANCELLED} if none was)
 * @param status        the status the replica answered with, as recorded by {@link Lease#status(int)}
 *                      (for the proxy, the HTTP status); 0 when none was recorded, for example when the
 *                      connection failed before an answer
 * @param durationNanos time from the decision to the close, on the router's {@link Router.Builder#ticker ticker}
 * @param retries       attempts that came before this one for the same request
 *                      ({@link RouteRequest#attempt()}); 0 for a first attempt
 */
public record LeaseCompletion(RouteDecision decision, Outcome outcome, int status, long durationNanos, int retries) {}
