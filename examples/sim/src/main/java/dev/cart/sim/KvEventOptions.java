package dev.cart.sim;

import java.util.Objects;

/**
 * How a {@link SimulatedReplicaServer} publishes KV-cache events (precise mode): its ports, topic, the
 * encoding (positional arrays or maps, integer or 32-byte hashes), the replay shape (with or without the topic
 * frame) and the replay buffer's size. Mutable builder-style; the server copies it. Not thread-safe.
 */
public final class KvEventOptions {
    private int port;
    private int replayPort;
    private String topic = "";
    private boolean maps;
    private boolean byteHashes;
    private boolean topicInReplay;
    private int bufferBatches = 10_000;
    private long seed = 1;

    private KvEventOptions() {}

    /** Ephemeral ports, topic "", positional events with integer hashes, a 10,000-batch replay buffer. */
    public static KvEventOptions defaults() {
        return new KvEventOptions();
    }

    KvEventOptions copy() {
        KvEventOptions o = new KvEventOptions();
        o.port = port;
        o.replayPort = replayPort;
        o.topic = topic;
        o.maps = maps;
        o.byteHashes = byteHashes;
        o.topicInReplay = topicInReplay;
        o.bufferBatches = bufferBatches;
        o.seed = seed;
        return o;
    }

    /** The PUB port (0, the default: any free port; vLLM's default is 5557). */
    public KvEventOptions port(int p) {
        this.port = checkPort(p);
        return this;
    }

    /** The replay (ROUTER) port (0, the default: any free port). */
    public KvEventOptions replayPort(int p) {
        this.replayPort = checkPort(p);
        return this;
    }

    /** The topic frame (default ""). */
    public KvEventOptions topic(String t) {
        this.topic = Objects.requireNonNull(t);
        return this;
    }

    /** Events as maps with a {@code type}, as vLLM from 0.26 (default false: positional arrays). */
    public KvEventOptions mapEncoding(boolean on) {
        this.maps = on;
        return this;
    }

    /** Block hashes as 32-byte digests (default false: unsigned 64-bit integers). */
    public KvEventOptions byteHashes(boolean on) {
        this.byteHashes = on;
        return this;
    }

    /** Replay answers with the topic frame, {@code ["", topic, seq, payload]} (default false: without). */
    public KvEventOptions topicInReplay(boolean on) {
        this.topicInReplay = on;
        return this;
    }

    /** Batches the replay buffer keeps, at least 1 (default 10,000, vLLM's). */
    public KvEventOptions bufferBatches(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("bufferBatches must be at least 1, was " + n);
        }
        this.bufferBatches = n;
        return this;
    }

    /** Seeds the per-process hash seeds (default 1). */
    public KvEventOptions seed(long s) {
        this.seed = s;
        return this;
    }

    int port() {
        return port;
    }

    int replayPort() {
        return replayPort;
    }

    String topic() {
        return topic;
    }

    boolean maps() {
        return maps;
    }

    boolean byteHashes() {
        return byteHashes;
    }

    boolean topicInReplay() {
        return topicInReplay;
    }

    int bufferBatches() {
        return bufferBatches;
    }

    long seed() {
        return seed;
    }

    private static int checkPort(int p) {
        if (p < 0 || p > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], was " + p);
        }
        return p;
    }
}
