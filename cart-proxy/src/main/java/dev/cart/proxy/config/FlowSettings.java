package dev.cart.proxy.config;

import dev.cart.flow.FlowConfig;
import dev.cart.flow.FlowHeaders;
import dev.cart.proxy.config.Constraints.Bounds;
import dev.cart.proxy.config.Constraints.NotBlank;
import dev.cart.proxy.config.Constraints.RealBounds;
import java.time.Duration;

/**
 * Section {@code flow}: the admission queue ({@code cart-flow}) in front of the router. Off by default: a
 * request that finds every replica at its {@code max_load} is answered 503 at once, as the specification
 * has it. On, it waits for the next freed slot in its model's queue, ordered by priority band, tenant share
 * and arrival, within its deadline; what cannot make it is answered 429 with {@code Retry-After} (see
 * docs/flow-control.md). The rules a range does not say ({@code default_band} below {@code bands},
 * {@code affinity_wait_ms} at most {@code max_wait_ms}, the header names' form) are checked by
 * {@link ConfigValidator} with the others.
 *
 * @param enabled             whether requests that find no capacity wait
 * @param maxDepth            requests waiting per model at most
 * @param maxWaitMs           the longest a request waits, and its deadline when it gives none
 * @param bands               priority bands (0 is served first)
 * @param defaultBand         the band of a request that names none or an unusable one
 * @param affinityWaitMs      how much longer a waiting request holds out for the replica holding its prefix
 * @param hotSpotDepth        requests waiting for the same holders beyond which the next takes another replica
 * @param hotSpotMaxHolders   holders a hot prefix is spread to at most
 * @param tenantLabels        tenants named in metric labels at most (the others are {@code other})
 * @param recheckIntervalMs   how often a queue with waiting requests looks again for room nobody announced
 * @param priorityHeader      the request header naming the band
 * @param tenantHeader        the request header naming the tenant (else a digest of the API key)
 * @param deadlineHeader      the request header giving the longest wait in milliseconds
 * @param defaultOutputTokens the output counted in a request's cost (its tenant's share of work)
 * @param reserveRatio        the share of a model's slots held back for band 0 and for tenants below their
 *                            share of the others, while the rest are taken
 */
public record FlowSettings(
        boolean enabled,
        @Bounds(min = 1, max = 1_000_000) int maxDepth,
        @Bounds(min = 1, max = 600_000) int maxWaitMs,
        @Bounds(min = 1, max = 8) int bands,
        @Bounds(min = 0, max = 7) int defaultBand,
        @Bounds(min = 0, max = 600_000) int affinityWaitMs,
        @Bounds(min = 1, max = 1_000_000) int hotSpotDepth,
        @Bounds(min = 1, max = 1_024) int hotSpotMaxHolders,
        @Bounds(min = 0, max = 100) int tenantLabels,
        @Bounds(min = 1, max = 10_000) int recheckIntervalMs,
        @NotBlank String priorityHeader,
        @NotBlank String tenantHeader,
        @NotBlank String deadlineHeader,
        @Bounds(min = 1, max = 1_000_000) int defaultOutputTokens,
        @RealBounds(min = 0.0, max = 0.5) double reserveRatio) {

    /** The section's defaults: off. */
    public static FlowSettings defaults() {
        return Defaults.config().flow();
    }

    /** The library's settings for these. */
    public FlowConfig toFlowConfig() {
        return new FlowConfig(
                enabled,
                maxDepth,
                Duration.ofMillis(maxWaitMs),
                bands,
                defaultBand,
                Duration.ofMillis(affinityWaitMs),
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                Duration.ofMillis(recheckIntervalMs),
                reserveRatio);
    }

    /** The reader of a request's band, tenant, deadline and cost, with these header names. */
    public FlowHeaders headers() {
        return FlowHeaders.builder(toFlowConfig())
                .priorityHeader(priorityHeader)
                .tenantHeader(tenantHeader)
                .deadlineHeader(deadlineHeader)
                .defaultOutputTokens(defaultOutputTokens)
                .build();
    }

    /** What is wrong with a header name (as {@link FlowHeaders} takes one), or null when it is usable. */
    static String headerNameProblem(String name) {
        String n = name.trim();
        if (n.isEmpty()
                || n.length() > 64
                || !n.chars().allMatch(c -> c == '-' || c == '_' || (c < 128 && Character.isLetterOrDigit(c)))) {
            return "must be an HTTP header name of 1 to 64 letters, digits, '-' or '_', was '"
                    + (n.length() > 64 ? n.substring(0, 64) + "..." : n) + "'";
        }
        return null;
    }
}
