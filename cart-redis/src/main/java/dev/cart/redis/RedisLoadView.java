package dev.cart.redis;

import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.sync.RemoteLoad;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The load the other router instances have on each replica, published on change through Redis pub/sub.
 *
 * <h2>How</h2>
 * A daemon thread reads this instance's per-replica in-flight count and pending prefill every
 * {@value #GAP_MILLIS} ms (a few memory reads) and {@code PUBLISH}es them on the pool's channel
 * {@code <pool>:load} whenever they changed since the last message, and at least every {@code interval}
 * when they did not (a heartbeat). The router tells it when this instance's load changes
 * ({@link #localLoadChanged}): a change after a quiet spell wakes the thread and is published at once,
 * while a busy instance publishes at most once per {@value #GAP_MILLIS} ms. Every instance subscribes to the channel and keeps, per other origin,
 * its last figures and when they arrived; the view is their sum over the origins heard from within
 * {@code ttl}. So the others' load is as old as a Redis round trip (plus at most {@value #GAP_MILLIS} ms
 * while busy, or when the host does not tell the view of changes), not a polling interval, an instance that dies stops counting within the TTL, and the TTL runs on this
 * instance's clock (no clock skew between hosts). The cost is one {@code PUBLISH} per change, at most one
 * per {@value #GAP_MILLIS} ms per instance while busy, one per interval while idle.
 *
 * <p>Why on change: in the simulation (docs/scale-out.md) a view polled every 100 ms let 4 to 8 instances
 * herd onto the same replica between two reads (P99 TTFT up to 1.8x one instance's); published on change
 * and seen 5 ms late, the herd is mostly gone.
 *
 * <p>Message: {@code v1 <origin>} then one line per replica, {@code <replica id> <in flight> <pending
 * prefill>}. Malformed messages and those of other versions are ignored. Pub/sub keeps nothing: an
 * instance that starts hears every live one within an interval.
 *
 * <p>Concurrency: {@link #remoteInFlight} and {@link #remotePendingPrefill} read a map that is replaced
 * whole (lock-free, no Redis call: they are on the request path). Messages arrive on Lettuce's event loop;
 * the map is rebuilt under a lock there and by the publisher thread every interval (dropping origins not
 * heard from within the TTL, Redis reachable or not). When Redis cannot be reached, nothing arrives and
 * the view empties within the TTL: a view too old to trust is not used.
 *
 * <p>As a {@link RemoteLoad} ({@code Router.Builder.remoteLoad}) it makes the router's policies weigh
 * each replica's load as this instance's exact count plus these sums.
 */
public final class RedisLoadView implements RemoteLoad, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RedisLoadView.class);
    /** How often the publisher looks at this instance's counts: the most a change waits to be published. */
    static final long GAP_MILLIS = 2;

    private static final String VERSION = "v1";

    private final RedisEndpoint.Client client;
    private final String where;
    /** Told when the publisher thread loses or regains Redis; logs once each way. */
    private final Outage outage;

    private final String channel;
    private final String origin;
    private final long intervalNanos;
    private final long ttlNanos;
    private final ReplicaSet replicas;
    /** This instance's pending prefill per replica, as its router counts it ({@link #localPendingPrefill}). */
    private volatile ToLongFunction<Replica> localPending = r -> 0;

    private final Map<String, Heard> heard = new HashMap<>(); // guarded by itself
    private volatile Snapshot snapshot = new Snapshot(Map.of(), 0);
    private volatile boolean running;
    /** True while the thread waits for its next look and a change may wake it ({@link #localLoadChanged}). */
    private volatile boolean waiting;

    private final LongAdder published = new LongAdder();
    private final LongAdder received = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private boolean closed;
    private volatile @Nullable Thread thread;

    /** Sums per replica id of the other live instances' figures, and how many they are. */
    private record Snapshot(Map<String, long[]> load, int peers) {}

    /** One origin's last figures and when they arrived (nanoTime). */
    private record Heard(Map<String, long[]> load, long atNanos) {}

    private RedisLoadView(Builder b) {
        String uri = Objects.requireNonNull(b.uri); // checked by build()
        this.where = RedisEndpoint.where(uri);
        this.outage = new Outage(LOG, "load view", where, 1, System::nanoTime);
        this.channel = b.pool + ":load";
        this.origin = RedisEndpoint.origin(b.instanceId);
        this.intervalNanos = b.interval.toNanos();
        this.ttlNanos = b.ttl.toNanos();
        this.replicas = Objects.requireNonNull(b.replicas);
        this.client = RedisEndpoint.client(uri, b.commandTimeout);
    }

    /**
     * Starts building a load view.
     *
     * @return a builder; {@link Builder#uri} and {@link Builder#replicas} are required
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts the publisher thread (which also subscribes); returns at once whether or not Redis answers.
     *
     * @return this view
     * @throws IllegalStateException if it was started before
     */
    public synchronized RedisLoadView start() {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        running = true;
        Thread t = new Thread(this::loop, "cart-redis-load");
        t.setDaemon(true);
        thread = t;
        t.start();
        return this;
    }

    /**
     * Requests the other live instances have in flight on one replica. Lock-free; any thread.
     *
     * @param replicaId the replica's {@link dev.cart.core.spi.Replica#id() id}
     * @return their sum over the instances heard from within the TTL, 0 if none
     */
    public long remoteInFlight(String replicaId) {
        long[] v = snapshot.load().get(replicaId);
        return v == null ? 0 : v[0];
    }

    /**
     * Pending prefill units the other live instances have routed to one replica. Lock-free; any thread.
     *
     * @param replicaId the replica's {@link dev.cart.core.spi.Replica#id() id}
     * @return their sum over the instances heard from within the TTL, 0 if none
     */
    public long remotePendingPrefill(String replicaId) {
        long[] v = snapshot.load().get(replicaId);
        return v == null ? 0 : v[1];
    }

    /** {@link RemoteLoad}: the same as {@link #remoteInFlight}. */
    @Override
    public long inFlight(String replicaId) {
        return remoteInFlight(replicaId);
    }

    /**
     * {@link RemoteLoad}: this instance's load just changed (the router calls it on every slot taken or given
     * back and every prefill done). Wakes the publisher thread if it is waiting for its next look, so a
     * change after a quiet spell is published at once instead of up to {@value #GAP_MILLIS} ms later; while
     * busy the thread publishes at most once per {@value #GAP_MILLIS} ms whatever the calls. A read of one
     * volatile field, and an unpark only when the thread waits.
     */
    @Override
    public void localLoadChanged() {
        if (waiting) {
            Thread t = thread;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    /** {@link RemoteLoad}: the same as {@link #remotePendingPrefill}. */
    @Override
    public long pendingPrefill(String replicaId) {
        return remotePendingPrefill(replicaId);
    }

    /**
     * {@link RemoteLoad}: where this instance's pending prefill is read for publishing (the router built with
     * this view hands it over; until then it publishes 0).
     *
     * @param source the router's figure for one replica
     */
    @Override
    public void localPendingPrefill(ToLongFunction<Replica> source) {
        localPending = Objects.requireNonNull(source);
    }

    /**
     * This instance's origin id, which the others see its figures under.
     *
     * @return its instance id and a random suffix, new for each view
     */
    public String originId() {
        return origin;
    }

    /**
     * How many other instances this one hears.
     *
     * @return the instances heard from within the TTL, this one not counted
     */
    public int peers() {
        return snapshot.peers();
    }

    /** Messages this instance published, received from others, and ignored as malformed, since it started. */
    long[] messages() {
        return new long[] {published.sum(), received.sum(), malformed.sum()};
    }

    private void loop() {
        StatefulRedisConnection<String, String> pub = null;
        StatefulRedisPubSubConnection<String, String> sub = null;
        long[] last = null;
        long lastSent = 0;
        long lastRebuild = System.nanoTime();
        long nextConnect = 0;
        long gapNanos = TimeUnit.MILLISECONDS.toNanos(GAP_MILLIS);
        List<String> ids = new ArrayList<>();
        long[] now = new long[0];
        while (running) {
            long t = System.nanoTime();
            if ((pub == null || sub == null) && t - nextConnect >= 0) {
                try {
                    if (pub == null) {
                        pub = client.redis().connect();
                    }
                    if (sub == null) {
                        sub = subscribe();
                    }
                    outage.up(0);
                } catch (RuntimeException e) {
                    warn(e);
                    nextConnect = t + intervalNanos;
                }
            }
            ids.clear();
            List<? extends Replica> rs = replicas.replicas();
            if (now.length != 2 * rs.size()) {
                now = new long[2 * rs.size()];
            }
            ToLongFunction<Replica> pending = localPending;
            for (int i = 0; i < rs.size(); i++) {
                Replica r = rs.get(i);
                ids.add(r.id());
                now[2 * i] = r.inFlight();
                now[2 * i + 1] = pending.applyAsLong(r);
            }
            boolean changed = last == null || !Arrays.equals(last, now);
            boolean sent = false;
            if (pub != null && (changed || t - lastSent >= intervalNanos)) {
                try {
                    pub.sync().publish(channel, encode(ids, now));
                    published.increment();
                    last = now.clone();
                    sent = true;
                    outage.up(0);
                } catch (RuntimeException e) {
                    warn(e);
                }
                lastSent = t; // after a failure: retried at the next change or heartbeat; the client reconnects
            }
            if (t - lastRebuild >= intervalNanos) {
                rebuild(t);
                lastRebuild = t;
            }
            if (sent) { // at most one PUBLISH per gap, whatever wakes the thread
                for (long rest = gapNanos; rest > 0 && running; rest = t + gapNanos - System.nanoTime()) {
                    LockSupport.parkNanos(rest);
                }
            } else {
                waiting = true; // the router's localLoadChanged() wakes it before the gap is over
                LockSupport.parkNanos(gapNanos);
                waiting = false;
            }
        }
        if (pub != null) {
            var unused = pub.closeAsync(); // closing: nothing to wait for
        }
        if (sub != null) {
            var unused = sub.closeAsync();
        }
    }

    private StatefulRedisPubSubConnection<String, String> subscribe() {
        StatefulRedisPubSubConnection<String, String> c = client.redis().connectPubSub();
        c.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String ch, String message) {
                if (channel.equals(ch)) {
                    heard(message);
                }
            }
        });
        try {
            c.sync().subscribe(channel); // Lettuce subscribes again by itself after a reconnect
        } catch (RuntimeException e) {
            var unused = c.closeAsync();
            throw e;
        }
        return c;
    }

    private void warn(RuntimeException e) {
        outage.down(
                0,
                RedisEndpoint.cause(e) + "; the others' load counts as 0 after "
                        + TimeUnit.NANOSECONDS.toMillis(ttlNanos) + " ms");
    }

    private String encode(List<String> ids, long[] figures) {
        StringBuilder b = new StringBuilder(32 + 48 * ids.size())
                .append(VERSION)
                .append(' ')
                .append(origin);
        for (int i = 0; i < ids.size(); i++) {
            b.append('\n')
                    .append(ids.get(i))
                    .append(' ')
                    .append(figures[2 * i])
                    .append(' ')
                    .append(figures[2 * i + 1]);
        }
        return b.toString();
    }

    /** One message from the channel (Lettuce's event loop). */
    private void heard(String message) {
        String[] lines = message.split("\n", -1);
        String head = lines[0];
        if (!head.startsWith(VERSION + " ") || head.length() <= VERSION.length() + 1) {
            malformed.increment();
            return;
        }
        String from = head.substring(VERSION.length() + 1);
        if (from.equals(origin)) {
            return;
        }
        Map<String, long[]> load = new HashMap<>();
        for (int i = 1; i < lines.length; i++) {
            String l = lines[i];
            int b = l.lastIndexOf(' ');
            int a = b > 0 ? l.lastIndexOf(' ', b - 1) : -1;
            try {
                if (a <= 0) {
                    throw new NumberFormatException();
                }
                load.put(l.substring(0, a), new long[] {
                    Long.parseLong(l.substring(a + 1, b)), Long.parseLong(l.substring(b + 1))
                });
            } catch (NumberFormatException e) {
                malformed.increment();
                return;
            }
        }
        received.increment();
        long t = System.nanoTime();
        synchronized (heard) {
            heard.put(from, new Heard(load, t));
        }
        rebuild(t);
    }

    /** Sums the figures of the origins heard from within the TTL, forgetting the others. */
    private void rebuild(long t) {
        synchronized (heard) {
            heard.values().removeIf(h -> t - h.atNanos() > ttlNanos);
            Map<String, long[]> sum = new HashMap<>();
            for (Heard h : heard.values()) {
                for (Map.Entry<String, long[]> e : h.load().entrySet()) {
                    long[] acc = sum.computeIfAbsent(e.getKey(), k -> new long[2]);
                    acc[0] += Math.max(0, e.getValue()[0]);
                    acc[1] += Math.max(0, e.getValue()[1]);
                }
            }
            snapshot = new Snapshot(Map.copyOf(sum), heard.size());
        }
    }

    /** Stops the thread and closes the connections; the others forget this instance within their TTL. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        running = false;
        if (thread != null) {
            LockSupport.unpark(thread);
            try {
                thread.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        client.shutdown();
    }

    /** Builds a {@link RedisLoadView}; the URI and the replica set are required. */
    public static final class Builder {
        private @Nullable String uri;
        private String pool = "cart:routes";
        private @Nullable String instanceId;
        private @Nullable ReplicaSet replicas;
        private Duration interval = Duration.ofMillis(100);
        private Duration ttl = Duration.ofSeconds(1);
        private Duration commandTimeout = Duration.ofSeconds(2);

        private Builder() {}

        /**
         * The Redis to use, as {@link RedisRouteSync.Builder#uri}; never logged. Required.
         *
         * @param uri {@code redis://} or {@code rediss://} (TLS), the password in it if any
         * @return this builder
         * @throws IllegalArgumentException if it is not a Redis URI
         */
        public Builder uri(String uri) {
            this.uri = RedisEndpoint.checked(uri);
            return this;
        }

        /**
         * The pool's name, the same on every instance (the route stream's name does well). Default
         * {@code cart:routes}.
         *
         * @param pool the name; the pub/sub channel is {@code <pool>:load}
         * @return this builder
         * @throws IllegalArgumentException if it is empty or blank
         */
        public Builder pool(String pool) {
            if (pool == null || pool.isBlank()) {
                throw new IllegalArgumentException("the pool name must not be empty");
            }
            this.pool = pool;
            return this;
        }

        /**
         * This instance's name in the others' figures and logs. Default {@code host:pid}.
         *
         * @param id the name (a random suffix is added per start)
         * @return this builder
         */
        public Builder instanceId(String id) {
            this.instanceId = Objects.requireNonNull(id);
            return this;
        }

        /**
         * Whose load this instance publishes. Required.
         *
         * @param replicas the router's replica set, read at most every {@value RedisLoadView#GAP_MILLIS} ms
         * @return this builder
         */
        public Builder replicas(ReplicaSet replicas) {
            this.replicas = Objects.requireNonNull(replicas);
            return this;
        }

        /**
         * How often the load is published when it has not changed (a heartbeat; default 100 ms). Every
         * change is published at once (at most every {@value RedisLoadView#GAP_MILLIS} ms).
         *
         * @param interval the heartbeat interval, positive
         * @return this builder
         * @throws IllegalArgumentException if it is zero or negative
         */
        public Builder interval(Duration interval) {
            if (interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("the load interval must be positive");
            }
            this.interval = interval;
            return this;
        }

        /**
         * How long an instance's figures count after they arrived (default 1 s).
         *
         * @param ttl positive, and at least twice the {@link #interval} (checked by {@link #build})
         * @return this builder
         * @throws IllegalArgumentException if it is zero or negative
         */
        public Builder ttl(Duration ttl) {
            if (ttl.isNegative() || ttl.isZero()) {
                throw new IllegalArgumentException("the load TTL must be positive");
            }
            this.ttl = ttl;
            return this;
        }

        /**
         * Builds the view (it makes its Redis client but connects only at {@link RedisLoadView#start}).
         *
         * @return a view, not started
         * @throws IllegalStateException if the URI or the replica set is missing, or the TTL is shorter than
         *     twice the interval
         */
        public RedisLoadView build() {
            if (uri == null || replicas == null) {
                throw new IllegalStateException("a load view needs a URI and a replica set");
            }
            if (ttl.compareTo(interval.multipliedBy(2)) < 0) {
                throw new IllegalStateException("the load TTL must be at least twice the interval");
            }
            return new RedisLoadView(this);
        }
    }
}
