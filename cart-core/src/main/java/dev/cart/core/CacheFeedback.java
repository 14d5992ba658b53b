package dev.cart.core;

import java.util.Locale;
import java.util.Objects;

/**
 * What the router learned from one usage report ({@link Lease#succeeded(ServedUsage)}): its prediction for
 * the request set against what the replica reported, in tokens, and its {@link Verdict}, which says what
 * it concluded and whether it changed its routes. The same value is handed to
 * {@link dev.cart.core.spi.RoutingListener#onCacheFeedback} when a comparison was made.
 *
 * <p>A report is short of the prediction when the prediction exceeds what was delivered by more than two
 * blocks and a tenth of the prediction. A short report is {@link Verdict#STALE} when the replica could have
 * held the missing part when the request was sent: it lost it, and the router dropped the replica's claims
 * beyond what was delivered. It is {@link Verdict#INCONCLUSIVE} when requests still in prefill on that
 * replica were computing the missing part then (a replica serves a prefix from its cache only once its
 * prefill is over), and {@link Verdict#CACHE_UNREPORTED} when the replica has never reported a cached
 * token (prefix caching off, or a server that always says 0): nothing is dropped for either.
 *
 * @param predictedTokens prompt tokens the router believed the replica had cached (its matched prefix,
 *                        scaled from key units to the replica's token count; 0 for a miss, which predicted
 *                        nothing); {@link ServedUsage#UNKNOWN} when not compared
 * @param deliveredTokens prompt tokens the replica reported as served from its cache;
 *                        {@link ServedUsage#UNKNOWN} when not compared
 * @param promptTokens    the replica's prompt token count; {@link ServedUsage#UNKNOWN} when not compared
 * @param verdict         what the router concluded from the report
 */
public record CacheFeedback(long predictedTokens, long deliveredTokens, long promptTokens, Verdict verdict) {

    private static final CacheFeedback NOT_COMPARED =
            new CacheFeedback(ServedUsage.UNKNOWN, ServedUsage.UNKNOWN, ServedUsage.UNKNOWN, Verdict.NOT_COMPARED);

    /**
     * Checks that the verdict is given.
     *
     * @param predictedTokens prompt tokens the router believed the replica had cached, or {@link ServedUsage#UNKNOWN}
     * @param deliveredTokens prompt tokens the replica reported as served from its cache, or {@link ServedUsage#UNKNOWN}
     * @param promptTokens    the replica's prompt token count, or {@link ServedUsage#UNKNOWN}
     * @param verdict         what the router concluded from the report
     * @throws NullPointerException if {@code verdict} is null
     */
    public CacheFeedback {
        Objects.requireNonNull(verdict, "verdict");
    }

    /**
     * The answer when nothing was compared ({@link Verdict#NOT_COMPARED}, every figure unknown): one shared
     * value.
     *
     * @return the not-compared feedback
     */
    public static CacheFeedback notCompared() {
        return NOT_COMPARED;
    }

    /**
     * True if the prediction was stale and the router dropped the replica's claims ({@link Verdict#STALE}).
     *
     * @return true for {@link Verdict#STALE}
     */
    public boolean stale() {
        return verdict == Verdict.STALE;
    }

    /**
     * True if requests in prefill explained the shortfall ({@link Verdict#INCONCLUSIVE}).
     *
     * @return true for {@link Verdict#INCONCLUSIVE}
     */
    public boolean inconclusive() {
        return verdict == Verdict.INCONCLUSIVE;
    }

    /**
     * True if the report was compared with the prediction (every verdict but {@link Verdict#NOT_COMPARED}).
     *
     * @return false only for {@link Verdict#NOT_COMPARED}
     */
    public boolean compared() {
        return verdict != Verdict.NOT_COMPARED;
    }

    /** What the router concluded from one usage report. */
    public enum Verdict {
        /**
         * The replica delivered what was predicted, within the tolerance, or more; a miss, which predicted
         * nothing ({@code predictedTokens} 0), is OK whatever it delivered. Nothing changed.
         */
        OK,
        /**
         * Short of the prediction, and the replica could have held the missing part: it lost it (its cache
         * evicted it). The router dropped the replica's claims on the prefixes that continued through the lost
         * part, and keeps this request's own route (the replica has just computed the prompt again).
         */
        STALE,
        /**
         * Short of the prediction, but requests still in prefill on the replica when this one was sent were
         * computing the missing part: no evidence the replica lost anything. Nothing dropped.
         */
        INCONCLUSIVE,
        /**
         * Short of the prediction with nothing delivered, from a replica that has never reported a cached
         * token: a replica with prefix caching off, or a server that always reports 0. Its reports cannot
         * tell an eviction from a cache it does not report, so they drop nothing (dropping would move the
         * routes of prompts that hit nothing anyway). The router calls a replica so at its third such report
         * (the first two are {@link #STALE}: a replica that has just started may really have lost what it was
         * predicted to hold), and trusts its reports again once it reports a cached token.
         */
        CACHE_UNREPORTED,
        /**
         * The figures were compared, but the router's feedback is off ({@link Router.Builder#feedback}): it
         * judged nothing and dropped nothing. The host may compare the figures itself.
         */
        FEEDBACK_OFF,
        /**
         * Nothing was compared, and every figure is {@link ServedUsage#UNKNOWN}: the usage was not
         * {@linkplain ServedUsage#known() known} (a call at the start of an answer, or a replica that does
         * not report its cache), the request's key was empty (nothing to predict), the decision had no
         * replica, the lease was closed, or another call compares this lease's usage right now. The
         * listener hears nothing of it.
         */
        NOT_COMPARED;

        /**
         * The lower-case name, as in logs and metric labels.
         *
         * @return {@code ok}, {@code stale}, {@code inconclusive}, {@code cache_unreported},
         *     {@code feedback_off} or {@code not_compared}
         */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }
}
