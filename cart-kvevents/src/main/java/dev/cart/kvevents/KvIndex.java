package dev.cart.kvevents;

import dev.cart.core.RouteDecision;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block index of precise mode: which replica's engine holds which block of engine tokens, as the
 * engines report it through their KV-cache events, and the prefix of a request's tokens each replica holds.
 *
 * <p>Design (after llm-d's indexer): every block is known by CART's own key ({@link BlockKeys}: its tokens
 * chained on its parent's key, from a seed of the model or adapter and the {@code cache_salt}), never by the
 * engine's hash, which CART cannot reproduce. Each stream keeps a map from the engine's hash to that key
 * ({@link EngineMap}): a stored block's parent is found there, and so is a removed block. A global table
 * ({@link KeyTable}) maps each key to the streams holding it, one bit per stream (at most 64 streams). A
 * stored block whose parent the stream does not know is an orphan: it is not indexed and no parent is
 * guessed; the stream is marked incomplete (and its feed asks for a replay). Only full-attention groups are
 * indexed (sliding-window and Mamba groups reuse hashes). Each stream holds at most
 * {@link Builder#maxBlocksPerStream} blocks; above, its oldest are evicted and counted.
 *
 * <p>A {@link #lookup} hashes the request's tokens block by block and walks the table from the first block
 * until no stream holds the next one: each replica's confirmed prefix is where its last stream dropped out.
 * To that it adds the overlay: the blocks a request routed to the replica is about to create there
 * ({@link #routed}), kept until its lease ends and then for {@link #overlayTtl()} (the measured event lag),
 * since the engine reports them only once computed.
 *
 * <p>Concurrency: lookups are lock-free (they read the key table and the replica registry through volatile
 * references) and may run on any number of threads. Writes (every stream's events) take one lock: each
 * stream's thread applies its batches under it. Registration is rare and locked too.
 */
public final class KvIndex {

    private static final Logger LOG = LoggerFactory.getLogger(KvIndex.class);

    /** Blocks a lookup hashes before it probes them. */
    private static final int LOOKUP_CHUNK = 64;

    /** Most streams one index follows (one bit each). */
    public static final int MAX_STREAMS = 64;

    private final int blockSize;
    private final int maxBlocksPerStream;
    private final long silenceNanos;
    private final long gapHoldNanos;
    private final long replayTimeoutNanos;
    private final long overlayFloorNanos;
    private final int tokenizeFailureLimit;
    private final LongSupplier ticker;
    private final java.time.Clock clock;
    private final KvEventsListener listener;
    private final Consumer<String> engineResets;
    private volatile boolean engineResetFailureLogged;

    private final KeyTable keys = new KeyTable();
    private final ReentrantLock lock = new ReentrantLock();
    private final LagHistogram lag = new LagHistogram();
    private final Overlay overlay;

    /** Replicas by id, replaced whole on registration (copy on write). */
    private volatile Map<String, ReplicaEntry> replicas = Map.of();
    /** Replicas by ordinal, each stream's replica, every stream's bit: replaced whole on registration. */
    private volatile Registry registry = new Registry(new ReplicaEntry[0], new int[MAX_STREAMS], 0);

    private final @Nullable StreamState[] slots = new StreamState[MAX_STREAMS];
    private final long[] pair = new long[2];

    /** What a lookup reads of the registration, published as one (copy on write). */
    private static final class Registry {
        final ReplicaEntry[] ordered;
        /** The ordinal of each slot's replica. */
        final int[] slotOrd;
        /** The bits of every registered stream. */
        final long bits;

        Registry(ReplicaEntry[] ordered, int[] slotOrd, long bits) {
            this.ordered = ordered;
            this.slotOrd = slotOrd;
            this.bits = bits;
        }
    }

    /** One replica: its streams, its ordinal in lookups, its tokenization record. */
    static final class ReplicaEntry {
        final String id;
        final int ord;
        volatile StreamState[] streams = new StreamState[0];
        volatile long streamBits;
        volatile int tokenizeFailures;
        /** The mode last computed; null before the first. */
        volatile @Nullable ReplicaMode lastMode;

        ReplicaEntry(String id, int ord) {
            this.id = id;
            this.ord = ord;
        }
    }

    private KvIndex(Builder b) {
        this.blockSize = b.blockSize;
        this.maxBlocksPerStream = b.maxBlocksPerStream;
        this.silenceNanos = b.silence.toNanos();
        this.gapHoldNanos = b.gapHold.toNanos();
        this.replayTimeoutNanos = b.replayTimeout.toNanos();
        this.overlayFloorNanos = b.overlayTtl.toNanos();
        this.tokenizeFailureLimit = b.tokenizeFailureLimit;
        this.ticker = b.ticker;
        this.clock = b.clock;
        this.listener = new SafeKvListener(b.listener);
        this.engineResets = b.engineResets;
        this.overlay = new Overlay(ticker);
    }

    /**
     * A builder with the defaults: 16-token blocks, 4,194,304 blocks per stream, silence after 5 s, a 5 s hold
     * after lost events, a 3 s replay timeout, a 500 ms overlay floor, approximate after 3 tokenization
     * failures in a row.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The engines' block size this index keys blocks by.
     *
     * @return tokens per block, at least 1; events of another block size are not indexed
     */
    public int blockSize() {
        return blockSize;
    }

    // ------------------------------------------------------------------------------------------------
    // lookups (any thread, lock-free)

    /**
     * The prefix of {@code tokens} each replica holds. Only whole blocks count, and at most the blocks before
     * the prompt's last token (an engine always computes the last token). Hashes the blocks one by one, probing
     * each, and stops at the first block no stream holds; the overlay then compares the tokens with those of
     * the requests just routed.
     *
     * @param tokens the request's prompt as the engine tokenizes it (its chat template applied); the match
     *               keeps it (not a copy, for the overlay of {@link #routed}): do not change it afterwards
     * @param model  the model the request names (an adapter's name for an adapter), as the streams'
     *               {@link KvStream#model} and the engines' {@code lora_name} give it; null (a request naming
     *               none) is keyed as the empty name, so it matches only a stream whose model is {@code ""}
     * @param salt   the request's {@code cache_salt}, or null
     * @return the per-replica match, with each replica's mode now
     * @throws NullPointerException if {@code tokens} is null
     */
    public PreciseMatch lookup(int[] tokens, @Nullable String model, @Nullable String salt) {
        Objects.requireNonNull(tokens, "tokens");
        int bs = blockSize;
        int n = tokens.length == 0 ? 0 : (tokens.length - 1) / bs;
        long root = BlockKeys.root(model, salt);
        Registry reg = registry;
        ReplicaEntry[] reps = reg.ordered;
        int[] slotOrd = reg.slotOrd;
        int[] confirmed = new int[reps.length];
        // hash a chunk of blocks, then probe them; stop at the first block no stream holds (a prompt that
        // diverges early is hashed no further than its chunk). Hashing runs branch-free between the probes.
        long alive = reg.bits;
        long[] chunk = new long[Math.min(n, LOOKUP_CHUNK)];
        long parent = root;
        long first = 0;
        int i = 0;
        while (i < n && alive != 0) {
            int c = Math.min(chunk.length, n - i);
            for (int j = 0; j < c; j++) {
                parent = BlockKeys.block(tokens, (i + j) * bs, bs, parent);
                chunk[j] = parent;
            }
            if (i == 0) {
                first = chunk[0];
            }
            for (int j = 0; j < c && alive != 0; j++, i++) {
                long held = keys.holders(chunk[j]);
                long dropped = alive & ~held;
                while (dropped != 0) {
                    // a replica's prefix is where its last stream drops out: later drops overwrite earlier ones
                    confirmed[slotOrd[Long.numberOfTrailingZeros(dropped)]] = i;
                    dropped &= dropped - 1;
                }
                alive &= held;
            }
        }
        while (alive != 0) {
            confirmed[slotOrd[Long.numberOfTrailingZeros(alive)]] = i;
            alive &= alive - 1;
        }
        if (n > 0 && i == 0 && first == 0) {
            first = BlockKeys.block(tokens, 0, bs, root);
        }
        long now = ticker.getAsLong();
        int[] blocks = confirmed.clone();
        ReplicaMode[] modes = new ReplicaMode[reps.length];
        for (ReplicaEntry r : reps) {
            modes[r.ord] = mode(r, now, null);
        }
        if (n > 0) {
            overlay.extend(tokens, n, bs, root, first, blocks, now);
        }
        return new PreciseMatch(this, tokens, n, root, first, bs, confirmed, blocks, modes, reps);
    }

    /** The replica's mode at {@code now}; its reason in {@code why[0]} when given. */
    ReplicaMode mode(ReplicaEntry r, long now, String @Nullable [] why) {
        if (r.tokenizeFailures >= tokenizeFailureLimit) {
            if (why != null) {
                why[0] = "tokenization failing";
            }
            return ReplicaMode.APPROXIMATE;
        }
        StreamState[] ss = r.streams;
        ReplicaMode worst = ReplicaMode.APPROXIMATE;
        String reason = "no stream";
        String @Nullable [] w = why == null ? null : new String[1];
        for (int i = 0; i < ss.length; i++) {
            ReplicaMode m = ss[i].mode(now, silenceNanos, w);
            if (i == 0 || m.ordinal() > worst.ordinal()) {
                worst = m;
                reason = w == null ? "" : w[0];
            }
        }
        if (why != null) {
            why[0] = reason;
        }
        ReplicaMode last = r.lastMode;
        if (last != worst) {
            r.lastMode = worst;
            if (last != null) {
                listener.onModeChanged(r.id, last, worst, reason);
            }
        }
        return worst;
    }

    /**
     * The replica's mode now. Reading it may report a change to the listener (a silence is noticed here).
     *
     * @param replica the replica's id
     * @return its mode; {@link ReplicaMode#APPROXIMATE} for a replica the index has no stream of
     */
    public ReplicaMode mode(String replica) {
        ReplicaEntry r = replicas.get(replica);
        return r == null ? ReplicaMode.APPROXIMATE : mode(r, ticker.getAsLong(), null);
    }

    @Nullable
    ReplicaEntry entry(String replica) {
        return replicas.get(replica);
    }

    // ------------------------------------------------------------------------------------------------
    // what the host tells the index

    /**
     * Tells the index that {@code decision} routed a request whose lookup was {@code match}: until its lease
     * ends (and {@link #overlayTtl()} after), the chosen replica counts as holding the request's blocks (the
     * engine reports them only once computed); and a replica whose engine stays silent while requests are
     * routed to it drops to approximate. Call it for every routed decision of a looked-up request; install
     * {@link #leaseListener()} on the router so the lease's end is heard. Any thread.
     *
     * @param decision the router's decision; one that routed nowhere, or to a replica the index has no stream
     *     of, is ignored
     * @param match    the request's {@link #lookup}, or null when it was not looked up (the silence watch
     *     still counts the request)
     */
    public void routed(RouteDecision decision, @Nullable PreciseMatch match) {
        Replica chosen = decision.replica();
        if (chosen == null) {
            return;
        }
        ReplicaEntry r = replicas.get(chosen.id());
        if (r == null) {
            return;
        }
        long now = ticker.getAsLong();
        for (StreamState st : r.streams) {
            st.noteRouted(now);
        }
        if (match != null && match.blocks() > 0) {
            overlay.add(decision, r.ord, match);
        }
    }

    /**
     * A routing listener that ends the overlay of each routed request when its lease closes (install it on the
     * router, beside the host's own: {@code Router.Builder.listener}). Hears nothing else.
     *
     * @return a new listener for this index; thread-safe
     */
    public RoutingListener leaseListener() {
        return new RoutingListener() {
            @Override
            public void onLeaseCompleted(LeaseCompletion completion) {
                overlay.ended(completion.decision(), ticker.getAsLong() + overlayTtlNanos());
            }
        };
    }

    /**
     * Records a tokenization on {@code replica}'s engine: after {@link Builder#tokenizeFailureLimit} failures in
     * a row the replica is approximate, until one succeeds. Tells the listener. Any thread.
     *
     * @param replica the replica whose engine was asked (one the index has no stream of is only reported)
     * @param ok      whether the tokens were obtained
     * @param nanos   how long the call took
     * @param reason  null on success, else why it failed
     */
    public void tokenized(String replica, boolean ok, long nanos, @Nullable String reason) {
        ReplicaEntry r = replicas.get(replica);
        if (r != null) {
            r.tokenizeFailures = ok ? 0 : r.tokenizeFailures + 1;
        }
        listener.onTokenized(replica, ok, nanos, reason);
    }

    /**
     * How long a routed request's blocks stay in the overlay after its lease ends: the floor
     * ({@link Builder#overlayTtl}) or twice the p99 of the measured event lag, whichever is longer.
     *
     * @return the time, zero or more
     */
    public Duration overlayTtl() {
        return Duration.ofNanos(overlayTtlNanos());
    }

    private long overlayTtlNanos() {
        return Math.max(overlayFloorNanos, 2 * lag.quantile(0.99));
    }

    /**
     * A quantile of the publish-to-applied lag of the live batches applied so far (the engines' and this
     * host's clocks' offset included; a negative lag counts as zero).
     *
     * @param q the quantile, in [0, 1]
     * @return the lag; zero before the first live batch
     */
    public Duration lagQuantile(double q) {
        return Duration.ofNanos(lag.quantile(q));
    }

    // ------------------------------------------------------------------------------------------------
    // status

    /**
     * Every replica's status (for {@code /workers} and gauges). Any thread; each stream's counters are read
     * one by one, so together they may be a moment apart.
     *
     * @return one status per replica, in registration order
     */
    public List<ReplicaStatus> status() {
        long now = ticker.getAsLong();
        List<ReplicaStatus> out = new ArrayList<>();
        for (ReplicaEntry r : registry.ordered) {
            out.add(status(r, now));
        }
        return out;
    }

    /**
     * One replica's status.
     *
     * @param replica the replica's id
     * @return its status, or null if the index has no stream of it
     */
    public @Nullable ReplicaStatus status(String replica) {
        ReplicaEntry r = replicas.get(replica);
        return r == null ? null : status(r, ticker.getAsLong());
    }

    private ReplicaStatus status(ReplicaEntry r, long now) {
        String[] why = new String[1];
        ReplicaMode m = mode(r, now, why);
        List<StreamStatus> ss = new ArrayList<>();
        for (StreamState st : r.streams) {
            ss.add(st.status(now, silenceNanos));
        }
        return new ReplicaStatus(r.id, m, why[0], ss);
    }

    /**
     * Distinct blocks (keys) some stream holds now.
     *
     * @return the count, zero or more
     */
    public long size() {
        return keys.size();
    }

    /**
     * The bytes the index's tables take (the key table, every stream's map and order): for the memory figure.
     * Takes the write lock for the time it counts.
     *
     * @return the bytes, an estimate of the arrays' sizes
     */
    public long tableBytes() {
        lock.lock();
        try {
            long b = keys.bytes();
            for (StreamState s : slots) {
                if (s != null) {
                    b += s.map.bytes();
                }
            }
            return b;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // streams (their feeds' threads)

    /**
     * Starts following {@code stream}: returns the feed its transport hands the stream's frames to.
     *
     * @param stream   the stream, one per replica and rank
     * @param replayer asks the engine to replay from a sequence number (null: the stream has no replay)
     * @return the stream's feed; it is not thread-safe (one transport thread calls it)
     * @throws IllegalStateException when the index already follows {@link #MAX_STREAMS} streams, or this
     *     replica's rank already
     */
    public KvFeed feed(KvStream stream, KvFeed.@Nullable Replayer replayer) {
        return new KvFeed(this, register(stream), replayer, ticker, listener);
    }

    StreamState register(KvStream stream) {
        lock.lock();
        try {
            int slot = -1;
            for (int i = 0; i < MAX_STREAMS; i++) {
                if (slots[i] == null) {
                    slot = i;
                    break;
                }
                if (slots[i].config.replica().equals(stream.replica()) && slots[i].config.rank() == stream.rank()) {
                    throw new IllegalStateException(
                            "replica " + stream.replica() + " rank " + stream.rank() + " is followed already");
                }
            }
            if (slot < 0) {
                throw new IllegalStateException("an index follows at most " + MAX_STREAMS + " streams");
            }
            StreamState st = new StreamState(stream, slot);
            slots[slot] = st;
            Map<String, ReplicaEntry> m = new LinkedHashMap<>(replicas);
            Registry reg = registry;
            ReplicaEntry[] ordered = reg.ordered;
            ReplicaEntry r = m.get(stream.replica());
            if (r == null) {
                r = new ReplicaEntry(stream.replica(), m.size());
                m.put(stream.replica(), r);
                ordered = java.util.Arrays.copyOf(ordered, ordered.length + 1);
                ordered[r.ord] = r;
            }
            StreamState[] ss = java.util.Arrays.copyOf(r.streams, r.streams.length + 1);
            ss[ss.length - 1] = st;
            r.streams = ss;
            r.streamBits |= st.bit;
            int[] slotOrd = reg.slotOrd.clone();
            slotOrd[slot] = r.ord;
            replicas = Map.copyOf(new HashMap<>(m));
            registry = new Registry(ordered, slotOrd, reg.bits | st.bit);
            return st;
        } finally {
            lock.unlock();
        }
    }

    long now() {
        return ticker.getAsLong();
    }

    /** The wall clock the engines' batch timestamps are compared with for the lag. */
    java.time.Clock clock() {
        return clock;
    }

    void recordLag(long nanos) {
        lag.record(Math.max(0, nanos));
    }

    long gapHoldNanos() {
        return gapHoldNanos;
    }

    long replayTimeoutNanos() {
        return replayTimeoutNanos;
    }

    /** What applying one batch did. */
    static final class Applied {
        int stored;
        int removed;
        int orphans;
        int capEvicted;
        boolean cleared;
    }

    /** Applies one decoded batch's events to {@code s}, under the lock. */
    Applied apply(StreamState s, List<KvEvent> events) {
        Applied a = new Applied();
        lock.lock();
        try {
            for (int i = 0; i < events.size(); i++) {
                KvEvent e = events.get(i);
                if (e instanceof KvEvent.Stored st) {
                    stored(s, st, a);
                } else if (e instanceof KvEvent.Removed rm) {
                    removed(s, rm, a);
                } else {
                    clear(s);
                    a.cleared = true;
                }
            }
            s.blocks = s.map.size();
        } finally {
            lock.unlock();
        }
        return a;
    }

    /** Drops every block of {@code s}. */
    void reset(StreamState s) {
        lock.lock();
        try {
            clear(s);
            s.blocks = 0;
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code s}'s engine emptied its cache (it restarted, or said {@code AllBlocksCleared}): the blocks routed
     * requests were to create on its replica are gone with it, so the replica's overlay records are dropped,
     * and the host hears it ({@link Builder#onEngineReset}). Called on the stream's thread, after its blocks
     * were dropped.
     */
    void engineReset(StreamState s) {
        ReplicaEntry r = replicas.get(s.config.replica());
        if (r == null) {
            return;
        }
        overlay.dropReplica(r.ord);
        try {
            engineResets.accept(r.id);
        } catch (RuntimeException e) {
            if (!engineResetFailureLogged) {
                engineResetFailureLogged = true;
                LOG.error("the engine-reset handler failed (logged once; events go on)", e);
            }
        }
    }

    private void clear(StreamState s) {
        long bit = s.bit;
        s.map.forEach((h, v) -> keys.remove(v & ~3L, bit));
        s.map.clear();
        s.offloadBlocks = 0;
    }

    private void stored(StreamState s, KvEvent.Stored e, Applied a) {
        int n = e.hashes.length;
        if (!e.fullAttention) {
            s.otherGroups.set(e.group);
            s.otherGroupBlocks += n;
            return;
        }
        if (e.tokens.length == 0) {
            // an offload placeholder: no tokens, so only blocks the stream knows can gain the tier
            for (long h : e.hashes) {
                long v = s.map.get(h);
                if (v != 0) {
                    tier(s, h, v, v | e.tier);
                }
            }
            return;
        }
        if (e.blockSize != blockSize) {
            s.blockSizeMismatches += n;
            return;
        }
        long parent;
        if (e.hasParent) {
            long pv = s.map.get(e.parent);
            if (pv == 0) {
                a.orphans += n;
                return;
            }
            parent = pv & ~3L;
        } else {
            parent = BlockKeys.root(e.lora != null ? e.lora : s.config.model(), e.salt);
        }
        for (int j = 0; j < n; j++) {
            long seed = e.extra == null ? parent : BlockKeys.withExtra(parent, e.extra[j]);
            long key = BlockKeys.block(e.tokens, j * blockSize, blockSize, seed);
            long h = e.hashes[j];
            long old = s.map.get(h);
            long tiers = e.tier;
            if (old != 0) {
                if ((old & ~3L) == key) {
                    tiers |= old & 3L;
                } else {
                    keys.remove(old & ~3L, s.bit); // the engine reused the hash for other tokens
                }
                tier(s, h, old, key | tiers);
            } else {
                s.map.put(h, key | tiers);
                if ((tiers & KvEvent.OFFLOAD) != 0) {
                    s.offloadBlocks++;
                }
            }
            keys.add(key, s.bit);
            a.stored++;
            parent = key;
        }
        while (s.map.size() > maxBlocksPerStream && s.map.removeOldest(pair)) {
            keys.remove(pair[1] & ~3L, s.bit);
            if ((pair[1] & KvEvent.OFFLOAD) != 0) {
                s.offloadBlocks--;
            }
            a.capEvicted++;
        }
    }

    /** Sets {@code h}'s value from {@code old} to {@code value}, keeping the offload count. */
    private static void tier(StreamState s, long h, long old, long value) {
        s.map.put(h, value);
        boolean was = (old & KvEvent.OFFLOAD) != 0;
        boolean is = (value & KvEvent.OFFLOAD) != 0;
        if (was != is) {
            s.offloadBlocks += is ? 1 : -1;
        }
    }

    private void removed(StreamState s, KvEvent.Removed e, Applied a) {
        if (s.otherGroups.get(e.group)) {
            return;
        }
        for (long h : e.hashes) {
            long v = s.map.get(h);
            if (v == 0) {
                continue;
            }
            long left = v & ~(long) e.tier;
            if ((left & 3L) == 0) {
                s.map.remove(h);
                keys.remove(v & ~3L, s.bit);
                if ((v & KvEvent.OFFLOAD) != 0) {
                    s.offloadBlocks--;
                }
                a.removed++;
            } else {
                tier(s, h, v, left);
            }
        }
    }

    private static void atLeast(String name, long value, long min) {
        if (value < min) {
            throw new IllegalArgumentException(name + " must be at least " + min + ", was " + value);
        }
    }

    private static void notNegative(String name, Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException(name + " must not be negative, was " + d);
        }
    }

    /** Builds a {@link KvIndex}. */
    public static final class Builder {
        private int blockSize = 16;
        private int maxBlocksPerStream = 1 << 22;
        private Duration silence = Duration.ofSeconds(5);
        private Duration gapHold = Duration.ofSeconds(5);
        private Duration replayTimeout = Duration.ofSeconds(3);
        private Duration overlayTtl = Duration.ofMillis(500);
        private int tokenizeFailureLimit = 3;
        private LongSupplier ticker = System::nanoTime;
        private java.time.Clock clock = java.time.Clock.systemUTC();
        private KvEventsListener listener = KvEventsListener.NONE;
        private Consumer<String> engineResets = replica -> {};

        private Builder() {}

        /**
         * The engines' block size in tokens (default 16, vLLM's); events of another block size are skipped.
         *
         * @param tokens at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code tokens} is below 1
         */
        public Builder blockSize(int tokens) {
            atLeast("blockSize", tokens, 1);
            this.blockSize = tokens;
            return this;
        }

        /**
         * The memory cap: most blocks one stream may hold in the index, at least 1 (default 4,194,304, about
         * 64 million tokens); above it the stream's oldest blocks are evicted and counted.
         *
         * @param blocks at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code blocks} is below 1
         */
        public Builder maxBlocksPerStream(int blocks) {
            atLeast("maxBlocksPerStream", blocks, 1);
            this.maxBlocksPerStream = blocks;
            return this;
        }

        /**
         * How long a replica's engine may stay silent while at least three requests routed to it wait for
         * events before the replica drops to approximate (default 5 s).
         *
         * @param d positive
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is zero or negative
         */
        public Builder silence(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("silence must be positive, was " + d);
            }
            this.silence = d;
            return this;
        }

        /**
         * How long a stream stays approximate after events were lost for good (a gap no replay could fill): its
         * blocks were reset, and the tree's guess is kept while new events refill them (default 5 s).
         *
         * @param d zero or more
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is negative
         */
        public Builder gapHold(Duration d) {
            notNegative("gapHold", d);
            this.gapHold = d;
            return this;
        }

        /**
         * How long a replay may go without an answer before it is given up (default 3 s; positive): a replay
         * given up for a gap counts as events lost; for a connect or a restart, as an unknown history.
         *
         * @param d positive
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is zero or negative
         */
        public Builder replayTimeout(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("replayTimeout must be positive, was " + d);
            }
            this.replayTimeout = d;
            return this;
        }

        /**
         * The overlay's floor: a routed request's blocks count for its replica until its lease ends and then
         * for at least this long, or twice the p99 event lag if longer (default 500 ms; zero allowed). The
         * engine reports a prompt's blocks when its prefill ends, long before the lease does, so the time after
         * the lease only has to cover the event lag; the floor guards against a lag measured low by clock skew.
         *
         * @param d zero or more
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is negative
         */
        public Builder overlayTtl(Duration d) {
            notNegative("overlayTtl", d);
            this.overlayTtl = d;
            return this;
        }

        /**
         * Tokenization failures in a row on one replica that make it approximate (default 3).
         *
         * @param n at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code n} is below 1
         */
        public Builder tokenizeFailureLimit(int n) {
            atLeast("tokenizeFailureLimit", n, 1);
            this.tokenizeFailureLimit = n;
            return this;
        }

        /**
         * Monotonic nanoseconds for modes, silences and the overlay ({@link System#nanoTime()} by default).
         *
         * @param ticker read on any thread, so thread-safe
         * @return this builder
         * @throws NullPointerException if {@code ticker} is null
         */
        public Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker);
            return this;
        }

        /**
         * The wall clock the engines' batch timestamps (their own wall clock) are compared with to measure the
         * publish-to-applied lag ({@link java.time.Clock#systemUTC()} by default; a simulation injects its own).
         *
         * @param clock read on the streams' threads
         * @return this builder
         * @throws NullPointerException if {@code clock} is null
         */
        public Builder clock(java.time.Clock clock) {
            this.clock = Objects.requireNonNull(clock);
            return this;
        }

        /**
         * Hears the index's and its feeds' events (none by default). What it throws is logged once and dropped.
         *
         * @param listener called on the streams' and the requests' threads, so thread-safe
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder listener(KvEventsListener listener) {
            this.listener = Objects.requireNonNull(listener);
            return this;
        }

        /**
         * Hears each replica whose engine emptied its cache: its sequence went back (a restart) or it said
         * {@code AllBlocksCleared}; not a reset for lost events, after which the engine still holds its blocks.
         * By then the index has dropped the stream's blocks and the replica's overlay; a host keeping its own
         * guesses of what the replica holds (the router's prefix tree: {@code Router.forgetReplica}) drops them
         * here. Nothing by default. What it throws is logged once and dropped.
         *
         * @param handler called with the replica's id on the stream's thread (so quick, and thread-safe)
         * @return this builder
         * @throws NullPointerException if {@code handler} is null
         */
        public Builder onEngineReset(Consumer<String> handler) {
            this.engineResets = Objects.requireNonNull(handler);
            return this;
        }

        /**
         * Builds an empty index.
         *
         * @return a new index following no stream yet
         */
        public KvIndex build() {
            return new KvIndex(this);
        }
    }
}
