package dev.cart.proxy.precise;

import dev.cart.kvevents.PreciseMatch;

/**
 * What precise mode made of one routed request: the index's match for its engine tokens, or why there is none
 * (then the request routes approximately, by the prefix tree alone). Immutable.
 *
 * @param match         the per-replica match, or null when the request was not looked up
 * @param tokenizeNanos how long getting its engine tokens took, or -1 when it was not tokenized
 * @param off           null when looked up, else a word saying why not: {@value #NO_EVENTS} (no replica that
 *                      could take it is precise now), {@value #NOT_TOKENIZABLE} (a batched or token-id prompt,
 *                      or a body the engine's {@code /tokenize} cannot take), {@value #TOKENIZE_TIMEOUT},
 *                      {@value #TOKENIZE_FAILED}, {@value #TOKENIZE_OFF} ({@code kv_events.tokenize: none}),
 *                      {@value #SATURATED} (every tokenize thread busy and its queue full), {@value #NO_MODEL}
 *                      (the request names no model), {@value #ERROR}
 */
public record PreciseLookup(PreciseMatch match, long tokenizeNanos, String off) {

    public static final String NO_EVENTS = "no_events";
    public static final String NOT_TOKENIZABLE = "not_tokenizable";
    public static final String TOKENIZE_TIMEOUT = "tokenize_timeout";
    public static final String TOKENIZE_FAILED = "tokenize_failed";
    public static final String TOKENIZE_OFF = "tokenize_off";
    public static final String SATURATED = "saturated";
    public static final String NO_MODEL = "no_model";
    public static final String ERROR = "error";

    /** Every reason a request is not looked up, in a fixed order (the metric's label values). */
    public static final java.util.List<String> REASONS = java.util.List.of(
            NO_EVENTS, NOT_TOKENIZABLE, TOKENIZE_TIMEOUT, TOKENIZE_FAILED, TOKENIZE_OFF, SATURATED, NO_MODEL, ERROR);

    /** A request not looked up, for {@code reason}. */
    public static PreciseLookup off(String reason, long tokenizeNanos) {
        return new PreciseLookup(null, tokenizeNanos, reason);
    }

    /** True when the request was looked up (its match decides for the precise replicas). */
    public boolean on() {
        return match != null;
    }

    /** The index of {@link #off} in {@link #REASONS}, or -1 when looked up. */
    public int reasonIndex() {
        return off == null ? -1 : REASONS.indexOf(off);
    }
}
