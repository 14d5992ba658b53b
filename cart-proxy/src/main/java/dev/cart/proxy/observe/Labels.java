package dev.cart.proxy.observe;

import dev.cart.core.Outcome;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * The fixed label values of the proxy's metrics and the histograms' buckets, each set an array so that the
 * request path finds a value by index (an ordinal, a status class, an endpoint matched by length): no label is
 * built or looked up by name per request. Stateless.
 */
final class Labels {

    static final String NONE = "none";
    static final String OTHER = "other";

    /** The reason word of a pass-through request's decision (logs and metrics). */
    static final String PASS_THROUGH = "pass_through";

    /** The endpoint labels by index ({@link #endpointIndex}): the known endpoints, then {@link #OTHER}. */
    static final String[] ENDPOINTS = {
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/messages",
        "/v1/models",
        "/health",
        "/workers",
        "/metrics",
        OTHER
    };

    /** The status labels by index ({@link #statusIndex}): the classes 1xx to 5xx, then none and other. */
    static final String[] STATUSES = {"1xx", "2xx", "3xx", "4xx", "5xx", NONE, OTHER};

    /** Decision reasons by index: {@link Reason}'s codes by ordinal, then {@link #PASS_THROUGH}. */
    static final int PASS_THROUGH_INDEX = Reason.values().length;

    static final int REASONS = PASS_THROUGH_INDEX + 1;

    /** {@link Outcome}'s labels by ordinal (its name in lower case), made once rather than per request. */
    static final String[] OUTCOMES = Arrays.stream(Outcome.values())
            .map(o -> o.name().toLowerCase(Locale.ROOT))
            .toArray(String[]::new);

    static final Duration[] LATENCY_BUCKETS = {
        Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
        Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
        Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
        Duration.ofSeconds(60), Duration.ofSeconds(120), Duration.ofSeconds(300), Duration.ofSeconds(600)
    };
    static final Duration[] DECISION_BUCKETS = {
        Duration.ofNanos(1_000), Duration.ofNanos(2_500), Duration.ofNanos(5_000), Duration.ofNanos(10_000),
        Duration.ofNanos(25_000), Duration.ofNanos(50_000), Duration.ofNanos(100_000), Duration.ofNanos(250_000),
        Duration.ofNanos(500_000), Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(25)
    };
    static final double[] RATIO_BUCKETS = {0.001, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};

    private Labels() {}

    /** The index of a path's endpoint label in {@link #ENDPOINTS}: the path's own, else {@link #OTHER}'s. */
    static int endpointIndex(String path) {
        // by length, then one or two comparisons: a path is a new string per request, and a switch on it would
        // hash all of it first
        int i = path == null
                ? -1
                : switch (path.length()) {
                    case 20 -> 0;
                    case 15 -> 1;
                    case 12 -> 2;
                    case 10 -> 3;
                    case 7 -> 4;
                    case 8 -> path.equals(ENDPOINTS[5]) ? 5 : 6;
                    default -> -1;
                };
        return i >= 0 && path.equals(ENDPOINTS[i]) ? i : ENDPOINTS.length - 1;
    }

    /** The index of a status's class in {@link #STATUSES}: "none" for 0 or -1 (nothing answered). */
    static int statusIndex(int status) {
        if (status >= 100 && status <= 599) {
            return status / 100 - 1;
        }
        return status <= 0 ? STATUSES.length - 2 : STATUSES.length - 1;
    }

    /** The reason index of a decision: {@link #PASS_THROUGH_INDEX} for a routed request not routed by prompt. */
    static int reasonIndex(RouteDecision d, boolean passThrough) {
        return passThrough && d.routed() ? PASS_THROUGH_INDEX : d.reason().ordinal();
    }

    static String reasonLabel(int index) {
        return index == PASS_THROUGH_INDEX ? PASS_THROUGH : Reason.values()[index].code();
    }
}
