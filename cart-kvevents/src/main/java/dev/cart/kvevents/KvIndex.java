package dev.cart.kvevents;

import dev.cart.core.RouteDecision;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingListener;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

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
 * <p>This class is the API and the wiring; each job is a class of its own: the lookup ({@link PrefixLookup});
 * the streams' events applied to the tables ({@link BlockWriter}) through what a feed sees of the index
 * ({@link FeedSink}: its batches, resets, lag and engine resets); the streams and replicas registered, their
 * modes and status ({@link Replicas}); the requests just routed ({@link Overlay}).
 *
 * <p>Concurrency: lookups are lock-free (they read the key table and the replica registry through volatile
 * references) and may run on any number of threads. Writes (every stream's events) take one lock: each
 * stream's thread applies its batches under it. Registration is rare and locked too.
 */
public final class KvIndex {

    /** Most streams one index follows (one bit each). */
    public static final int MAX_STREAMS = 64;

    private final int blockSize;
    private final long overlayFloorNanos;
    private final LongSupplier ticker;
    private final KvEventsListener listener;

    private final KeyTable keys = new KeyTable();
    /** The write lock: every change to the tables, and registration. */
    private final ReentrantLock lock = new ReentrantLock();

    private final LagHistogram lag = new LagHistogram();
    private final Overlay overlay;
    private final Replicas replicas;
    private final PrefixLookup prefixes;
    private final FeedSink sink;

    private KvIndex(Builder b) {
        this.blockSize = b.blockSize;
        this.overlayFloorNanos = b.overlayTtl.toNanos();
        this.ticker = b.ticker;
        this.listener = new SafeKvListener(b.listener);
        this.overlay = new Overlay(ticker);
        this.replicas = new Replicas(lock, b.silence.toNanos(), b.tokenizeFailureLimit, listener);
        this.prefixes = new PrefixLookup(blockSize, keys, replicas, overlay, ticker);
        BlockWriter writer = new BlockWriter(keys, lock, blockSize, b.maxBlocksPerStream);
        this.sink = new FeedSink(
                writer,
                replicas,
                overlay,
                lag,
                b.clock,
                b.gapHold.toNanos(),
                b.replayTimeout.toNanos(),
                b.engineResets);
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
        return prefixes.find(tokens, model, salt);
    }

    /**
     * The replica's mode now. Reading it may report a change to the listener (a silence is noticed here).
     *
     * @param replica the replica's id
     * @return its mode; {@link ReplicaMode#APPROXIMATE} for a replica the index has no stream of
     */
    public ReplicaMode mode(String replica) {
        ReplicaEntry r = replicas.entry(replica);
        return r == null ? ReplicaMode.APPROXIMATE : replicas.mode(r, ticker.getAsLong(), null);
    }

    @Nullable
    ReplicaEntry entry(String replica) {
        return replicas.entry(replica);
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
        ReplicaEntry r = replicas.entry(chosen.id());
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
        ReplicaEntry r = replicas.entry(replica);
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
        return replicas.status(ticker.getAsLong());
    }

    /**
     * One replica's status.
     *
     * @param replica the replica's id
     * @return its status, or null if the index has no stream of it
     */
    public @Nullable ReplicaStatus status(String replica) {
        ReplicaEntry r = replicas.entry(replica);
        return r == null ? null : replicas.status(r, ticker.getAsLong());
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
            return keys.bytes() + replicas.mapBytes();
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
        return new KvFeed(sink, replicas.register(stream), replayer, ticker, listener);
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
