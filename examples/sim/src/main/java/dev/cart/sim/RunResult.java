package dev.cart.sim;

import dev.cart.core.Reason;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * What one simulated run measured: cache hits as the replicas counted them, time to first token,
 * throughput and how the load spread over the replicas. Immutable.
 */
public final class RunResult {

    private final String workload;
    private final String policy;
    private final int requests;
    private final int completed;
    private final int noReplica;
    private final int refused;
    private final long promptTokens;
    private final long cachedTokens;
    private final double idealHitRatio;
    private final long[] ttftSorted;
    private final long firstArrival;
    private final long lastFinish;
    private final long outputTokens;
    private final int[] routed;
    private final int[] peakInFlight;
    private final long[] busyNanos;
    private final long preemptions;
    private final Map<Reason, Integer> reasons;
    private final Trace trace;
    private final Feedback feedback;
    private final double estimateErrorP50;

    /**
     * Per-request outcomes, indexed like the workload (for tests and diagnostics): when each request was
     * sent, got its first token and finished (-1 if it never did), where it went (-1 for none), and its
     * cached prompt tokens.
     */
    record Trace(long[] sent, long[] firstToken, long[] finished, int[] replica, int[] cached) {}

    /**
     * The router's cache predictions set against what the replicas delivered, summed over the requests whose
     * usage reached the router ({@code Lease.succeeded(ServedUsage)}; none when the host reports no usage).
     *
     * @param reports       requests compared
     * @param predicted     prompt tokens the router predicted cached on the replica it chose
     * @param delivered     prompt tokens the replicas served from their caches
     * @param promptTokens  prompt tokens of those requests
     * @param overpredicted requests whose prediction exceeded the delivery by more than two blocks (32 tokens)
     *                      and a tenth of the prediction: a route the replica's cache no longer backed
     * @param staleDropped  the reports the router judged stale and acted on (feedback on: it dropped the
     *                      replica's claims beyond what was delivered)
     * @param inconclusive  the reports short of the prediction that requests still in prefill on the replica
     *                      explained (feedback on: nothing dropped)
     */
    public record Feedback(
            long reports,
            long predicted,
            long delivered,
            long promptTokens,
            long overpredicted,
            long staleDropped,
            long inconclusive) {

        static final Feedback NONE = new Feedback(0, 0, 0, 0, 0, 0, 0);

        /** The over-prediction rule, in tokens (the router's own, in key units, is the same shape). */
        static boolean overpredicted(long predicted, long delivered) {
            return predicted - delivered > 32 + predicted / 10;
        }

        /** Delivered over predicted cached tokens; NaN when nothing was predicted. */
        public double deliveredShare() {
            return predicted == 0 ? Double.NaN : (double) delivered / predicted;
        }
    }

    RunResult(
            String workload,
            String policy,
            int requests,
            int completed,
            int noReplica,
            int refused,
            long promptTokens,
            long cachedTokens,
            double idealHitRatio,
            long[] ttft,
            long firstArrival,
            long lastFinish,
            long outputTokens,
            int[] routed,
            int[] peakInFlight,
            long[] busyNanos,
            long preemptions,
            Map<Reason, Integer> reasons,
            Trace trace,
            Feedback feedback) {
        this(
                workload,
                policy,
                requests,
                completed,
                noReplica,
                refused,
                promptTokens,
                cachedTokens,
                idealHitRatio,
                ttft,
                firstArrival,
                lastFinish,
                outputTokens,
                routed,
                peakInFlight,
                busyNanos,
                preemptions,
                reasons,
                trace,
                feedback,
                Double.NaN);
    }

    RunResult(
            String workload,
            String policy,
            int requests,
            int completed,
            int noReplica,
            int refused,
            long promptTokens,
            long cachedTokens,
            double idealHitRatio,
            long[] ttft,
            long firstArrival,
            long lastFinish,
            long outputTokens,
            int[] routed,
            int[] peakInFlight,
            long[] busyNanos,
            long preemptions,
            Map<Reason, Integer> reasons,
            Trace trace,
            Feedback feedback,
            double estimateErrorP50) {
        this.estimateErrorP50 = estimateErrorP50;
        this.workload = workload;
        this.policy = policy;
        this.requests = requests;
        this.completed = completed;
        this.noReplica = noReplica;
        this.refused = refused;
        this.promptTokens = promptTokens;
        this.cachedTokens = cachedTokens;
        this.idealHitRatio = idealHitRatio;
        this.ttftSorted = ttft.clone();
        Arrays.sort(this.ttftSorted);
        this.firstArrival = firstArrival;
        this.lastFinish = lastFinish;
        this.outputTokens = outputTokens;
        this.routed = routed.clone();
        this.peakInFlight = peakInFlight.clone();
        this.busyNanos = busyNanos.clone();
        this.preemptions = preemptions;
        this.reasons = Collections.unmodifiableMap(new EnumMap<>(reasons));
        this.trace = trace;
        this.feedback = feedback;
    }

