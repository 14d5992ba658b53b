package dev.cart.sim;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import dev.cart.core.sync.RemoteLoad;
import dev.cart.core.sync.RouteEvent;
import dev.cart.core.sync.RouteSync;
import dev.cart.redis.RouteStreamMeter;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BiFunction;

/**
 * Several router instances in front of one simulated pool, behind a load balancer that sends each request
 * to a live instance chosen uniformly at random (a plain L4 balancer: no affinity). Each instance has its
 * own tree and its own replica set (so its own in-flight and pending-prefill counts); the engines are the
 * pool's, shared.
 *
 * <p>With {@link ScaleOut#sync()} the instances share what {@code cart-redis} shares, through an in-memory
 * stand-in on the virtual clock: every route event an instance publishes reaches every other live
 * instance's {@link Router#applyRemote} {@link ScaleOut#syncLagNanos()} later, and each instance's load
 * (in-flight and pending prefill per replica) is counted by the others ({@link RemoteLoad}) as it was
 * {@link ScaleOut#loadDelayNanos()} before (published on change, as {@code RedisLoadView} does), or, with
 * a {@link ScaleOut#loadIntervalNanos()}, as it was at the last multiple of the interval (a polled view,
 * every instance in step), until its TTL after the instance died. Every instance's counts are recorded at
 * each change ({@link #changed}: a decision, a first token, a finished request), so the view of any past
 * moment is exact. Route events are applied lazily, when a request is routed (the only moment anyone
 * reads the tree). The real transport is tested against a real {@code redis-server} in {@code cart-redis}.
 *
 * <p>Failover: {@link ScaleOut#killInstance()} stops receiving requests at {@link ScaleOut#killAtNanos()};
 * the requests it already routed run to their end on the replicas (their leases close on its set), it
 * stops learning from the others, and its load stops counting a TTL after its death.
 *
 * <p>With one instance and no sync this routes exactly as a single router does (the balancer's randomness
 * is its own). Not thread-safe: one simulation run.
 */
final class Instances {

    /**
     * How the instances are run.
     *
     * @param instances         router instances behind the balancer
     * @param sync              whether they share routes and load
     * @param syncLagNanos      delay from an event's publication to its apply on the others
     * @param loadIntervalNanos how often each instance's load is snapshotted for the others
     * @param loadDelayNanos    how long after a snapshot the others count it
     * @param loadTtlNanos      how long a dead instance's last load still counts
     * @param killInstance      the instance that dies mid-run, or -1
     * @param killAtNanos       when it dies (virtual time)
     * @param wire              where to count the bytes the route events would take on the wire, or null
     */
    record ScaleOut(
            int instances,
            boolean sync,
            long syncLagNanos,
            long loadIntervalNanos,
            long loadDelayNanos,
            long loadTtlNanos,
            int killInstance,
            long killAtNanos,
            Wire wire) {

        static final ScaleOut SINGLE = new ScaleOut(1, false, 0, 0, 0, 0, -1, 0, null);

        ScaleOut {
            if (instances < 1) {
                throw new IllegalArgumentException("instances must be at least 1, was " + instances);
            }
            if (killInstance >= instances) {
                throw new IllegalArgumentException("no instance " + killInstance + " among " + instances);
            }
        }

        /**
         * {@code n} instances, sharing (route events 20 ms late; the others' load as it was 5 ms before;
         * 1 s TTL) or not.
         */
        static ScaleOut of(int n, boolean sync) {
            return new ScaleOut(n, sync, 20_000_000L, 0, 5_000_000L, 1_000_000_000L, -1, 0, null);
        }

        /** Route events this long after their publication. */
        ScaleOut syncLag(long nanos) {
            return new ScaleOut(
                    instances,
                    sync,
                    nanos,
                    loadIntervalNanos,
                    loadDelayNanos,
                    loadTtlNanos,
                    killInstance,
                    killAtNanos,
                    wire);
        }

        /**
         * The others' load seen as it was {@code delayNanos} before (published on change: {@code
         * intervalNanos} 0), or as it was at the last multiple of {@code intervalNanos}, {@code delayNanos}
         * before (polled).
         */
        ScaleOut loadTimed(long intervalNanos, long delayNanos) {
            return new ScaleOut(
                    instances,
                    sync,
                    syncLagNanos,
                    intervalNanos,
                    delayNanos,
                    loadTtlNanos,
                    killInstance,
                    killAtNanos,
                    wire);
        }

        ScaleOut killing(int instance, long atNanos) {
            return new ScaleOut(
                    instances,
                    sync,
                    syncLagNanos,
                    loadIntervalNanos,
                    loadDelayNanos,
                    loadTtlNanos,
                    instance,
                    atNanos,
                    wire);
        }

        /** Counting the route events' bytes on the wire into {@code w}. */
        ScaleOut counting(Wire w) {
            return new ScaleOut(
                    instances,
                    sync,
                    syncLagNanos,
                    loadIntervalNanos,
                    loadDelayNanos,
                    loadTtlNanos,
                    killInstance,
                    killAtNanos,
                    w);
        }
    }

