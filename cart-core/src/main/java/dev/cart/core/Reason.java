package dev.cart.core;

import dev.cart.core.spi.Replica;
import java.util.Locale;

/** Why a routing decision went the way it did. Bounded set: safe as a metric label. */
public enum Reason {
    /** The prefix match was good enough and the holder was not overloaded. */
    CACHE_HIT,
    /** The match was good enough but its holder was overloaded; the least-loaded replica got it. */
    HIT_OVERLOADED,
    /** The match was not good enough; the request was placed by load and its prefix recorded. */
    MISS,
    /** Like {@link #MISS}, but placed by consistent hashing on the key's anchor. */
    MISS_HASHED,
    /** The request had no prompt text to match; placed by load. */
    EMPTY_TEXT,
    /** A policy that ignores the cache (round robin, random, least loaded, ...) chose. */
    POLICY,
    /**
     * No replica could take the request (all unhealthy, open, at their cap or excluded), although some
     * serve its model: a host answers "unavailable" (HTTP 503).
     */
    NO_REPLICA,
    /**
     * No replica of the pool serves the request's model ({@link Replica#serves}), whatever its health or
     * load: a host answers "no such model" (HTTP 404). Only a request that names a model gets it.
     */
    MODEL_NOT_SERVED;

    // Made once: every decision's log line and metric label asks for it.
    private final String code = name().toLowerCase(Locale.ROOT);

    /**
     * Lower-case code used in logs and metrics, e.g. {@code cache_hit}.
     *
     * @return the code, the constant's name in lower case
     */
    public String code() {
        return code;
    }

    /** The same as {@link #code()}: a reason prints as logs and metrics show it. */
    @Override
    public String toString() {
        return code();
    }
}
