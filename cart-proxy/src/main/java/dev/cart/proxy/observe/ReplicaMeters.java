package dev.cart.proxy.observe;

import static dev.cart.proxy.observe.Labels.ENDPOINTS;
import static dev.cart.proxy.observe.Labels.LATENCY_BUCKETS;
import static dev.cart.proxy.observe.Labels.OUTCOMES;
import static dev.cart.proxy.observe.Labels.STATUSES;

import dev.cart.core.CacheFeedback;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The request path's meters of one replica label (a replica id, or {@code none}), kept in slots indexed by
 * endpoint, status class, reason and outcome, so that an event finds its meter by an array read: each slot is
 * filled on its meter's first event through {@link Meters} (so a meter is the registry's one for its name and
 * tags) and read from then on.
 *
 * <p>Concurrency: thread-safe. Two threads may fill a slot at once: both get the same meter from {@link Meters},
 * and the slot's atomic write publishes it whole.
 */
final class ReplicaMeters {

    /** Feedback slots: predicted, delivered and prompt tokens, then the verdicts. */
    static final int PREDICTED = 0;

    static final int DELIVERED = 1;
    static final int PROMPT = 2;
    static final int STALE = 3;
    static final int INCONCLUSIVE = 4;
    static final int OK = 5;
    static final int CACHE_UNREPORTED = 6;

    private final Meters meters;
    final String id;
    /** cart.requests by endpoint index x status index. */
    private final AtomicReferenceArray<Counter> requests =
            new AtomicReferenceArray<>(ENDPOINTS.length * STATUSES.length);
    /** cart.decisions by reason index. */
    private final AtomicReferenceArray<Counter> decisions = new AtomicReferenceArray<>(Labels.REASONS);
    /** cart.upstream.requests by outcome ordinal x status index. */
    private final AtomicReferenceArray<Counter> upstream =
            new AtomicReferenceArray<>(OUTCOMES.length * STATUSES.length);
    /** predicted, delivered and prompt tokens, then the verdicts stale, inconclusive, ok, cache_unreported. */
    private final AtomicReferenceArray<Counter> feedback = new AtomicReferenceArray<>(7);

    /** This replica's entries of the decision window (a miss, a hit): made once, recorded per decision. */
    final DecisionWindow.Entry windowMiss;

    final DecisionWindow.Entry windowHit;

    private volatile Timer upstreamDuration;
    private volatile Timer firstByte;

    ReplicaMeters(Meters meters, String id) {
        this.meters = meters;
        this.id = id;
        this.windowMiss = new DecisionWindow.Entry(id, false);
        this.windowHit = new DecisionWindow.Entry(id, true);
    }

    Counter request(int endpoint, int status) {
        int i = endpoint * STATUSES.length + status;
        Counter c = requests.get(i);
        if (c == null) {
            c = meters.counter(
                    "cart.requests",
                    "Client requests by endpoint, status class and the replica of the last attempt",
                    "endpoint",
                    ENDPOINTS[endpoint],
                    "status",
                    STATUSES[status],
                    "replica",
                    id);
            requests.set(i, c);
        }
        return c;
    }

    Counter decision(int reason) {
        Counter c = decisions.get(reason);
        if (c == null) {
            c = meters.counter(
                    "cart.decisions",
                    "Routing decisions by reason and chosen replica",
                    "reason",
                    Labels.reasonLabel(reason),
                    "replica",
                    id);
            decisions.set(reason, c);
        }
        return c;
    }

    Counter upstream(int outcome, int status) {
        int i = outcome * STATUSES.length + status;
        Counter c = upstream.get(i);
        if (c == null) {
            c = meters.counter(
                    "cart.upstream.requests",
                    "Upstream attempts by replica, outcome and the replica's status class",
                    "replica",
                    id,
                    "outcome",
                    OUTCOMES[outcome],
                    "status",
                    STATUSES[status]);
            upstream.set(i, c);
        }
        return c;
    }

    Timer upstreamDuration() {
        Timer t = upstreamDuration;
        if (t == null) {
            t = meters.timer(
                    "cart.upstream.duration",
                    "Upstream attempt time, from the decision to the end of the replica's "
                            + "answer (the lease's lifetime)",
                    LATENCY_BUCKETS,
                    "replica",
                    id);
            upstreamDuration = t;
        }
        return t;
    }

    Timer firstByte() {
        Timer t = firstByte;
        if (t == null) {
            t = meters.timer(
                    "cart.upstream.first.byte",
                    "Time from sending an upstream request to the first byte of its "
                            + "answer's body (the head when there is no body)",
                    LATENCY_BUCKETS,
                    "replica",
                    id);
            firstByte = t;
        }
        return t;
    }

    /** One of the feedback slots ({@link #PREDICTED} ... {@link #CACHE_UNREPORTED}). */
    Counter feedback(int which) {
        Counter c = feedback.get(which);
        if (c == null) {
            c = switch (which) {
                case PREDICTED ->
                    meters.counter(
                            "cart.cache.predicted.tokens",
                            "Prompt tokens the router predicted the replica had cached, "
                                    + "for requests whose usage the replica reported",
                            "replica",
                            id);
                case DELIVERED ->
                    meters.counter(
                            "cart.cache.delivered.tokens",
                            "Prompt tokens the replica reported as served from its cache",
                            "replica",
                            id);
                case PROMPT ->
                    meters.counter(
                            "cart.cache.prompt.tokens",
                            "Prompt tokens of the requests whose cache usage the replica reported",
                            "replica",
                            id);
                default ->
                    meters.counter(
                            "cart.cache.feedback",
                            "Replica usage reports compared with the router's prediction, by verdict",
                            "replica",
                            id,
                            "verdict",
                            verdict(which));
            };
            feedback.set(which, c);
        }
        return c;
    }

    private static String verdict(int which) {
        return switch (which) {
            case STALE -> "stale";
            case INCONCLUSIVE -> "inconclusive";
            case CACHE_UNREPORTED -> CacheFeedback.Verdict.CACHE_UNREPORTED.label();
            default -> "ok";
        };
    }
}