    /**
     * The median relative error of the policy's TTFT predictions against the measured TTFT over the recent
     * first tokens of its warmed-up replicas ({@code PredictedTtftPolicy.estimateErrorP50()}); NaN for a
     * policy that predicts none.
     */
    public double estimateErrorP50() {
        return estimateErrorP50;
    }

    /** Predicted against delivered cached tokens (empty when the host reported no usage). */
    public Feedback feedback() {
        return feedback;
    }

    Trace trace() {
        return trace;
    }

    public String workload() {
        return workload;
    }

    public String policy() {
        return policy;
    }

    public int requests() {
        return requests;
    }

    public int completed() {
        return completed;
    }

    /** Requests the router could place nowhere (every replica at its cap). */
    public int noReplica() {
        return noReplica;
    }

    /** Requests a replica refused (longer than the model's context). */
    public int refused() {
        return refused;
    }

    /** Prompt tokens of the completed requests. */
    public long promptTokens() {
        return promptTokens;
    }

    /** Prompt tokens the replicas served from their caches ({@code cached_tokens} summed). */
    public long cachedTokens() {
        return cachedTokens;
    }

    /** Cached prompt tokens over prompt tokens, as the replicas measured them. */
    public double hitRatio() {
        return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
    }

    /** The workload's hit ratio with an infinite cache and perfect placement. */
    public double idealHitRatio() {
        return idealHitRatio;
    }

    /** The {@code q}-quantile (0..1) of time to first token in milliseconds, nearest rank. */
    public double ttftMillis(double q) {
        if (ttftSorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(q * ttftSorted.length);
        return ttftSorted[Math.max(0, Math.min(ttftSorted.length - 1, rank - 1))] / 1e6;
    }

    public double ttftP50Millis() {
        return ttftMillis(0.50);
    }

    public double ttftP99Millis() {
        return ttftMillis(0.99);
    }

    public double ttftMeanMillis() {
        if (ttftSorted.length == 0) {
            return Double.NaN;
        }
        double sum = 0;
        for (long t : ttftSorted) {
            sum += t;
        }
        return sum / ttftSorted.length / 1e6;
    }

    /** Simulated seconds from the first request sent to the last one finished. */
    public double makespanSeconds() {
        return Math.max(0, lastFinish - firstArrival) / 1e9;
    }

    /** Completed requests per simulated second. */
    public double requestsPerSecond() {
        double s = makespanSeconds();
        return s == 0 ? 0 : completed / s;
    }

    /** Generated tokens per simulated second. */
    public double outputTokensPerSecond() {
        double s = makespanSeconds();
        return s == 0 ? 0 : outputTokens / s;
    }

    /** Requests routed to each replica. */
    public int[] routed() {
        return routed.clone();
    }

    /** Highest in-flight count the router saw on each replica. */
    public int[] peakInFlight() {
        return peakInFlight.clone();
    }

    /** Share of the makespan each replica's engine was computing. */
    public double[] utilisation() {
        double[] u = new double[busyNanos.length];
        double span = Math.max(1, lastFinish - firstArrival);
        for (int i = 0; i < u.length; i++) {
            u[i] = busyNanos[i] / span;
        }
        return u;
    }

    /** Requests on the busiest replica over the mean per replica. */
    public double maxOverMeanRequests() {
        return maxOverMean(routed);
    }

    /** Peak in-flight of the busiest replica over the mean of the replicas' peaks. */
    public double maxOverMeanPeakInFlight() {
        return maxOverMean(peakInFlight);
    }

    private static double maxOverMean(int[] v) {
        long sum = 0;
        int max = 0;
        for (int x : v) {
            sum += x;
            max = Math.max(max, x);
        }
        return sum == 0 ? 0 : max / ((double) sum / v.length);
    }

    public long preemptions() {
        return preemptions;
    }

    /** Routing decisions by reason. */
    public Map<Reason, Integer> reasons() {
        return reasons;
    }

    @Override
    public String toString() {
        return String.format(
                "%s/%s: hit %.3f (ideal %.3f) ttft p50 %.0f ms p99 %.0f ms, %.2f req/s, routed %s, " + "peak %s",
                workload,
                policy,
                hitRatio(),
                idealHitRatio,
                ttftP50Millis(),
                ttftP99Millis(),
                requestsPerSecond(),
                Arrays.toString(routed),
                Arrays.toString(peakInFlight));
    }
}
