package dev.cart.proxy.observe;

import dev.cart.kvevents.KvEventsListener;
import dev.cart.kvevents.ReplicaMode;
import dev.cart.proxy.precise.PreciseLookup;
import dev.cart.proxy.precise.PreciseMode;
import dev.cart.proxy.routing.Routing;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Precise mode's metrics ({@code cart_kv_*}, listed in docs/metrics.md): what the KV-event index and its
 * subscriber do (it is their {@link KvEventsListener}), what the engine tokenizer costs, what became of each
 * routed request's lookup, and, read at scrape time from the current routing state, each followed replica's
 * mode and the index's size. Nothing is registered in a proxy without a worker with {@code kv_events}.
 *
 * <p>How: every meter is resolved once and kept. A replica's counters are made (at 0, so rates work from the
 * start) when it is first followed ({@link #follow}) and found by its id in a concurrent map on the stream's
 * I/O thread; the fixed-label meters (malformed and skipped by kind, tokenize outcomes, lookups by reason) sit
 * in arrays made in the constructor. A request's lookup costs an array read and Micrometer's own update.
 * Labels: {@code replica} (a configured worker URL), {@code mode}, and closed sets of causes and reasons.
 *
 * <p>Thread-safe: called on the subscriber's threads, the tokenize pool's and the front's.
 */
public final class KvMetrics implements KvEventsListener {

    private static final Duration[] LAG_BUCKETS = {
        Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5), Duration.ofMillis(10),
        Duration.ofMillis(25), Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250),
        Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofMillis(2500), Duration.ofSeconds(10)
    };

    /** The replay reasons the subscriber gives; any other is {@code other}. */
    static final List<String> REPLAY_REASONS = List.of("connect", "subscribed", "gap", "restart", "orphans", "other");
    /** The reset causes ({@code lost events (...)} is {@code lost_events}); any other is {@code other}. */
    static final List<String> RESET_CAUSES = List.of("restart", "cleared", "lost_events", "other");

    static final List<String> MALFORMED = List.of("frame", "batch", "event");
    static final List<String> TOKENIZE_OUTCOMES = List.of("ok", "timeout", "failed");

    private final MeterRegistry registry;
    private final Supplier<Routing> routing;
    private final Map<String, ReplicaMeters> byReplica = new ConcurrentHashMap<>();
    /** The mode gauges of the replicas followed now, by replica. */
    private final Map<String, List<Meter>> modeGauges = new ConcurrentHashMap<>();

    private final Object registerLock = new Object();
    private volatile boolean registered;
    private Timer lag;
    private Timer tokenizeDuration;
    private final Counter[] tokenizeOutcomes = new Counter[TOKENIZE_OUTCOMES.size()];
    private final Counter[] malformed = new Counter[MALFORMED.size()];
    private Counter skippedFields;
    private Counter unknownTags;
    private Counter lookedUp;
    private final Counter[] notLookedUp = new Counter[PreciseLookup.REASONS.size()];

    /**
     * @param registry where the meters go
     * @param routing  the current routing state (its {@link Routing#precise}, read at scrape time)
     */
    public KvMetrics(MeterRegistry registry, Supplier<Routing> routing) {
        this.registry = registry;
        this.routing = routing;
    }

    /** Registers the proxy-wide meters, once, when a precise mode first exists. */
    private void register() {
        synchronized (registerLock) {
            if (registered) {
                return;
            }
            lag = Timer.builder("cart.kv.event.lag")
                    .description("Time from an engine's batch timestamp (its clock) to the batch applied to the index,"
                            + " live batches only")
                    .serviceLevelObjectives(LAG_BUCKETS)
                    .register(registry);
            tokenizeDuration = Timer.builder("cart.kv.tokenize.duration")
                    .description("Time of a request's POST /tokenize on an engine, whatever its outcome")
                    .serviceLevelObjectives(LAG_BUCKETS)
                    .register(registry);
            for (int i = 0; i < TOKENIZE_OUTCOMES.size(); i++) {
                tokenizeOutcomes[i] = Counter.builder("cart.kv.tokenize")
                        .description("Requests' POST /tokenize calls on an engine by outcome")
                        .tag("outcome", TOKENIZE_OUTCOMES.get(i))
                        .register(registry);
            }
            for (int i = 0; i < MALFORMED.size(); i++) {
                malformed[i] = Counter.builder("cart.kv.malformed")
                        .description("KV-event frames, batches and events dropped as malformed")
                        .tag("what", MALFORMED.get(i))
                        .register(registry);
            }
            skippedFields = Counter.builder("cart.kv.skipped")
                    .description("Unknown event fields and event kinds skipped while decoding")
                    .tag("what", "field")
                    .register(registry);
            unknownTags = Counter.builder("cart.kv.skipped")
                    .description("Unknown event fields and event kinds skipped while decoding")
                    .tag("what", "tag")
                    .register(registry);
            lookedUp = Counter.builder("cart.kv.requests")
                    .description("Routed requests of a precise proxy: looked up (precise on) or why not")
                    .tags("precise", "on", "reason", "none")
                    .register(registry);
            for (int i = 0; i < PreciseLookup.REASONS.size(); i++) {
                notLookedUp[i] = Counter.builder("cart.kv.requests")
                        .description("Routed requests of a precise proxy: looked up (precise on) or why not")
                        .tags("precise", "off", "reason", PreciseLookup.REASONS.get(i))
                        .register(registry);
            }
            Gauge.builder(
                            "cart.kv.index.blocks",
                            this,
                            m -> m.index(p -> p.index().size()))
                    .description("Distinct blocks some followed engine holds, in the index now")
                    .register(registry);
            Gauge.builder(
                            "cart.kv.index.bytes",
                            this,
                            m -> m.index(p -> p.index().tableBytes()))
                    .description("Bytes the index's tables take")
                    .register(registry);
            Gauge.builder(
                            "cart.kv.overlay.ttl.seconds",
                            this,
                            m -> m.index(p -> p.index().overlayTtl().toNanos() / 1e9))
                    .description("How long a routed request's blocks count for its replica after its lease ends")
                    .register(registry);
            registered = true;
        }
    }

    private double index(java.util.function.ToDoubleFunction<PreciseMode> f) {
        Routing r = routing.get();
        return r == null || r.precise == null ? 0 : f.applyAsDouble(r.precise);
    }

    /**
     * The routing state now has {@code precise} (null: none): its replicas get their counters (at 0) and mode
     * gauges; the mode gauges of replicas no longer followed are removed (their counters stay).
     */
    public void follow(PreciseMode precise) {
        List<String> now = precise == null ? List.of() : precise.followed();
        if (precise != null) {
            register();
        }
        for (String id : new ArrayList<>(modeGauges.keySet())) {
            if (!now.contains(id)) {
                modeGauges.remove(id).forEach(registry::remove);
            }
        }
        for (String id : now) {
            replica(id);
            modeGauges.computeIfAbsent(id, this::modeGauges);
        }
    }

    private List<Meter> modeGauges(String id) {
        List<Meter> out = new ArrayList<>();
        for (ReplicaMode m : ReplicaMode.values()) {
            out.add(Gauge.builder("cart.kv.replica.mode", this, x -> x.isMode(id, m))
                    .description("1 for the replica's precise-mode state now (precise, catching_up, approximate),"
                            + " 0 for the others")
                    .tags("replica", id, "mode", m.name().toLowerCase(Locale.ROOT))
                    .register(registry));
        }
        return out;
    }

    private double isMode(String id, ReplicaMode m) {
        Routing r = routing.get();
        if (r == null || r.precise == null || !r.precise.follows(id)) {
            return m == ReplicaMode.APPROXIMATE ? 1 : 0;
        }
        return r.precise.index().mode(id) == m ? 1 : 0;
    }

    private ReplicaMeters replica(String id) {
        ReplicaMeters m = byReplica.get(id);
        return m != null ? m : byReplica.computeIfAbsent(id, ReplicaMeters::new);
    }

    /** Counts what became of a routed request's lookup. */
    public void lookup(PreciseLookup lookup) {
        if (!registered) {
            return;
        }
        if (lookup.on()) {
            lookedUp.increment();
        } else {
            int i = lookup.reasonIndex();
            if (i >= 0) {
                notLookedUp[i].increment();
            }
        }
    }

    @Override
    public void onBatchApplied(String replica, int rank, int stored, int removed, long lagNanos) {
        ReplicaMeters m = replica(replica);
        m.batches.increment();
        m.stored.increment(stored);
        m.removed.increment(removed);
        if (lagNanos >= 0 && registered) {
            lag.record(lagNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void onGap(String replica, int rank, long expected, long received) {
        replica(replica).gaps.increment();
    }

    @Override
    public void onReplayRequested(String replica, int rank, long fromSeq, String reason) {
        int i = REPLAY_REASONS.indexOf(reason);
        replica(replica).replays[i < 0 ? REPLAY_REASONS.size() - 1 : i].increment();
    }

    @Override
    public void onReplayEnded(String replica, int rank, int batches, boolean complete) {
        if (!complete) {
            replica(replica).replaysIncomplete.increment();
        }
    }

    @Override
    public void onReset(String replica, int rank, String cause) {
        String c = cause.startsWith("lost events") ? "lost_events" : cause;
        int i = RESET_CAUSES.indexOf(c);
        replica(replica).resets[i < 0 ? RESET_CAUSES.size() - 1 : i].increment();
    }

    @Override
    public void onOrphans(String replica, int rank, int blocks) {
        replica(replica).orphans.increment(blocks);
    }

    @Override
    public void onSkipped(String replica, int rank, int fields, int tags) {
        if (registered) {
            skippedFields.increment(fields);
            unknownTags.increment(tags);
        }
    }

    @Override
    public void onMalformed(String replica, int rank, String what, int count) {
        int i = MALFORMED.indexOf(what);
        if (i >= 0 && registered) {
            malformed[i].increment(count);
        }
    }

    @Override
    public void onCapEvicted(String replica, int rank, int blocks) {
        replica(replica).capEvicted.increment(blocks);
    }

    @Override
    public void onModeChanged(String replica, ReplicaMode from, ReplicaMode to, String reason) {
        replica(replica).modeChanges[to.ordinal()].increment();
    }

    @Override
    public void onTokenized(String replica, boolean ok, long nanos, String reason) {
        if (!registered) {
            return;
        }
        tokenizeDuration.record(nanos, TimeUnit.NANOSECONDS);
        tokenizeOutcomes[ok ? 0 : "timeout".equals(reason) ? 1 : 2].increment();
    }

    /** One replica's counters, registered at 0 when it is first seen. */
    private final class ReplicaMeters {
        final Counter batches;
        final Counter stored;
        final Counter removed;
        final Counter gaps;
        final Counter[] replays = new Counter[REPLAY_REASONS.size()];
        final Counter replaysIncomplete;
        final Counter[] resets = new Counter[RESET_CAUSES.size()];
        final Counter orphans;
        final Counter capEvicted;
        final Counter[] modeChanges = new Counter[ReplicaMode.values().length];

        ReplicaMeters(String id) {
            batches = counter("cart.kv.batches", "KV-event batches applied to the index (live and replayed)", id);
            stored = counter("cart.kv.blocks.stored", "Blocks the applied events stored", id);
            removed = counter("cart.kv.blocks.removed", "Blocks the applied events removed", id);
            gaps = counter("cart.kv.gaps", "Live sequence gaps: batches lost on the wire", id);
            for (int i = 0; i < replays.length; i++) {
                replays[i] = counter(
                        "cart.kv.replays",
                        "Replays asked of the engine, by reason",
                        id,
                        "reason",
                        REPLAY_REASONS.get(i));
            }
            replaysIncomplete = counter(
                    "cart.kv.replays.incomplete",
                    "Replays that timed out or began later than asked (what the engine no longer held is lost)",
                    id);
            for (int i = 0; i < resets.length; i++) {
                resets[i] = counter(
                        "cart.kv.resets",
                        "Times a replica's blocks were dropped from the index, by cause",
                        id,
                        "cause",
                        RESET_CAUSES.get(i));
            }
            orphans = counter("cart.kv.orphan.blocks", "Stored blocks whose parent was unknown (not indexed)", id);
            capEvicted = counter("cart.kv.cap.evicted.blocks", "Blocks evicted by kv_events.max_blocks_per_stream", id);
            for (ReplicaMode m : ReplicaMode.values()) {
                modeChanges[m.ordinal()] = counter(
                        "cart.kv.mode.changes",
                        "Times a replica's precise-mode state changed, by the state it changed to",
                        id,
                        "to",
                        m.name().toLowerCase(Locale.ROOT));
            }
        }

        private Counter counter(String name, String help, String id, String... tags) {
            return Counter.builder(name)
                    .description(help)
                    .tag("replica", id)
                    .tags(tags)
                    .register(registry);
        }
    }
}
