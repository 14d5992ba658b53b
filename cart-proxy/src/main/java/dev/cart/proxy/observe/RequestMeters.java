package dev.cart.proxy.observe;

import static dev.cart.proxy.observe.Labels.DECISION_BUCKETS;
import static dev.cart.proxy.observe.Labels.ENDPOINTS;
import static dev.cart.proxy.observe.Labels.LATENCY_BUCKETS;

import dev.cart.core.CacheFeedback;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.Tokenization;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.proxy.routing.Routing;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Supplier;

/**
 * The metrics of every request: its end, its decisions, its upstream attempts, its first byte, the replica's
 * usage report and answer learning. Each event is a few updates of meters resolved before (Micrometer's own
 * update is the cost), and builds no tags, key or string. {@link ProxyMetrics} runs them on the
 * {@link DecisionWriter}'s thread, off the event loops.
 *
 * <p>How: the meters of each replica are a {@link ReplicaMeters}, found by the identity of the id string the
 * request path passes (the replica set's own strings) in a short copy-on-write array, else by a map lookup the
 * first time an id instance is seen; the meters of one label set (endpoint, model, tokenization outcome) sit in
 * arrays by index. The one lookup by content per request is the model's ({@link ModelLabels}): its name comes
 * from the request's body. Answer learning's results are constant words, found by identity the same way.
 *
 * <p>Concurrency: every method is thread-safe and never blocks; a lost copy-on-write addition only costs the
 * next event a map lookup.
 */
final class RequestMeters {

    private static final int MAX_RECENT = 16;

    private final Meters meters;
    private final Supplier<Routing> routing;
    private final DecisionWindow window;
    private final ModelLabels modelLabels;

    /** The meters of each replica id, and of no replica ({@link Labels#NONE}). */
    private final Map<String, ReplicaMeters> byReplica = new ConcurrentHashMap<>();
    /**
     * Some of {@link #byReplica}'s meters, found by the identity of the id string the request path passes
     * ({@link #replica}); an immutable array, replaced whole, emptied when the replica set changes.
     */
    private volatile Seen[] recent = new Seen[0];

    private final ReplicaMeters noReplica;

    /** A replica id, as one string instance, and its meters. */
    private record Seen(String id, ReplicaMeters meters) {}

    private final AtomicReferenceArray<Timer> requestDurations = new AtomicReferenceArray<>(ENDPOINTS.length);
    /** cart.model.decisions of the labels none and other, by reason index. */
    private final AtomicReferenceArray<Counter> noModelDecisions = new AtomicReferenceArray<>(Labels.REASONS);

    private final AtomicReferenceArray<Counter> otherModelDecisions = new AtomicReferenceArray<>(Labels.REASONS);
    /** cart.tokenization by {@link Tokenization.Status} ordinal, the token cache's hits and misses, the tokenizer. */
    private final AtomicReferenceArray<Counter> tokenizationOutcomes =
            new AtomicReferenceArray<>(Tokenization.Status.values().length);

    private volatile Counter tokenCacheHits;
    private volatile Counter tokenCacheMisses;
    private volatile Timer tokenizerDuration;
    private volatile Counter learnedElsewhere;
    /** cart.learned.answers by result: each constant word and its counter, found by identity. */
    private volatile Word[] learned = new Word[0];

    /** A result word, as one string instance, and its counter. */
    private record Word(String word, Counter counter) {}

    private final Timer decisionDuration;
    private final DistributionSummary matchedRatio;

    RequestMeters(Meters meters, Supplier<Routing> routing, DecisionWindow window, ModelLabels modelLabels) {
        this.meters = meters;
        this.routing = routing;
        this.window = window;
        this.modelLabels = modelLabels;
        this.noReplica = new ReplicaMeters(meters, Labels.NONE);
        decisionDuration = Timer.builder("cart.decision.duration")
                .description("Time spent choosing a replica (Router.choose)")
                .serviceLevelObjectives(DECISION_BUCKETS)
                .register(meters.registry);
        matchedRatio = DistributionSummary.builder("cart.decision.matched.ratio")
                .description("Matched prefix length over key length, per routed decision with prompt text")
                .serviceLevelObjectives(Labels.RATIO_BUCKETS)
                .register(meters.registry);
    }

