package dev.cart.gateway;

import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowListener;
import dev.cart.flow.ShedReason;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * What one service's admission queue does ({@code cart.flow.enabled}), in the gateway's Micrometer registry:
 * the standalone proxy's {@code cart_flow_*} names, tagged by {@code service} where the proxy tags by model
 * (the gateway does not know which models a service's instances serve, so a model named in a request would be
 * an unbounded label). Every tag is bounded: the band (at most 8), the shed reason (a closed set), the tenant
 * label the queue gives (its top tenants by admitted work, else {@code other}; never a key). The depth gauges,
 * one per band, read the queue at scrape time.
 *
 * <p>Thread-safe: the queue calls it on whichever thread acted; meters are found in a concurrent map and
 * registered once each.
 */
final class CartFlowMetrics implements FlowListener {

    private static final Duration[] WAIT_BUCKETS = {
        Duration.ofMillis(5),
        Duration.ofMillis(10),
        Duration.ofMillis(25),
        Duration.ofMillis(50),
        Duration.ofMillis(100),
        Duration.ofMillis(250),
        Duration.ofMillis(500),
        Duration.ofSeconds(1),
        Duration.ofSeconds(2),
        Duration.ofSeconds(5),
        Duration.ofSeconds(10),
        Duration.ofSeconds(30),
    };

    private final MeterRegistry registry;
    private final String service;
    private final Timer wait;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();

    CartFlowMetrics(MeterRegistry registry, String service) {
        this.registry = registry;
        this.service = service;
        this.wait = Timer.builder("cart.flow.wait")
                .description("Time requests admitted after waiting spent in the admission queue")
                .tag("service", service)
                .serviceLevelObjectives(WAIT_BUCKETS)
                .register(registry);
    }

    /** The depth gauges of {@code flow}'s bands (0 to {@code bands - 1}), over every model it queues. */
    void bind(FlowControl flow, int bands) {
        for (int band = 0; band < bands; band++) {
            int b = band;
            Gauge.builder("cart.flow.queue.depth", flow, f -> depth(f, b))
                    .description("Requests waiting in the admission queue now")
                    .tags("service", service, "band", Integer.toString(band))
                    .register(registry);
        }
    }

    private static double depth(FlowControl flow, int band) {
        int n = 0;
        for (String model : flow.models()) {
            n += flow.depth(model, band);
        }
        return n;
    }

    @Override
    public void onQueued(@Nullable String model, int band) {
        counter(
                        "cart.flow.queued",
                        "Requests that found no instance with room and waited in the admission queue",
                        "band",
                        Integer.toString(band))
                .increment();
    }

    @Override
    public void onAdmitted(@Nullable String model, int band, String tenantLabel, long queuedNanos, long cost) {
        counter(
                        "cart.flow.admitted",
                        "Requests admitted by the admission queue (at once or after waiting)",
                        "band",
                        Integer.toString(band))
                .increment();
        counter(
                        "cart.flow.admitted.cost",
                        "Work admitted (prompt plus output units) by tenant label: the shares",
                        "tenant",
                        tenantLabel)
                .increment(cost);
        if (queuedNanos > 0) {
            wait.record(queuedNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void onShed(@Nullable String model, int band, String tenantLabel, ShedReason reason, long queuedNanos) {
        counter(
                        "cart.flow.shed",
                        "Requests the admission queue answered without an instance (429 or 503), by reason",
                        "band",
                        Integer.toString(band),
                        "reason",
                        reason.code())
                .increment();
    }

    @Override
    public void onCancelled(@Nullable String model, int band, long queuedNanos) {
        counter(
                        "cart.flow.cancelled",
                        "Waiting requests taken out of the queue because their client went away",
                        "band",
                        Integer.toString(band))
                .increment();
    }

    private Counter counter(String name, String help, String... tags) {
        StringBuilder key = new StringBuilder(name);
        for (String t : tags) {
            key.append('\u0000').append(t);
        }
        return counters.computeIfAbsent(
                key.toString(),
                k -> Counter.builder(name)
                        .description(help)
                        .tag("service", service)
                        .tags(tags)
                        .register(registry));
    }
}
