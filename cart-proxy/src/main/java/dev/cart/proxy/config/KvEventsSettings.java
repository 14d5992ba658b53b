package dev.cart.proxy.config;

import dev.cart.proxy.config.Constraints.Bounds;
import dev.cart.proxy.config.Constraints.NotBlank;
import dev.cart.proxy.config.Constraints.Nullable;
import dev.cart.proxy.config.Constraints.OneOf;
import java.time.Duration;

/**
 * Section {@code kv_events}: precise mode's settings, used when some worker names its engine's KV-event
 * endpoint ({@code workers[].kv_events}); without such a worker the section has no effect and the proxy starts
 * no thread for it. See docs/precise-mode.md. The rule a range does not say ({@code model} is required when a
 * worker with {@code kv_events} does not list exactly one model) is checked by {@link ConfigValidator}.
 *
 * @param model              the model name requests use for the engines' base model (the blocks they store
 *                           without an adapter are keyed under it); null: each worker's one configured model
 * @param blockSize          the engines' KV block size in tokens (vLLM's {@code --block-size})
 * @param maxBlocksPerStream the index's memory cap per stream (one per worker and data-parallel rank)
 * @param silenceSecs        an engine silent this long while requests routed to it wait makes it approximate
 * @param gapHoldSecs        how long a stream stays approximate after events were lost for good
 * @param replayTimeoutSecs  how long a replay may go unanswered before it is given up
 * @param overlayTtlMs       the floor of how long a routed request's blocks count for its replica after its
 *                           lease ends (or twice the measured p99 event lag if longer)
 * @param tokenize           {@code engine}: ask a replica's {@code POST /tokenize}; {@code none}: every request
 *                           routes approximately (the streams are still followed, {@code /workers} shows them)
 * @param tokenizeTimeoutMs  the limit of one {@code /tokenize} call
 * @param receiveHwm         the SUB socket's receive high-water mark in messages
 */
public record KvEventsSettings(
        @Nullable @NotBlank String model,
        @Bounds(min = 1, max = 1024) int blockSize,
        @Bounds(min = 1, max = Integer.MAX_VALUE) int maxBlocksPerStream,
        @Bounds(min = 1, max = 3_600) int silenceSecs,
        @Bounds(min = 0, max = 3_600) int gapHoldSecs,
        @Bounds(min = 1, max = 600) int replayTimeoutSecs,
        @Bounds(min = 0, max = 600_000) int overlayTtlMs,

        @OneOf({KvEventsSettings.ENGINE, KvEventsSettings.NONE})
        String tokenize,

        @Bounds(min = 1, max = 60_000) int tokenizeTimeoutMs,
        @Bounds(min = 1, max = 10_000_000) int receiveHwm) {

    /** {@code tokenize: engine}. */
    public static final String ENGINE = "engine";

    /** {@code tokenize: none}. */
    public static final String NONE = "none";

    /** The section's defaults. */
    public static KvEventsSettings defaults() {
        return Defaults.config().kvEvents();
    }

    /** True when requests are tokenized by an engine ({@code tokenize: engine}). */
    public boolean tokenizeByEngine() {
        return ENGINE.equals(tokenize);
    }

    /** {@link #tokenizeTimeoutMs} as a duration. */
    public Duration tokenizeTimeout() {
        return Duration.ofMillis(tokenizeTimeoutMs);
    }
}