    /** Forgets the ids seen by identity: a reload's replicas come with id strings of their own. */
    void replicasChanged() {
        recent = new Seen[0];
    }

    /** The meters of {@code replica} (an id; null for none), made on first use. */
    @SuppressWarnings("ReferenceEquality") // a cache by identity; an equal id of another instance goes to the map
    ReplicaMeters replica(String replica) {
        if (replica == null) {
            return noReplica;
        }
        Seen[] seen = recent;
        for (Seen x : seen) {
            if (x.id == replica) {
                return x.meters;
            }
        }
        ReplicaMeters m = byReplica.get(replica);
        if (m == null) {
            m = byReplica.computeIfAbsent(replica, id -> new ReplicaMeters(meters, id));
        }
        if (seen.length < MAX_RECENT) {
            // copy on write; two threads adding at once may lose one addition, which the next miss makes again
            Seen[] next = Arrays.copyOf(seen, seen.length + 1);
            next[seen.length] = new Seen(replica, m);
            recent = next;
        }
        return m;
    }

    /** One client request finished. */
    void request(String path, int status, String replica, long nanos) {
        int endpoint = Labels.endpointIndex(path);
        replica(replica).request(endpoint, Labels.statusIndex(status)).increment();
        Timer t = requestDurations.get(endpoint);
        if (t == null) {
            t = meters.timer(
                    "cart.request.duration",
                    "Time from the request's arrival to its end, by endpoint",
                    LATENCY_BUCKETS,
                    "endpoint",
                    ENDPOINTS[endpoint]);
            requestDurations.set(endpoint, t);
        }
        t.record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * A routed decision's entry in the window of recent decisions ({@code /workers}): recorded at once, on the
     * caller's thread (two atomic writes), so that {@code /workers} sees it as soon as the decision is made.
     */
    void window(RouteDecision d) {
        if (d.routed()) {
            ReplicaMeters m = replica(d.replica().id());
            window.record(d.reason() == Reason.CACHE_HIT ? m.windowHit : m.windowMiss);
        }
    }

    /** A routing decision's meters ({@link #window} records its window entry); {@code passThrough} as there. */
    void decision(RouteDecision d, boolean passThrough) {
        int reason = Labels.reasonIndex(d, passThrough);
        ReplicaMeters m = replica(d.routed() ? d.replica().id() : null);
        m.decision(reason).increment();
        decisionDuration.record(d.decisionNanos(), TimeUnit.NANOSECONDS);
        modelDecision(d, reason);
        Tokenization t = d.tokenization();
        if (t.status() != Tokenization.Status.CHARACTER_MODE && d.attempt() == 0) {
            tokenization(t);
        }
        if (d.routed()) {
            if (d.keyLength() > 0) {
                matchedRatio.record(d.matchedRatio());
            }
            if (d.learnedElsewhere()) {
                Counter c = learnedElsewhere;
                if (c == null) {
                    learnedElsewhere = c = meters.counter(
                            "cart.cluster.hits.learned.elsewhere",
                            "Cache hits on a route only other instances had reported (share: over"
                                    + " cart.decisions with reason cache_hit)");
                }
                c.increment();
            }
        }
    }

    /** A request in token mode: its tokenization's outcome, cache lookups and time in the tokenizer. */
    private void tokenization(Tokenization t) {
        int status = t.status().ordinal();
        Counter outcome = tokenizationOutcomes.get(status);
        if (outcome == null) {
            outcome = meters.counter(
                    "cart.tokenization",
                    "Requests in token mode by outcome: tokenized, or given a character key "
                            + "because every tokenization permit was taken (saturated) or the tokenizer failed",
                    "outcome",
                    t.status().name().toLowerCase(Locale.ROOT));
            tokenizationOutcomes.set(status, outcome);
        }
        outcome.increment();
        Counter hits = tokenCacheHits;
        if (hits == null) {
            tokenCacheHits = hits = tokenCacheLookups("hit");
        }
        hits.increment(t.cacheHits());
        Counter misses = tokenCacheMisses;
        if (misses == null) {
            tokenCacheMisses = misses = tokenCacheLookups("miss");
        }
        misses.increment(t.segments() - t.cacheHits());
        Timer tokenizer = tokenizerDuration;
        if (tokenizer == null) {
            tokenizerDuration = tokenizer = meters.timer(
                    "cart.tokenizer.duration",
                    "Time a request spent in the tokenizer (0 when every segment was cached)",
                    DECISION_BUCKETS);
        }
        tokenizer.record(t.tokenizerNanos(), TimeUnit.NANOSECONDS);
    }

    private Counter tokenCacheLookups(String result) {
        return meters.counter(
                "cart.token.cache.lookups",
                "Key segments looked up in the tokenization cache, by result",
                "result",
                result);
    }

    /** Counts a decision under its model's bounded label ({@link ModelLabels}). */
    private void modelDecision(RouteDecision d, int reason) {
        String model = d.model();
        ModelLabels.Counts counts = null;
        AtomicReferenceArray<Counter> byReason;
        if (model == null) {
            byReason = noModelDecisions;
        } else {
            Routing r = routing.get();
            counts = modelLabels.counts(model, r == null ? null : r.replicas);
            byReason = counts == null ? otherModelDecisions : counts.decisionCounters;
        }
        Counter c = byReason.get(reason);
        if (c == null) {
            c = meters.counter(
                    "cart.model.decisions",
                    "Routing decisions by model (models the pool lists; other; none) and reason",
                    "model",
                    model == null ? Labels.NONE : counts == null ? Labels.OTHER : counts.label,
                    "reason",
                    Labels.reasonLabel(reason));
            byReason.set(reason, c);
        }
        c.increment();
        if (counts != null && d.routed()) {
            counts.record(d.reason() == Reason.CACHE_HIT);
        }
    }

    /** A lease closed: one upstream attempt ended. */
    void leaseCompleted(LeaseCompletion c) {
        ReplicaMeters m = replica(c.decision().replica().id());
        m.upstream(c.outcome().ordinal(), Labels.statusIndex(c.status())).increment();
        m.upstreamDuration().record(c.durationNanos(), TimeUnit.NANOSECONDS);
    }

    /** Time from sending the upstream request to the first byte of the answer's body (or its head). */
    void firstByte(String replica, long nanos) {
        replica(replica).firstByte().record(nanos, TimeUnit.NANOSECONDS);
    }

    /** The replica reported its cache usage for a routed request. */
    void cacheFeedback(RouteDecision d, CacheFeedback f) {
        ReplicaMeters m = replica(d.replica() == null ? null : d.replica().id());
        m.feedback(ReplicaMeters.PREDICTED).increment(Math.max(0, f.predictedTokens()));
        m.feedback(ReplicaMeters.DELIVERED).increment(Math.max(0, f.deliveredTokens()));
        m.feedback(ReplicaMeters.PROMPT).increment(Math.max(0, f.promptTokens()));
        m.feedback(
                        f.stale()
                                ? ReplicaMeters.STALE
                                : f.inconclusive()
                                        ? ReplicaMeters.INCONCLUSIVE
                                        : f.verdict() == CacheFeedback.Verdict.CACHE_UNREPORTED
                                                ? ReplicaMeters.CACHE_UNREPORTED
                                                : ReplicaMeters.OK)
                .increment();
    }

    /** A finished chat answer was (or was not) learned; {@code result} is one of a handful of constant words. */
    @SuppressWarnings("ReferenceEquality") // a cache by identity; an equal word of another instance is looked up
    void answerLearned(String result) {
        Word[] words = learned;
        for (Word w : words) {
            if (w.word == result) {
                w.counter.increment();
                return;
            }
        }
        Counter c = meters.counter(
                "cart.learned.answers",
                "Chat answers recorded as the next turn's prefix (learned), or why not",
                "result",
                result);
        c.increment();
        if (words.length < MAX_RECENT) {
            Word[] next = Arrays.copyOf(words, words.length + 1); // copy on write, as the replicas' ids
            next[words.length] = new Word(result, c);
            learned = next;
        }
    }
}
