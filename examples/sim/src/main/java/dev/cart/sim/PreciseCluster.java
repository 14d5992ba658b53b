package dev.cart.sim;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.RoutingListener;
import dev.cart.kvevents.KvFeed;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import dev.cart.kvevents.PreciseMatch;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.function.LongUnaryOperator;

/**
 * Precise mode inside the discrete-event simulation: every replica's engine reports what it stores and evicts
 * as real vLLM event batches (the same encoder the HTTP replica publishes with), numbered and kept in a replay
 * buffer as vLLM's publisher does, and handed at once (in virtual time) to a {@link KvFeed} of one
 * {@link KvIndex}, which the router consults for every request through the request's engine tokens (the
 * tokenizing replica's, as {@code /tokenize} would return them). Only the ZMQ sockets are left out: the
 * encoding, the decoding, the sequence state machine and the index are the production ones.
 *
 * <p>The engine's block identities are published through a mix seeded per process, so a restart publishes new
 * hashes, as vLLM's random per-process seed makes it. Not thread-safe: one simulation run owns it.
 */
final class PreciseCluster {

    private final PreparedWorkload w;
    private final KvIndex index;
    private final Stream[] streams;
    private long restarts;

    /** One replica's publisher in process: sequence numbers, a replay buffer, its feed. */
    private static final class Stream {
        final ArrayDeque<byte[]> buffer = new ArrayDeque<>();
        long first;
        long next;
        KvFeed feed;
        KvEventRecorder recorder;

        void publish(byte[] payload) {
            buffer.addLast(payload);
            if (buffer.size() > 10_000) {
                buffer.pollFirst();
                first++;
            }
            feed.live(next++, payload);
        }

        void replay(long from) {
            long s = first;
            for (byte[] p : buffer) {
                if (s >= from) {
                    feed.replayed(s, p);
                }
                s++;
            }
            feed.replayEnded();
        }

        void restart() {
            buffer.clear();
            first = 0;
            next = 0;
        }
    }

    PreciseCluster(PreparedWorkload w, int replicas, VirtualClock clock) {
        if (w.engineTokens == null) {
            throw new IllegalArgumentException("precise mode needs the tokenizing replica (replicaTokenizer)");
        }
        this.w = w;
        Clock wall = new Clock() {
            @Override
            public ZoneOffset getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(java.time.ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                long n = clock.nanos();
                return Instant.ofEpochSecond(n / 1_000_000_000L, n % 1_000_000_000L);
            }
        };
        this.index = KvIndex.builder()
                .blockSize(RequestKeys.BLOCK_TOKENS)
                .ticker(clock::nanos)
                .clock(wall)
                .build();
        this.streams = new Stream[replicas];
        for (int i = 0; i < replicas; i++) {
            Stream s = new Stream();
            streams[i] = s;
            s.feed = index.feed(
                    KvStream.of(
                            "replica-" + i,
                            "inproc://replica-" + i,
                            "inproc://replica-" + i + "-replay",
                            PreparedWorkload.MODEL),
                    s::replay);
            s.recorder = new KvEventRecorder(
                    new KvEventEncoder(KvEventEncoder.Format.POSITIONAL_INT, 0),
                    RequestKeys.BLOCK_TOKENS,
                    processHash(i),
                    nanos -> nanos / 1e9,
                    s::publish);
            s.feed.start();
        }
    }

    /** The replica's engine reports its block events to its stream from now on. */
    void attach(int replica, Engine engine) {
        engine.events(streams[replica].recorder);
    }

    /** The engine tokens and salt of request {@code i} go on its engine request (what its events carry). */
    void describe(int i, EngineRequest r) {
        r.tokens = w.engineTokens[i];
        r.lora = w.models[i];
    }

    /** The precise match of request {@code i} (its prompt's engine tokens). */
    PreciseMatch lookup(int i) {
        int[] seq = w.engineTokens[i];
        int[] prompt = seq.length == w.promptTokens[i] ? seq : java.util.Arrays.copyOf(seq, w.promptTokens[i]);
        String model = w.models[i] == null ? PreparedWorkload.MODEL : w.models[i];
        return index.lookup(prompt, model, null);
    }

    /** The view the router reads beside its tree for the request of {@code key}. */
    static dev.cart.core.spi.ConfirmedPrefix view(PreciseMatch m, PromptKey key) {
        return m.view(key);
    }

    void routed(RouteDecision d, PreciseMatch m) {
        index.routed(d, m);
    }

    RoutingListener leaseListener() {
        return index.leaseListener();
    }

    /** Replica {@code i} restarted: new hashes, sequence from 0, an empty buffer. */
    void restarted(int i) {
        restarts++;
        streams[i].recorder.engineHash(processHash(i + 1_000 * (int) restarts));
        streams[i].restart();
    }

    KvIndex index() {
        return index;
    }

    /** A bijective mix of the engine's block identity, seeded per process: the hashes it publishes. */
    private static LongUnaryOperator processHash(int seed) {
        long k = 0x9E3779B97F4A7C15L * (seed + 1) | 1;
        return h -> {
            long x = (h ^ k) * 0xBF58476D1CE4E5B9L;
            x ^= x >>> 31;
            return x * 0x94D049BB133111EBL;
        };
    }
}