    /**
     * What the route events of a run would take on the wire through {@code cart-redis}: every instance's
     * events batched and encoded as its publisher would ({@link RouteStreamMeter}, on the virtual clock),
     * and the blocks they taught: (replica, block) pairs no event had named before, over the pool. Replica
     * ids are written as {@code http://vllm-N.pool.svc:8000} (the simulator's own are shorter than a real
     * deployment's).
     */
    static final class Wire {
        long bytes;
        long entries;
        long events;
        long learnedBlocks;
        private final Map<String, java.util.Set<Long>> held = new HashMap<>();

        /** Bytes per learned block. */
        double perLearnedBlock() {
            return learnedBlocks == 0 ? Double.NaN : (double) bytes / learnedBlocks;
        }

        /** Events per stream entry. */
        double eventsPerEntry() {
            return entries == 0 ? Double.NaN : (double) events / entries;
        }

        void learned(RouteEvent.Learned l) {
            java.util.Set<Long> h = held.computeIfAbsent(l.replicaId(), x -> new java.util.HashSet<>());
            for (long b : l.blocks()) {
                if (h.add(b)) { // chained hashes: a block hash names its whole prefix
                    learnedBlocks++;
                }
            }
        }
    }

    private record Pending(long at, RouteEvent event) {}

    /** Every instance's load at virtual time {@code at}. */
    private record LoadSnapshot(long at, long[][] inFlight, long[][] pending) {}

    private final ScaleOut spec;
    private final VirtualClock clock;
    private final ManagedReplicaSet[] sets;
    private final Router[] routers;
    private final int replicas;
    private final Map<String, Integer> index = new HashMap<>();
    private final SplittableRandom balancer;
    private final ArrayDeque<Pending> bus = new ArrayDeque<>();
    private final List<RouteStreamMeter> meters = new ArrayList<>();
    /** {@code RedisRouteSync}'s default repeat interval. */
    static final Duration REPEAT_INTERVAL = Duration.ofSeconds(1);

    private final ArrayDeque<LoadSnapshot> loadBus = new ArrayDeque<>();
    /** Per instance, per replica: in-flight and pending prefill at the last snapshot the others count. */
    private long[][] inFlight;

    private long[][] pending;
    private boolean killed;
    private final int[] live;
    private int liveCount;

