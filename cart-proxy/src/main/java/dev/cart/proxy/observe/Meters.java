package dev.cart.proxy.observe;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The proxy's counters and timers by name and tags: each is registered in the registry on first use and kept in
 * a concurrent map, so that asking again returns the same meter. The request path asks once per meter and keeps
 * what it gets ({@link ReplicaMeters}, {@link RequestMeters}); rare events ({@link RareEvents}) ask per event.
 *
 * <p>Concurrency: thread-safe; two threads registering one meter at once get the same one.
 */
final class Meters {

    final PrometheusMeterRegistry registry;
    private final Map<MeterKey, Counter> counters = new ConcurrentHashMap<>();
    private final Map<MeterKey, Timer> timers = new ConcurrentHashMap<>();

    Meters(PrometheusMeterRegistry registry) {
        this.registry = registry;
    }

    /** The counter of {@code name} and {@code tags} (name, value, name, value...), registered on first use. */
    Counter counter(String name, String help, String... tags) {
        MeterKey key = new MeterKey(name, tags);
        Counter c = counters.get(key);
        if (c == null) {
            c = counters.computeIfAbsent(
                    key, k -> Counter.builder(name).description(help).tags(tags).register(registry));
        }
        return c;
    }

    /** The timer of {@code name} and {@code tags}, with these histogram buckets, registered on first use. */
    Timer timer(String name, String help, Duration[] buckets, String... tags) {
        MeterKey key = new MeterKey(name, tags);
        Timer t = timers.get(key);
        if (t == null) {
            t = timers.computeIfAbsent(
                    key,
                    k -> Timer.builder(name)
                            .description(help)
                            .tags(tags)
                            .serviceLevelObjectives(buckets)
                            .register(registry));
        }
        return t;
    }

    /**
     * A counter's or timer's name and tags, as the key of the meters already registered: built per lookup,
     * so it copies nothing (the tags are the caller's array, never changed after the call).
     */
    private static final class MeterKey {
        private final String name;
        private final String[] tags;
        private final int hash;

        MeterKey(String name, String[] tags) {
            this.name = name;
            this.tags = tags;
            this.hash = 31 * name.hashCode() + Arrays.hashCode(tags);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof MeterKey k && k.hash == hash && k.name.equals(name) && Arrays.equals(k.tags, tags);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }
}
