package dev.cart.proxy.observe;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Reason;
import io.micrometer.core.instrument.Counter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The {@code model} label of per-model metrics, and the per-model decision and hit counts {@code /workers}
 * shows. The label set is bounded: a request's model is its own label only if a replica of the pool lists
 * it among the models it serves (configured or discovered; a replica that serves any model lists none)
 * and fewer than {@link #MAX_LABELS} models have become labels; every other model is {@code other}, and a
 * request that names none is {@code none}. So a client cannot add label values by sending made-up names.
 * A model that became a label stays one (its counters stay, as Prometheus counters do).
 *
 * <p>Concurrency: lock-free reads of a concurrent map; a new label is admitted under this object's lock
 * so the bound holds under races.
 */
public final class ModelLabels {

    public static final int MAX_LABELS = 32;

    /**
     * One label: its decisions and cache hits, and the {@code cart.model.decisions} counter of each reason
     * (filled in by {@link RequestMeters} on first use), so a decision costs one map lookup by the model.
     */
    static final class Counts {
        final String label;
        final LongAdder decisions = new LongAdder();
        final LongAdder hits = new LongAdder();
        final AtomicReferenceArray<Counter> decisionCounters = new AtomicReferenceArray<>(Reason.values().length + 1);

        Counts(String label) {
            this.label = label;
        }

        /** Counts one routed decision. */
        void record(boolean hit) {
            decisions.increment();
            if (hit) {
                hits.increment();
            }
        }
    }

    private final Map<String, Counts> labels = new ConcurrentHashMap<>();

    /** The label of {@code model} for a decision over {@code set}. */
    public String label(String model, ManagedReplicaSet set) {
        if (model == null) {
            return Labels.NONE;
        }
        Counts c = counts(model, set);
        return c == null ? Labels.OTHER : c.label;
    }

    /**
     * The counts of {@code model}'s own label (admitting it as a label when a replica of {@code set} lists it
     * and there is room), or null when its label is {@code other}.
     */
    Counts counts(String model, ManagedReplicaSet set) {
        Counts c = labels.get(model);
        if (c != null) {
            return c;
        }
        if (set == null || !listed(set, model)) {
            return null;
        }
        synchronized (this) {
            c = labels.get(model);
            if (c != null) {
                return c;
            }
            if (labels.size() >= MAX_LABELS) {
                return null;
            }
            c = new Counts(model);
            labels.put(model, c);
            return c;
        }
    }

    /** Counts one routed decision of {@code label} (a value {@link #label} returned). */
    void record(String label, boolean hit) {
        Counts c = labels.get(label);
        if (c != null) {
            c.record(hit);
        }
    }

    /** Each labelled model's counts so far, sorted by name. */
    public Map<String, long[]> snapshot() {
        Map<String, long[]> out = new LinkedHashMap<>();
        labels.keySet().stream().sorted().forEach(m -> {
            Counts c = labels.get(m);
            out.put(m, new long[] {c.decisions.sum(), c.hits.sum()});
        });
        return out;
    }

    private static boolean listed(ManagedReplicaSet set, String model) {
        for (ManagedReplicaSet.Member m : set.replicas()) {
            if (m.models().contains(model)) {
                return true;
            }
        }
        return false;
    }
}
