package dev.cart.redis;

import dev.cart.core.RemoteLoad;
import dev.cart.core.Replica;
import dev.cart.core.ReplicaSet;
import io.lettuce.core.Range;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The load the other router instances have on each replica: every instance writes its own per-replica
 * in-flight count and pending prefill every {@code interval} to a Redis hash that expires after
 * {@code ttl}, and sums the hashes of the others. An instance that dies stops counting within the TTL
 * (the key expires on Redis's clock, so clock skew between hosts does not matter).
 *
 * <p>Keys: {@code <pool>:load:<origin>} (a hash: replica id to {@code "inFlight pendingPrefill"}) and
 * {@code <pool>:load} (a sorted set of origins by last write, to find the hashes without a SCAN; entries
 * older than a minute are removed). One daemon thread does all Redis work; {@link #remoteInFlight} and
 * {@link #remotePendingPrefill} read a map it replaces whole, so they are lock-free and make no Redis
 * call. When Redis cannot be reached for longer than the TTL, the view is empty (remote load 0): a view
 * too old to trust is not used.
 *
 * <p>As a {@link RemoteLoad} ({@code Router.Builder.remoteLoad}) it makes the router's policies weigh
 * each replica's load as this instance's exact count plus these sums: the figures of the others are at
 * most one interval (plus a Redis round trip) old.
 */
public final class RedisLoadView implements RemoteLoad, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RedisLoadView.class);

    private final RedisClient client;
    private final String where;
    private final String registry;
    private final String prefix;
    private final String origin;
    private final long intervalNanos;
    private final long ttlMillis;
    private final ReplicaSet replicas;
    private volatile Snapshot snapshot = new Snapshot(Map.of(), 0, 0);
    private volatile boolean running;
    private volatile boolean warned;
    private boolean closed;
    private Thread thread;

    /** Sums per replica id of the other instances' figures, and when they were read (nanoTime). */
    private record Snapshot(Map<String, long[]> load, long readAtNanos, int peers) {}

    private RedisLoadView(Builder b) {
        this.where = RedisEndpoint.where(b.uri);
        this.registry = b.pool + ":load";
        this.prefix = b.pool + ":load:";
        this.origin = RedisEndpoint.origin(b.instanceId);
        this.intervalNanos = b.interval.toNanos();
        this.ttlMillis = b.ttl.toMillis();
        this.replicas = b.replicas;
        this.client = RedisEndpoint.client(b.uri, b.commandTimeout);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Starts the writer/reader thread; returns at once whether or not Redis is reachable. */
    public synchronized RedisLoadView start() {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        running = true;
        thread = new Thread(this::loop, "cart-redis-load");
        thread.setDaemon(true);
        thread.start();
        return this;
    }

    /** Requests the other live instances have in flight on the replica with this id (0 if none). */
    public long remoteInFlight(String replicaId) {
        long[] v = fresh().get(replicaId);
        return v == null ? 0 : v[0];
    }

    /** Pending prefill units the other live instances have routed to the replica with this id. */
    public long remotePendingPrefill(String replicaId) {
        long[] v = fresh().get(replicaId);
        return v == null ? 0 : v[1];
    }

    /** {@link RemoteLoad}: the same as {@link #remoteInFlight}. */
    @Override
    public long inFlight(String replicaId) {
        return remoteInFlight(replicaId);
    }

    /** {@link RemoteLoad}: the same as {@link #remotePendingPrefill}. */
    @Override
    public long pendingPrefill(String replicaId) {
        return remotePendingPrefill(replicaId);
    }

    /** This instance's origin id in the registry (its instance id and a random suffix per start). */
    public String originId() {
        return origin;
    }

    /** Other instances whose load was read in the last refresh (0 when the view is too old). */
    public int peers() {
        Snapshot s = snapshot;
        return fresh() == s.load() ? s.peers() : 0;
    }

    private Map<String, long[]> fresh() {
        Snapshot s = snapshot;
        return System.nanoTime() - s.readAtNanos() <= TimeUnit.MILLISECONDS.toNanos(ttlMillis) ? s.load() : Map.of();
    }

    private void loop() {
        StatefulRedisConnection<String, String> conn = null;
        long next = System.nanoTime();
        while (running) {
            try {
                if (conn == null) {
                    conn = client.connect();
                }
                tick(conn.sync());
                if (warned) {
                    warned = false;
                    LOG.info("load view connected to Redis at {}", where);
                }
            } catch (RuntimeException e) {
                if (!warned) {
                    warned = true;
                    LOG.warn(
                            "load view cannot reach Redis at {} ({}); remote load counts as 0 after {} ms",
                            where,
                            e.getClass().getSimpleName(),
                            ttlMillis);
                }
            }
            next += intervalNanos;
            long wait = next - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait);
            } else {
                next = System.nanoTime();
            }
        }
        if (conn != null) {
            var unused = conn.closeAsync(); // closing: nothing to wait for
        }
    }

    private void tick(RedisCommands<String, String> c) {
        Map<String, String> mine = new HashMap<>();
        for (Replica r : replicas.replicas()) {
            mine.put(r.id(), r.inFlight() + " " + r.pendingPrefill());
        }
        String key = prefix + origin;
        // one transaction: readers never see the hash half-written, and a replica gone from the pool
        // leaves it at once
        c.multi();
        c.del(key);
        if (!mine.isEmpty()) {
            c.hset(key, mine);
            c.pexpire(key, ttlMillis);
        }
        c.exec();
        long now = System.currentTimeMillis();
        c.zadd(registry, now, origin);
        c.zremrangebyscore(registry, Range.create(Double.NEGATIVE_INFINITY, (double) now - 60_000));
        List<String> origins = c.zrangebyscore(registry, Range.create((double) now - 60_000, Double.POSITIVE_INFINITY));
        Map<String, long[]> sum = new HashMap<>();
        int peers = 0;
        for (String o : origins) {
            if (o.equals(origin)) {
                continue;
            }
            Map<String, String> theirs = c.hgetall(prefix + o); // empty once expired: a dead instance
            if (theirs.isEmpty()) {
                continue;
            }
            peers++;
            for (Map.Entry<String, String> e : theirs.entrySet()) {
                long[] v = parse(e.getValue());
                if (v != null) {
                    long[] acc = sum.computeIfAbsent(e.getKey(), k -> new long[2]);
                    acc[0] += v[0];
                    acc[1] += v[1];
                }
            }
        }
        snapshot = new Snapshot(Map.copyOf(sum), System.nanoTime(), peers);
    }

    private static long[] parse(String v) {
        int sp = v.indexOf(' ');
        try {
            return sp < 0 ? null : new long[] {Long.parseLong(v.substring(0, sp)), Long.parseLong(v.substring(sp + 1))};
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Stops the thread and closes the connection. The key is left to expire (as a crash would leave it). */
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
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    /** Builds a {@link RedisLoadView}; the URI and the replica set are required. */
    public static final class Builder {
        private String uri;
        private String pool = "cart:routes";
        private String instanceId;
        private ReplicaSet replicas;
        private Duration interval = Duration.ofMillis(100);
        private Duration ttl = Duration.ofSeconds(1);
        private Duration commandTimeout = Duration.ofSeconds(2);

        private Builder() {}

        /** The Redis URI (as {@link RedisRouteSync.Builder#uri}); never logged. */
        public Builder uri(String uri) {
            this.uri = RedisEndpoint.checked(uri);
            return this;
        }

        /** The key prefix of this pool (same on every instance; the route stream's name does well). */
        public Builder pool(String pool) {
            if (pool == null || pool.isBlank()) {
                throw new IllegalArgumentException("the pool name must not be empty");
            }
            this.pool = pool;
            return this;
        }

        public Builder instanceId(String id) {
            this.instanceId = Objects.requireNonNull(id);
            return this;
        }

        /** Whose load this instance publishes: its replica set (read every interval). */
        public Builder replicas(ReplicaSet replicas) {
            this.replicas = Objects.requireNonNull(replicas);
            return this;
        }

        /** How often the load is written and read (default 100 ms). */
        public Builder interval(Duration interval) {
            if (interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("the load interval must be positive");
            }
            this.interval = interval;
            return this;
        }

        /** How long an instance's figures count after its last write (default 1 s; more than the interval). */
        public Builder ttl(Duration ttl) {
            if (ttl.isNegative() || ttl.isZero()) {
                throw new IllegalArgumentException("the load TTL must be positive");
            }
            this.ttl = ttl;
            return this;
        }

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
