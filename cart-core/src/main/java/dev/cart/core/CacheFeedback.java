package dev.cart.core;

/**
 * The router's prediction for one request set against what the replica reported, in tokens.
 *
 * <p>A report short of the prediction (by more than two blocks and a tenth of the prediction) has one of
 * two verdicts. It is {@code stale} when the replica could have held the missing part when the request was
 * sent: it lost it, and the router dropped the replica's claims beyond what was delivered. It is
 * {@code inconclusive} when requests still in prefill on that replica were computing the missing part then
 * (a replica serves a prefix from its cache only once its prefill is over): nothing was dropped.
 *
 * @param predictedTokens prompt tokens the router believed the replica had cached (its matched prefix,
 *                        scaled from key units to the replica's token count)
 * @param deliveredTokens prompt tokens the replica reported as served from its cache
 * @param promptTokens    the replica's prompt token count
 * @param stale           true if the prediction exceeded what was delivered by more than a tolerance and
 *                        the replica could have held the difference, so the router dropped the replica's
 *                        claim beyond what was delivered ({@code cache.feedback} on)
 * @param inconclusive    true if the prediction exceeded what was delivered by more than a tolerance, but
 *                        requests still in prefill on the replica when this one was sent explain the
 *                        difference, so the router kept its claims ({@code cache.feedback} on)
 */
public record CacheFeedback(
        long predictedTokens, long deliveredTokens, long promptTokens, boolean stale, boolean inconclusive) {}
