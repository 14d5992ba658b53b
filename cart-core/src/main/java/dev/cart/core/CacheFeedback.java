package dev.cart.core;

/**
 * The router's prediction for one request set against what the replica reported, in tokens.
 *
 * @param predictedTokens prompt tokens the router believed the replica had cached (its matched prefix,
 *                        scaled from key units to the replica's token count)
 * @param deliveredTokens prompt tokens the replica reported as served from its cache
 * @param promptTokens    the replica's prompt token count
 * @param stale           true if the prediction exceeded what was delivered by more than a tolerance, so
 *                        the router dropped the replica's claim beyond what was delivered
 */
public record CacheFeedback(long predictedTokens, long deliveredTokens, long promptTokens, boolean stale) {}
