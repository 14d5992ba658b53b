package dev.cart.proxy.flow;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowListener;
import dev.cart.flow.ShedReason;
import dev.cart.proxy.observe.ModelLabels;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * What the admission queue does, as Prometheus metrics (listed in docs/metrics.md): requests queued,
 * admitted (and the work admitted per tenant label: the shares), shed by reason and cancelled, by model and
 * band; the time admitted requests waited; and the queue's depth per model and band, read from the current
 * queue at scrape time. Labels are bounded: the model as {@link ModelLabels} has it (a model some replica
 * lists, else {@code other}, or {@code none}), the band (at most 8), the reason (a closed set), the tenant
 * label the queue gives (its top tenants by admitted work, else {@code other}: never a key).
 *
 * <p>Thread-safe: called on whichever thread the queue acted on; meters are found in a concurrent map and
 * registered once each.
 */
public final class FlowMetrics implements FlowListener {

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

    private static final String NONE = "none";

    private final MeterRegistry registry;
    private final Supplier<FlowControl> current;
    private final Supplier<ManagedReplicaSet> replicas;
    private final ModelLabels labels = new ModelLabels();
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();
    private final Map<String, Boolean> gauges = new ConcurrentHashMap<>();

    /**
     * @param registry where the meters go
     * @param current  the queue now in use (null when flow control is off); a reload replaces it
     * @param replicas the replica set now in use, for the model labels
     */
    public FlowMetrics(MeterRegistry registry, Supplier<FlowControl> current, Supplier<ManagedReplicaSet> replicas) {
        this.registry = registry;
        this.current = current;
        this.replicas = replicas;
    }

    @Override
    public void onQueued(String model, int band) {
        String m = model(model);
        String b = Integer.toString(band);
        counter(
                        "cart.flow.queued",
                        "Requests that found no replica with room and waited in the admission queue",
                        "model",
                        m,
                        "band",
                        b)
                .increment();
        depthGauge(m, band);
    }

    @Override
    public void onAdmitted(String model, int band, String tenantLabel, long queuedNanos, long cost) {
        String m = model(model);
        counter(
                        "cart.flow.admitted",
                        "Requests admitted by the admission queue (at once or after waiting)",
                        "model",
                        m,
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
            Timer t = timers.computeIfAbsent(
                    m,
                    k -> Timer.builder("cart.flow.wait")
                            .description("Time requests admitted after waiting spent in the admission queue")
                            .tags("model", k)
                            .serviceLevelObjectives(WAIT_BUCKETS)
                            .register(registry));
            t.record(queuedNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void onShed(String model, int band, String tenantLabel, ShedReason reason, long queuedNanos) {
        counter(
                        "cart.flow.shed",
                        "Requests the admission queue answered without a replica (429 or 503), by reason",
                        "model",
                        model(model),
                        "band",
                        Integer.toString(band),
                        "reason",
                        reason.code())
                .increment();
    }

    @Override
    public void onCancelled(String model, int band, long queuedNanos) {
        counter(
                        "cart.flow.cancelled",
                        "Waiting requests taken out of the queue because their client went away",
                        "model",
                        model(model),
                        "band",
                        Integer.toString(band))
                .increment();
    }

    private String model(String model) {
        return labels.label(model, replicas.get());
    }

    /** The depth gauge of a model label and band, registered the first time a request of theirs waits. */
    private void depthGauge(String label, int band) {
        String key = label + '\u0000' + band;
        if (gauges.putIfAbsent(key, Boolean.TRUE) != null) {
            return;
        }
        Gauge.builder("cart.flow.queue.depth", () -> depth(label, band))
                .description("Requests waiting in the admission queue now")
                .tags("model", label, "band", Integer.toString(band))
                .register(registry);
    }

    /** Requests of {@code band} waiting now over the models whose label is {@code label}. */
    private double depth(String label, int band) {
        FlowControl flow = current.get();
        if (flow == null) {
            return 0;
        }
        ManagedReplicaSet set = replicas.get();
        int n = 0;
        for (String m : flow.models()) {
            String l = m == null ? NONE : labels.label(m, set);
            if (l.equals(label)) {
                n += flow.depth(m, band);
            }
        }
        return n;
    }

    private Counter counter(String name, String help, String... tags) {
        StringBuilder key = new StringBuilder(name);
        for (String t : tags) {
            key.append('\u0000').append(t);
        }
        return counters.computeIfAbsent(
                key.toString(),
                k -> Counter.builder(name).description(help).tags(tags).register(registry));
    }
}