    /**
     * @param sets   one replica set per instance, members in the same order, ids alike
     * @param router builds instance {@code i}'s router over {@code sets[i]} with the given sync and remote load
     */
    Instances(
            ScaleOut spec,
            VirtualClock clock,
            ManagedReplicaSet[] sets,
            long seed,
            BiFunction<Integer, Router.Builder, Router> router) {
        this.spec = spec;
        this.clock = clock;
        this.sets = sets;
        this.replicas = sets[0].replicas().size();
        int n = spec.instances();
        this.routers = new Router[n];
        this.inFlight = new long[n][replicas];
        this.pending = new long[n][replicas];
        this.balancer = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + 17);
        List<ManagedReplicaSet.Member> first = sets[0].replicas();
        for (int k = 0; k < replicas; k++) {
            index.put(first.get(k).id(), k);
        }
        for (int i = 0; i < n; i++) {
            Router.Builder b = Router.builder();
            if (spec.sync() && n > 1) {
                b.sync(endpoint("sim-" + i)).remoteLoad(remoteLoad(i));
            }
            routers[i] = router.apply(i, b);
        }
        this.live = new int[n];
        for (int i = 0; i < n; i++) {
            live[i] = i;
        }
        this.liveCount = n;
    }

    private RouteSync endpoint(String origin) {
        RouteStreamMeter meter = spec.wire() == null ? null : new RouteStreamMeter(origin);
        if (meter != null) {
            meters.add(meter);
        }
        return new RouteSync() {
            @Override
            public String originId() {
                return origin;
            }

            @Override
            public void publish(RouteEvent event) {
                bus.addLast(new Pending(clock.nanos() + spec.syncLagNanos(), event));
                if (meter != null) {
                    RouteEvent wired = wireIds(event);
                    if (wired instanceof RouteEvent.Learned l) {
                        spec.wire().learned(l);
                    }
                    meter.publish(wired, clock.nanos());
                }
            }

            /** As {@code cart-redis} defaults it: a route published again only on its first use in a second. */
            @Override
            public Duration repeatInterval() {
                return REPEAT_INTERVAL;
            }
        };
    }

    /** The event with a deployment-like replica id. */
    private static RouteEvent wireIds(RouteEvent e) {
        if (e instanceof RouteEvent.Learned l) {
            return new RouteEvent.Learned(
                    l.origin(), l.timeMillis(), wireId(l.replicaId()), l.unit(), l.blockSize(), l.blocks());
        }
        if (e instanceof RouteEvent.Forgotten f) {
            return new RouteEvent.Forgotten(
                    f.origin(),
                    f.timeMillis(),
                    wireId(f.replicaId()),
                    f.unit(),
                    f.blockSize(),
                    f.blocks(),
                    f.keepBlocks());
        }
        if (e instanceof RouteEvent.ReplicaRemoved r) {
            return new RouteEvent.ReplicaRemoved(r.origin(), r.timeMillis(), wireId(r.replicaId()));
        }
        return e;
    }

    private static String wireId(String simId) {
        return "http://vllm-" + simId.substring(simId.lastIndexOf('-') + 1) + ".pool.svc:8000";
    }

    private RemoteLoad remoteLoad(int self) {
        return new RemoteLoad() {
            @Override
            public long inFlight(String replicaId) {
                return others(self, inFlight, replicaId);
            }

            @Override
            public long pendingPrefill(String replicaId) {
                return others(self, pending, replicaId);
            }
        };
    }

    private long others(int self, long[][] figures, String replicaId) {
        Integer k = index.get(replicaId);
        if (k == null) {
            return 0;
        }
        long sum = 0;
        for (int j = 0; j < figures.length; j++) {
            if (j != self) {
                sum += figures[j][k];
            }
        }
        return sum;
    }

    /** Routes {@code request} at virtual time {@code t} on a live instance chosen at random. */
    RouteDecision choose(long t, RouteRequest request) {
        advance(t);
        int i = liveCount == 1 ? live[0] : live[balancer.nextInt(liveCount)];
        RouteDecision d = routers[i].choose(request);
        changed(t);
        return d;
    }

    /** Instance {@code i}'s router. */
    Router router(int i) {
        return routers[i];
    }

    /** Applies what is due by {@code t}: the kill, route events, a load snapshot. */
    private void advance(long t) {
        if (!killed && spec.killInstance() >= 0 && t >= spec.killAtNanos()) {
            killed = true;
            int dead = spec.killInstance();
            int k = 0;
            for (int i = 0; i < liveCount; i++) {
                if (live[i] != dead) {
                    live[k++] = live[i];
                }
            }
            liveCount = k;
        }
        while (!bus.isEmpty() && bus.peekFirst().at() <= t) {
            RouteEvent e = bus.pollFirst().event();
            for (int i = 0; i < liveCount; i++) {
                routers[live[i]].applyRemote(e); // the origin skips its own
            }
        }
        if (spec.sync() && routers.length > 1) {
            long seen = spec.loadIntervalNanos() > 0 ? t - t % spec.loadIntervalNanos() : t;
            seen -= spec.loadDelayNanos();
            while (!loadBus.isEmpty() && loadBus.peekFirst().at() <= seen) {
                LoadSnapshot s = loadBus.pollFirst();
                inFlight = s.inFlight();
                pending = s.pending();
            }
        }
    }

    /**
     * Records every instance's load as it is at virtual time {@code t}: called after every change of a
     * count (a routing decision, a first token, a finished request), so the view of any past moment is
     * the last record at or before it.
     */
    void changed(long t) {
        if (!spec.sync() || routers.length == 1) {
            return;
        }
        long[][] f = new long[routers.length][];
        long[][] p = new long[routers.length][];
        LoadSnapshot last = loadBus.isEmpty() ? null : loadBus.peekLast();
        for (int i = 0; i < routers.length; i++) {
            boolean dead = killed && i == spec.killInstance();
            boolean expired = dead && t >= spec.killAtNanos() + spec.loadTtlNanos();
            f[i] = new long[replicas];
            p[i] = new long[replicas];
            List<ManagedReplicaSet.Member> ms = sets[i].replicas();
            for (int k = 0; k < replicas; k++) {
                if (!dead) {
                    f[i][k] = ms.get(k).inFlight();
                    p[i][k] = routers[i].pendingPrefill(ms.get(k));
                } else if (!expired) { // a dead instance's last write counts until its TTL
                    f[i][k] = (last != null ? last.inFlight() : inFlight)[i][k];
                    p[i][k] = (last != null ? last.pending() : pending)[i][k];
                }
            }
        }
        if (last != null && last.at() == t) {
            loadBus.pollLast(); // the same moment: keep the latest counts only
        }
        loadBus.addLast(new LoadSnapshot(t, f, p));
    }

    /** The pool's index (engine) of a replica of any instance's set. */
    int indexOf(Replica r) {
        Integer k = index.get(r.id());
        if (k == null) {
            throw new IllegalStateException("router chose a replica outside the pool: " + r.id());
        }
        return k;
    }

    /** The router whose set {@code r} belongs to. */
    Router routerOf(Replica r) {
        int k = indexOf(r);
        for (int i = 0; i < sets.length; i++) {
            if (sets[i].replicas().get(k) == r) {
                return routers[i];
            }
        }
        throw new IllegalStateException("a replica of no instance: " + r.id());
    }

    /** Requests in flight on the pool's replica {@code k}, over every instance. */
    int inFlight(int k) {
        int n = 0;
        for (ManagedReplicaSet s : sets) {
            n += s.replicas().get(k).inFlight();
        }
        return n;
    }

    /** The prefill every instance's router counts pending on replica {@code k} (its own member of each set). */
    long pendingPrefill(int k) {
        long n = 0;
        for (int i = 0; i < routers.length; i++) {
            n += routers[i].pendingPrefill(sets[i].replicas().get(k));
        }
        return n;
    }

    int totalInFlight() {
        int n = 0;
        for (ManagedReplicaSet s : sets) {
            n += s.totalInFlight();
        }
        return n;
    }

    void close() {
        for (Router r : routers) {
            r.close();
        }
        for (RouteStreamMeter m : meters) {
            m.flush();
            spec.wire().bytes += m.bytes();
            spec.wire().entries += m.entries();
            spec.wire().events += m.events();
        }
        meters.clear();
    }
}
