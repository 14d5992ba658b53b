package dev.cart.redis;

import dev.cart.core.sync.RouteEvent;
import dev.cart.core.sync.RouteSync;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.StreamMessage;
import io.lettuce.core.XAddArgs;
import io.lettuce.core.XReadArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shares route events between router instances through one Redis Stream per pool.
 *
 * <h2>How</h2>
 * <ul>
 *   <li>{@link #publish} (the request path) only offers the event to a bounded in-memory buffer; when the
 *       buffer is full the oldest event is dropped and counted. No Redis call is ever made there.</li>
 *   <li>A publisher thread takes events from the buffer in batches (up to {@code batchEvents}, or what
 *       arrived within {@code batchDelay} of the first) and writes each batch as <em>one</em> stream entry
 *       ({@link RouteEventCodec}: a key as a reference to an earlier key of this writer plus the new
 *       blocks, replica ids once per entry) with one {@code XADD ... MAXLEN ~ cap}. One entry per batch
 *       rather than one per event: the header and replica ids are paid once, and the stream's cap counts
 *       batches. After Redis was away the writer starts a new epoch of key references.
 *       A learned route repeated within {@code repeatInterval} (a hot prefix refreshed on every request)
 *       is written once (the router already leaves most of them out: {@link #repeatInterval()}). When Redis is down or slow the batch waits and is retried with backoff; new
 *       events keep filling the buffer meanwhile, and are written once Redis is back.</li>
 *   <li>A tailer thread first replays the retained window ({@code XRANGE} in pages) so a new or
 *       restarted instance starts warm, then follows the stream with {@code XREAD BLOCK}. It skips the
 *       entries of its own origin, hands every other event to the applier (normally
 *       {@code Router::applyRemote}), and counts entries that do not decode as malformed, and events whose
 *       key extends one in an entry it never read as unresolved. Every batch
 *       carries its origin's batch number: a batch read twice (an XADD retried after a lost reply) is
 *       applied once, and a jump (the stream trimmed past this reader's position, or entries lost with a
 *       Redis restart) is counted as a gap; reading goes on from what is left.</li>
 * </ul>
 *
 * <h2>Threads and failure</h2>
 * Two daemon threads, each with its own connection, which Lettuce reconnects after a loss (attempts 50 ms
 * to 2 s apart); the threads retry their commands with exponential backoff (50 ms to 2 s, or to 250 ms
 * while the connection is being reconnected, when a rejected command costs nothing). An outage is logged
 * once when it begins and once when it ends, with its duration ({@code Outage}). Redis being absent, killed, restarted or slow costs freshness only: routing reads local memory.
 * The applier is called on the tailer thread; an exception it throws is logged and the tailer goes on.
 * Logs name the Redis host and port only, never the URI (it may carry a password).
 */
public final class RedisRouteSync implements RouteSync, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RedisRouteSync.class);
    /** The one field of a stream entry; its value is an encoded batch. */
    static final String FIELD = "b";

    private static final RedisCodec<String, byte[]> CODEC = RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE);
    private static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(2);
    /**
     * The longest wait after a command the client rejected because its connection is down and Lettuce is
     * reconnecting it: such a rejection costs no I/O, and Lettuce's own attempts (at most
     * {@link RedisEndpoint#LAST_RECONNECT} apart) pace the network, so the thread checks often enough to use
     * the connection soon after it is back.
     */
    private static final long REJECTED_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private static final int REPLAY_PAGE = 512;
    private static final long PEER_WINDOW_MILLIS = 60_000;

    private final RedisEndpoint.Client client;
    private final String where;
    /** The outage the publisher (part 0) and the tailer (part 1) report to; logged once each way. */
    private final Outage outage;

    private final String stream;
    private final String origin;
    private final long maxLen;
    private final int batchEvents;
    private final long batchDelayNanos;
    private final long repeatMillis;
    private final long blockMillis;
    private final boolean replay;
    /**
     * Events waiting to be written: a lock-free queue bounded by {@link #bufferEvents} through
     * {@link #buffered}. {@link #publish} is on the request path: it never takes a lock and wakes the
     * publisher thread only when that thread waits for what was just offered ({@link #wakeAt}): the first
     * event of a batch, or the one that fills a batch; the events in between cost no wake-up.
     */
    private final ConcurrentLinkedQueue<RouteEvent> buffer = new ConcurrentLinkedQueue<>();

    private final int bufferEvents;
    private final AtomicInteger buffered = new AtomicInteger();
    /** How many buffered events the waiting publisher thread wants before it is woken; MAX_VALUE: none. */
    private volatile int wakeAt = Integer.MAX_VALUE;

    private final LongAdder published = new LongAdder();
    private final LongAdder batches = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder dropped = new LongAdder();
    private final LongAdder repeats = new LongAdder();
    private final LongAdder applied = new LongAdder();
    private final LongAdder ownSkipped = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private final LongAdder gaps = new LongAdder();
    private final LongAdder lost = new LongAdder();
    private final LongAdder duplicates = new LongAdder();
    private final LongAdder unresolved = new LongAdder();
    /** Per origin, the last batch number read and the keys of its current epoch (tailer thread only). */
    private final RouteEventCodec.Decoder decoder;

    /** Per origin, when an entry of it was last read (written by the tailer, read by {@link #peers}). */
    private final Map<String, Long> peersSeen = new ConcurrentHashMap<>();

    private final SyncLag lag = new SyncLag();
    private final AtomicInteger pendingEvents = new AtomicInteger();
    private final AtomicLong lastLag = new AtomicLong();
    private final AtomicLong maxLag = new AtomicLong();
    private volatile boolean publisherUp;
    private volatile boolean tailerUp;
    private volatile boolean running;
    private volatile boolean started;
    private boolean closed;
    private volatile @Nullable Consumer<? super RouteEvent> applier;
    private volatile @Nullable Thread publisherThread;
    private @Nullable Thread tailerThread;

    private RedisRouteSync(Builder b) {
        this.where = RedisEndpoint.where(Objects.requireNonNull(b.uri)); // checked by build()
        this.outage = new Outage(LOG, "route sync", where, 2, System::nanoTime);
        this.stream = b.stream;
        this.origin = RedisEndpoint.origin(b.instanceId);
        this.decoder = new RouteEventCodec.Decoder(origin);
        this.maxLen = b.maxLen;
        this.batchEvents = b.batchEvents;
        this.batchDelayNanos = b.batchDelay.toNanos();
        this.repeatMillis = b.repeatInterval.toMillis();
        this.blockMillis = b.readBlock.toMillis();
        this.replay = b.replay;
        this.bufferEvents = b.bufferEvents;
        this.client = RedisEndpoint.client(b.uri, b.commandTimeout);
    }

    /**
     * Starts building a route sync.
     *
     * @return a builder; {@link Builder#uri} is required
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public String originId() {
        return origin;
    }

    /**
     * The repeat interval ({@link Builder#repeatInterval}): the router publishes a route it already held
     * only on its first use in each such window, so most of a busy router's decisions (refreshes of hot
     * routes) build no event at all; the publisher thread drops the repeats that still arrive.
     */
    @Override
    public Duration repeatInterval() {
        return Duration.ofMillis(repeatMillis);
    }

    /**
     * Enqueues the event; drops the oldest buffered one (counted) if the buffer is full. Never blocks or
     * takes a lock.
     */
    @Override
    public void publish(RouteEvent event) {
        Objects.requireNonNull(event, "event");
        buffer.offer(event);
        int n = buffered.incrementAndGet();
        while (n > bufferEvents) {
            if (buffer.poll() == null) {
                break;
            }
            dropped.increment();
            n = buffered.decrementAndGet();
        }
        if (n >= wakeAt) {
            Thread t = publisherThread;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    /** The next buffered event, or null. */
    private RouteEvent take() {
        RouteEvent e = buffer.poll();
        if (e != null) {
            buffered.decrementAndGet();
        }
        return e;
    }

    /**
     * Parks the publisher thread until {@code count} events are buffered, {@code nanos} have passed, or it
     * is unparked (closing); returns at once when they already are.
     */
    private void awaitBuffered(int count, long nanos) {
        wakeAt = count;
        try {
            if (buffered.get() < count && running) {
                LockSupport.parkNanos(this, nanos);
            }
        } finally {
            wakeAt = Integer.MAX_VALUE;
        }
    }

    /**
     * Starts the publisher and the tailer; the tailer hands other instances' events to {@code applier}
     * (normally {@code router::applyRemote}) on its own thread. Returns at once, whether or not Redis is
     * reachable.
     *
     * @param applier called with each event of another instance, on the tailer thread; an exception it
     *     throws is logged and the tailer goes on
     * @return this sync
     * @throws IllegalStateException if it was started before
     */
    public synchronized RedisRouteSync start(Consumer<? super RouteEvent> applier) {
        if (started) {
            throw new IllegalStateException("already started");
        }
        this.applier = Objects.requireNonNull(applier, "applier");
        started = true;
        running = true;
        publisherThread = daemon(this::publishLoop, "cart-redis-publisher");
        tailerThread = daemon(this::tailLoop, "cart-redis-tailer");
        LOG.info("route sync on stream {} at {} as {}", stream, where, origin);
        return this;
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * What this sync has done since it was built. Any thread.
     *
     * @return a snapshot of its counters, its lags and its connection state
     */
    public RedisSyncStats stats() {
        return new RedisSyncStats(
                published.sum(),
                batches.sum(),
                bytes.sum(),
                dropped.sum(),
                repeats.sum(),
                buffered.get() + (long) pendingEvents.get(),
                applied.sum(),
                ownSkipped.sum(),
                malformed.sum(),
                duplicates.sum(),
                gaps.sum(),
                lost.sum(),
                unresolved.sum(),
                lastLag.get(),
                maxLag.get(),
                publisherUp && tailerUp,
                peers());
    }

    /**
     * Lags of the other instances' events applied here while tailing in the last minute: from the time the
     * publishing router recorded the event to its apply here (see {@link SyncLag}).
     *
     * @return the lags of the last minute
     */
    public SyncLag.Snapshot lag() {
        return lag.snapshot();
    }

    /** The outage state its threads report to (tests). */
    Outage outage() {
        return outage;
    }

    /**
     * The same lags as {@link #lag()}, since this sync was built.
     *
     * @return the lags of every event applied while tailing
     */
    public SyncLag.Snapshot lagTotal() {
        return lag.total();
    }

    /**
     * How many other instances this one hears.
     *
     * @return the origins whose entries this instance read in the last minute
     */
    public int peers() {
        long since = System.currentTimeMillis() - PEER_WINDOW_MILLIS;
        peersSeen.values().removeIf(t -> t < since);
        return peersSeen.size();
    }

    /**
     * Where {@code uri} points, as logs may show it: {@code host:port}, and " (TLS)" for {@code rediss://};
     * never the password or the user.
     *
     * @param uri a Redis URI, as {@link Builder#uri} takes it
     * @return {@code host:port}, with " (TLS)" for {@code rediss://}
     * @throws IllegalArgumentException (not quoting the URI) when it does not parse
     */
    public static String describeUri(String uri) {
        return RedisEndpoint.describe(uri);
    }

    /**
     * The stream this instance writes and reads.
     *
     * @return its name, as {@link Builder#stream} set it
     */
    public String stream() {
        return stream;
    }

    /**
     * Stops both threads: the publisher writes what is buffered if Redis takes it within a second, the
     * tailer stops after its current read. Then closes the connections.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!running) {
            client.shutdown();
            return;
        }
        running = false;
        for (Thread t : new Thread[] {publisherThread, tailerThread}) {
            LockSupport.unpark(t);
        }
        try {
            Objects.requireNonNull(publisherThread).join(5_000); // running: both were started
            Objects.requireNonNull(tailerThread).join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        client.shutdown();
    }

    // ------------------------------------------------------------------------------------------------
    // publisher

    /** {@code XADD <stream> MAXLEN ~ <maxLen> * b <batch>}. */
    static XAddArgs xaddArgs(long maxLen) {
        return new XAddArgs().maxlen(maxLen).approximateTrimming();
    }

    private void publishLoop() {
        StatefulRedisConnection<String, byte[]> conn = null;
        XAddArgs args = xaddArgs(maxLen);
        RepeatFilter recent = new RepeatFilter(repeatMillis);
        List<RouteEvent> batch = new ArrayList<>(batchEvents);
        RouteEventCodec.Encoder encoder = new RouteEventCodec.Encoder(origin);
        byte[] pending = null;
        boolean failed = false;
        long backoff = MIN_BACKOFF_NANOS;
        long closeDeadline = Long.MAX_VALUE;
        while (true) {
            if (!running && closeDeadline == Long.MAX_VALUE) {
                closeDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            }
            if (conn == null && running) { // connect before gathering: while Redis is away, events wait in the buffer
                try {
                    conn = client.redis().connect(CODEC);
                    up(true);
                } catch (RuntimeException e) {
                    down(true, "publisher", e);
                    LockSupport.parkNanos(backoff);
                    backoff = Math.min(backoff * 2, MAX_BACKOFF_NANOS);
                    continue;
                }
            }
            if (pending == null) {
                if (!running && buffer.isEmpty()) {
                    break;
                }
                collect(batch);
                repeats.add(recent.keepNew(batch));
                if (batch.isEmpty()) {
                    continue;
                }
                pending = encoder.encode(batch);
                pendingEvents.set(batch.size());
                batch.clear();
            }
            if (System.nanoTime() > closeDeadline) {
                LOG.info("route sync closing with {} events not written", buffered.get() + pendingEvents.get());
                break;
            }
            try {
                if (conn == null) {
                    conn = client.redis().connect(CODEC);
                    up(true);
                }
                conn.sync().xadd(stream, args, Map.of(FIELD, pending));
                published.add(pendingEvents.getAndSet(0));
                batches.increment();
                bytes.add(pending.length);
                pending = null;
                if (failed) {
                    // Redis was away: it may have come back without the stream, so references to what was
                    // written before would not resolve for a reader starting now
                    encoder.newEpoch();
                    failed = false;
                }
                backoff = MIN_BACKOFF_NANOS;
                up(true);
            } catch (RuntimeException e) {
                failed = true;
                down(true, "publisher", e);
                backoff = Math.min(backoff, cap(conn));
                LockSupport.parkNanos(backoff);
                backoff = Math.min(backoff * 2, cap(conn));
            }
        }
        if (conn != null) {
            var unused = conn.closeAsync(); // closing: nothing to wait for
        }
    }

    /** Takes the next batch from the buffer: up to the batch size, or what arrives within the delay. */
    private void collect(List<RouteEvent> batch) {
        RouteEvent first = take();
        if (first == null && running) {
            awaitBuffered(1, TimeUnit.MILLISECONDS.toNanos(100));
            first = take();
        }
        if (first == null) {
            return;
        }
        batch.add(first);
        long deadline = System.nanoTime() + batchDelayNanos;
        while (batch.size() < batchEvents) {
            RouteEvent e = take();
            if (e != null) {
                batch.add(e);
                continue;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0 || !running) {
                return;
            }
            awaitBuffered(batchEvents - batch.size(), left); // the batch's delay, or a full batch
        }
    }

    // ------------------------------------------------------------------------------------------------
    // tailer

    private void tailLoop() {
        StatefulRedisConnection<String, byte[]> conn = null;
        @Nullable String position = null; // last entry id handled; null until the first read
        boolean replayed = !replay;
        boolean check = false;
        long backoff = MIN_BACKOFF_NANOS;
        while (running) {
            try {
                if (conn == null) {
                    conn = client.redis().connect(CODEC);
                }
                RedisCommands<String, byte[]> c = conn.sync();
                if (!replayed) {
                    position = replay(c, position);
                    replayed = true;
                } else if (position == null) {
                    // no replay: only what is written from now on (an explicit id, so nothing written
                    // between two reads is missed, as it would be by reading from "$" each time)
                    List<StreamMessage<String, byte[]>> last =
                            c.xrevrange(stream, Range.create("-", "+"), Limit.create(0, 1));
                    position = last.isEmpty() ? "0-0" : last.get(0).getId();
                }
                if (check) {
                    position = checkPosition(c, position);
                }
                @SuppressWarnings({"unchecked", "rawtypes"}) // Lettuce's generic varargs
                XReadArgs.StreamOffset<String>[] from =
                        new XReadArgs.StreamOffset[] {XReadArgs.StreamOffset.from(stream, position)};
                List<StreamMessage<String, byte[]>> read =
                        c.xread(XReadArgs.Builder.block(blockMillis).count(REPLAY_PAGE), from);
                long now = System.currentTimeMillis();
                for (StreamMessage<String, byte[]> m : read) {
                    handle(m, true);
                    position = m.getId();
                    long lag = Math.max(0, now - idMillis(m.getId()));
                    lastLag.set(lag);
                    maxLag.accumulateAndGet(lag, Math::max);
                }
                check = false;
                backoff = MIN_BACKOFF_NANOS;
                up(false);
            } catch (RuntimeException e) {
                if (!running) {
                    break;
                }
                check = true;
                down(false, "tailer", e);
                backoff = Math.min(backoff, cap(conn));
                LockSupport.parkNanos(backoff);
                backoff = Math.min(backoff * 2, cap(conn));
            }
        }
        if (conn != null) {
            var unused = conn.closeAsync(); // closing: nothing to wait for
        }
    }

    /** Applies the retained window in pages, oldest first, after {@code from}; returns the last id read. */
    private String replay(RedisCommands<String, byte[]> c, @Nullable String from) {
        String position = from;
        long entries = 0;
        while (running) {
            Range<String> range = position == null
                    ? Range.create("-", "+")
                    : Range.from(Range.Boundary.excluding(position), Range.Boundary.unbounded());
            List<StreamMessage<String, byte[]>> page = c.xrange(stream, range, Limit.create(0, REPLAY_PAGE));
            for (StreamMessage<String, byte[]> m : page) {
                handle(m, false);
                position = m.getId();
            }
            entries += page.size();
            if (page.size() < REPLAY_PAGE) {
                break;
            }
        }
        LOG.info("route sync replayed {} stream entries of {}", entries, stream);
        return position == null ? "0-0" : position;
    }

    /**
     * After a read error: if the stream's ids are now below the read position (the stream was lost and
     * written anew, as after a Redis restart without persistence), reads it from the start. Entries lost
     * meanwhile (trimmed before they were read, or gone with the old stream) show as gaps in their
     * origins' batch numbers, counted by {@link #handle}.
     */
    private @Nullable String checkPosition(RedisCommands<String, byte[]> c, @Nullable String position) {
        if (position == null) {
            return null;
        }
        List<Object> info;
        try {
            info = c.xinfoStream(stream);
        } catch (RedisCommandExecutionException e) {
            return position; // no such stream (yet)
        }
        for (int i = 0; i + 1 < info.size(); i += 2) {
            if ("last-generated-id".equals(String.valueOf(info.get(i)))
                    && compareIds(String.valueOf(info.get(i + 1)), position) < 0) {
                LOG.warn(
                        "stream {} at {} was written anew below this instance's position: reading it from the"
                                + " start",
                        stream,
                        where);
                return "0-0";
            }
        }
        return position;
    }

    /**
     * Decodes one entry and applies the events of other origins; counts what it skips. While tailing
     * ({@code live}), each applied event's lag is recorded.
     */
    private void handle(StreamMessage<String, byte[]> m, boolean live) {
        Map<String, byte[]> body = m.getBody();
        byte[] data = body.size() == 1 ? body.get(FIELD) : null;
        RouteEventCodec.Decoded batch;
        try {
            if (data == null) {
                throw new RouteEventCodec.Malformed(
                        "not a batch entry (" + body.size() + " fields, none named \"" + FIELD + "\" alone)");
            }
            batch = decoder.decode(data);
        } catch (RouteEventCodec.Malformed e) {
            if (malformed.sum() == 0) {
                LOG.warn(
                        "skipping a malformed entry {} of stream {}: {} (later ones are only counted)",
                        m.getId(),
                        stream,
                        e.getMessage());
            }
            malformed.increment();
            return;
        }
        switch (batch.kind()) {
            case OWN -> {
                ownSkipped.add(batch.eventCount());
                return;
            }
            case DUPLICATE -> {
                duplicates.increment(); // written twice (an XADD retried after a lost reply): applied once
                return;
            }
            default -> {}
        }
        if (batch.lost() > 0) {
            gaps.increment();
            lost.add(batch.lost());
            LOG.warn(
                    "{} entries of {} were lost before this instance read them (stream trimmed past its"
                            + " position, or Redis lost them); going on from what is left",
                    batch.lost(),
                    batch.origin());
        }
        if (batch.unresolved() > 0) {
            if (unresolved.sum() == 0) {
                LOG.info(
                        "{} events of {} refer to entries this instance never read (it started late, or they"
                                + " were trimmed or lost): not applied; later ones are only counted",
                        batch.unresolved(),
                        batch.origin());
            }
            unresolved.add(batch.unresolved());
        }
        peersSeen.put(batch.origin(), System.currentTimeMillis());
        Consumer<? super RouteEvent> a = Objects.requireNonNull(applier); // set by start(), before the tailer runs
        for (RouteEvent e : batch.events()) {
            try {
                a.accept(e);
                applied.increment();
                if (live) {
                    lag.record(System.currentTimeMillis() - e.timeMillis());
                }
            } catch (RuntimeException ex) {
                LOG.error("applying a route event from {} failed", batch.origin(), ex);
            }
        }
    }

    private static long idMillis(String id) {
        int dash = id.indexOf('-');
        try {
            return Long.parseLong(dash < 0 ? id : id.substring(0, dash));
        } catch (NumberFormatException e) {
            return System.currentTimeMillis();
        }
    }

    /** Orders stream ids ({@code ms-seq}). */
    static int compareIds(String a, String b) {
        int da = a.indexOf('-');
        int db = b.indexOf('-');
        long ma = Long.parseLong(da < 0 ? a : a.substring(0, da));
        long mb = Long.parseLong(db < 0 ? b : b.substring(0, db));
        if (ma != mb) {
            return Long.compare(ma, mb);
        }
        long sa = da < 0 ? 0 : Long.parseLong(a.substring(da + 1));
        long sb = db < 0 ? 0 : Long.parseLong(b.substring(db + 1));
        return Long.compare(sa, sb);
    }

    /** The backoff's cap after a failure on {@code conn}: short while Lettuce reconnects an existing one. */
    private static long cap(@Nullable StatefulRedisConnection<?, ?> conn) {
        return conn != null && !conn.isOpen() ? REJECTED_BACKOFF_NANOS : MAX_BACKOFF_NANOS;
    }

    private void up(boolean publisher) {
        if (publisher) {
            publisherUp = true;
        } else {
            tailerUp = true;
        }
        outage.up(publisher ? 0 : 1);
    }

    private void down(boolean publisher, String who, RuntimeException e) {
        if (publisher) {
            publisherUp = false;
        } else {
            tailerUp = false;
        }
        outage.down(publisher ? 0 : 1, who + ": " + RedisEndpoint.cause(e));
    }

    /** Builds a {@link RedisRouteSync}. Only the URI is required. */
    public static final class Builder {
        private @Nullable String uri;
        private String stream = "cart:routes";
        private @Nullable String instanceId; // host:pid unless given
        private long maxLen = 100_000;
        private int batchEvents = 256;
        private Duration batchDelay = Duration.ofMillis(5);
        private Duration repeatInterval = Duration.ofSeconds(1);
        private int bufferEvents = 65_536;
        private Duration commandTimeout = Duration.ofSeconds(2);
        private Duration readBlock = Duration.ofMillis(250);
        private boolean replay = true;

        private Builder() {}

        /**
         * The Redis to use: {@code redis://[:password@]host[:port][/db]}, or {@code rediss://...} for TLS
         * (Lettuce's {@link io.lettuce.core.RedisURI} syntax). Never logged: logs name the host and port only.
         * Required.
         *
         * @param uri the URI, the password in it if any
         * @return this builder
         * @throws IllegalArgumentException (not quoting it) if it is not a Redis URI
         */
        public Builder uri(String uri) {
            this.uri = RedisEndpoint.checked(uri); // fails now on a malformed URI, not on the first connection
            return this;
        }

        /**
         * The stream of this pool; every instance routing the same pool uses the same name. Default
         * {@code cart:routes}.
         *
         * @param stream the stream's key in Redis
         * @return this builder
         * @throws IllegalArgumentException if it is empty or blank
         */
        public Builder stream(String stream) {
            if (stream == null || stream.isBlank()) {
                throw new IllegalArgumentException("cluster.stream must not be empty");
            }
            this.stream = stream;
            return this;
        }

        /**
         * This instance's id (default {@code host:pid}); a random suffix per start makes the origin id unique.
         *
         * @param id the id
         * @return this builder
         * @throws IllegalArgumentException if it is empty or blank
         */
        public Builder instanceId(String id) {
            if (id == null || id.isBlank()) {
                throw new IllegalArgumentException("cluster.instance_id must not be empty");
            }
            this.instanceId = id;
            return this;
        }

        /**
         * The stream's approximate cap in entries ({@code MAXLEN ~}); each entry holds up to a batch. Default
         * 100,000.
         *
         * @param entries at least 1
         * @return this builder
         * @throws IllegalArgumentException if it is below 1
         */
        public Builder maxLen(long entries) {
            if (entries < 1) {
                throw new IllegalArgumentException("cluster.max_len must be >= 1, was " + entries);
            }
            this.maxLen = entries;
            return this;
        }

        /**
         * Most events per stream entry (default 256).
         *
         * @param events 1 to 256
         * @return this builder
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder batchEvents(int events) {
            if (events < 1 || events > 256) {
                throw new IllegalArgumentException("cluster.batch_events must be in [1, 256], was " + events);
            }
            this.batchEvents = events;
            return this;
        }

        /**
         * How long a batch waits for more events after its first (default 5 ms).
         *
         * @param delay 0 to 5 ms
         * @return this builder
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder batchDelay(Duration delay) {
            if (delay.isNegative() || delay.compareTo(Duration.ofMillis(5)) > 0) {
                throw new IllegalArgumentException("cluster.batch_delay_ms must be in [0, 5], was " + delay.toMillis());
            }
            this.batchDelay = delay;
            return this;
        }

        /**
         * A learned route is written again only after this long (default 1 s).
         *
         * @param interval zero or more; zero writes every one
         * @return this builder
         * @throws IllegalArgumentException if it is negative
         */
        public Builder repeatInterval(Duration interval) {
            if (interval.isNegative()) {
                throw new IllegalArgumentException("cluster.repeat_interval_ms must be >= 0");
            }
            this.repeatInterval = interval;
            return this;
        }

        /**
         * Events buffered while Redis is slow or away; beyond it the oldest are dropped (default 65,536).
         *
         * @param events at least 1
         * @return this builder
         * @throws IllegalArgumentException if it is below 1
         */
        public Builder bufferEvents(int events) {
            if (events < 1) {
                throw new IllegalArgumentException("cluster.buffer_events must be >= 1, was " + events);
            }
            this.bufferEvents = events;
            return this;
        }

        /**
         * Timeout of one Redis command and of a connection attempt (default 2 s).
         *
         * @param timeout positive, and longer than the tailer's 250 ms blocking read (checked by {@link #build})
         * @return this builder
         * @throws IllegalArgumentException if it is zero or negative
         */
        public Builder commandTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("cluster.timeout must be positive");
            }
            this.commandTimeout = timeout;
            return this;
        }

        /**
         * Whether a starting instance replays the retained stream window first (default true).
         *
         * @param replay false to apply only what is written from the start on
         * @return this builder
         */
        public Builder replay(boolean replay) {
            this.replay = replay;
            return this;
        }

        /**
         * Builds the sync (it makes its Redis client but connects only at {@link RedisRouteSync#start}).
         *
         * @return a sync, not started
         * @throws IllegalStateException if the URI is missing or the command timeout does not exceed the
         *     blocking read
         */
        public RedisRouteSync build() {
            if (uri == null) {
                throw new IllegalStateException("a Redis route sync needs a URI");
            }
            if (readBlock.compareTo(commandTimeout) >= 0) {
                throw new IllegalStateException(
                        "the command timeout must exceed the read block of " + readBlock.toMillis() + " ms");
            }
            return new RedisRouteSync(this);
        }
    }
}
