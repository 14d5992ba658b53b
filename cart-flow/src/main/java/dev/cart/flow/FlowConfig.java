package dev.cart.flow;

import java.time.Duration;

/**
 * The admission queue's settings, immutable and checked when built; every bad value is reported with
 * its name and allowed range. The config keys a host maps them from are in brackets.
 *
 * @param enabled           whether requests that find no capacity wait ({@code flow.enabled}, default
 *                          false: the specification's immediate 503)
 * @param maxDepth          requests waiting per model at most ({@code flow.max_depth}, 1 to 1,000,000,
 *                          default 1,024)
 * @param maxWait           the longest a request waits, and its deadline when it gives none
 *                          ({@code flow.max_wait_ms}, 1 ms to 10 min, default 2 s)
 * @param bands             priority bands; band 0 is served first ({@code flow.bands}, 1 to 8, default 3)
 * @param defaultBand       the band of a request that names none or an unknown one
 *                          ({@code flow.default_band}, 0 to {@code bands - 1}, default 1)
 * @param affinityWait      how much longer than needed a waiting request waits for a replica holding its
 *                          prefix while another replica has room ({@code flow.affinity_wait_ms}, 0 to
 *                          {@code maxWait}, default 50 ms; 0 turns affinity in the queue off)
 * @param hotSpotDepth      when more requests than this wait for the same holders, the next one takes
 *                          another replica at once, spreading the prefix ({@code flow.hot_spot_depth},
 *                          1 to 1,000,000, default 4)
 * @param hotSpotMaxHolders spreading stops once a prefix has this many holders; further requests wait
 *                          for one of them, within {@code affinityWait} ({@code flow.hot_spot_max_holders},
 *                          1 to 1,024, default 3)
 * @param tenantLabels      tenants named in metric labels at most (the top by admitted work); the others
 *                          are {@code other} ({@code flow.tenant_labels}, 0 to 100, default 10)
 * @param recheckInterval   while requests wait, how often the queue looks again for room it was not told
 *                          of (a replica back to health, a circuit half open) ({@code flow.recheck_interval_ms},
 *                          1 ms to 10 s, default 100 ms)
 * @param reserveRatio      the share of a model's slots held back for band 0 and for tenants below their
 *                          share ({@code flow.reserve_ratio}, 0 to 0.5, default 0.1; the reserve is this
 *                          times the slots, rounded down, so a pool of fewer than 10 slots keeps none): when
 *                          no more slots are free than the reserve, a request of another band whose tenant
 *                          holds at least its even share of the rest ({@code (slots - reserve) / tenants
 *                          holding slots}) waits, so a request of band 0 or of a light tenant finds a slot
 *                          at once instead of waiting for one to free
 */
public record FlowConfig(
        boolean enabled,
        int maxDepth,
        Duration maxWait,
        int bands,
        int defaultBand,
        Duration affinityWait,
        int hotSpotDepth,
        int hotSpotMaxHolders,
        int tenantLabels,
        Duration recheckInterval,
        double reserveRatio) {

    private static final FlowConfig DEFAULTS = new FlowConfig(
            false, 1024, Duration.ofSeconds(2), 3, 1, Duration.ofMillis(50), 4, 3, 10, Duration.ofMillis(100), 0.1);

    /**
     * Checks every value.
     *
     * @param enabled see the record
     * @param maxDepth see the record
     * @param maxWait see the record
     * @param bands see the record
     * @param defaultBand see the record
     * @param affinityWait see the record
     * @param hotSpotDepth see the record
     * @param hotSpotMaxHolders see the record
     * @param tenantLabels see the record
     * @param recheckInterval see the record
     * @param reserveRatio see the record
     * @throws IllegalArgumentException naming the first value out of range and the range
     */
    public FlowConfig {
        range("flow.max_depth", maxDepth, 1, 1_000_000);
        millis("flow.max_wait_ms", maxWait, 1, 600_000);
        range("flow.bands", bands, 1, 8);
        range("flow.default_band", defaultBand, 0, bands - 1);
        millis("flow.affinity_wait_ms", affinityWait, 0, maxWait.toMillis());
        range("flow.hot_spot_depth", hotSpotDepth, 1, 1_000_000);
        range("flow.hot_spot_max_holders", hotSpotMaxHolders, 1, 1024);
        range("flow.tenant_labels", tenantLabels, 0, 100);
        millis("flow.recheck_interval_ms", recheckInterval, 1, 10_000);
        if (!(reserveRatio >= 0 && reserveRatio <= 0.5)) {
            throw new IllegalArgumentException("flow.reserve_ratio must be in [0, 0.5], was " + reserveRatio);
        }
    }

    /** {@return the defaults: off, and the values listed on the record when turned on} */
    public static FlowConfig defaults() {
        return DEFAULTS;
    }

    /** {@return the defaults, turned on} */
    public static FlowConfig enabledDefaults() {
        return DEFAULTS.withEnabled(true);
    }

    /**
     * A copy with {@code enabled} changed.
     *
     * @param enabled see the record
     * @return the new settings
     */
    public FlowConfig withEnabled(boolean enabled) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with {@code maxDepth} changed.
     *
     * @param maxDepth see the record
     * @return the new settings
     */
    public FlowConfig withMaxDepth(int maxDepth) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with {@code maxWait} changed (an {@code affinityWait} above it is lowered to it).
     *
     * @param maxWait see the record
     * @return the new settings
     */
    public FlowConfig withMaxWait(Duration maxWait) {
        Duration affinity = affinityWait.compareTo(maxWait) > 0 ? maxWait : affinityWait;
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinity,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with {@code bands} and {@code defaultBand} changed.
     *
     * @param bands see the record
     * @param defaultBand see the record
     * @return the new settings
     */
    public FlowConfig withBands(int bands, int defaultBand) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with the affinity and hot-spot settings changed.
     *
     * @param affinityWait see the record
     * @param hotSpotDepth see the record
     * @param hotSpotMaxHolders see the record
     * @return the new settings
     */
    public FlowConfig withAffinity(Duration affinityWait, int hotSpotDepth, int hotSpotMaxHolders) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with {@code tenantLabels} changed.
     *
     * @param tenantLabels see the record
     * @return the new settings
     */
    public FlowConfig withTenantLabels(int tenantLabels) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with {@code recheckInterval} changed.
     *
     * @param recheckInterval see the record
     * @return the new settings
     */
    public FlowConfig withRecheckInterval(Duration recheckInterval) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    /**
     * A copy with {@code reserveRatio} changed.
     *
     * @param reserveRatio see the record
     * @return the new settings
     */
    public FlowConfig withReserveRatio(double reserveRatio) {
        return new FlowConfig(
                enabled,
                maxDepth,
                maxWait,
                bands,
                defaultBand,
                affinityWait,
                hotSpotDepth,
                hotSpotMaxHolders,
                tenantLabels,
                recheckInterval,
                reserveRatio);
    }

    private static void range(String name, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + value);
        }
    }

    private static void millis(String name, Duration value, long min, long max) {
        if (value == null) {
            throw new IllegalArgumentException(name + " must be given");
        }
        long ms = value.toMillis();
        if (value.isNegative() || ms < min || ms > max || (min > 0 && value.toNanos() < 1_000_000L)) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "] ms, was " + value);
        }
    }
}
