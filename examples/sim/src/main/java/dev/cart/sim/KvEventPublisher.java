package dev.cart.sim;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * The simulated replica's KV-event publisher, as vLLM's {@code ZmqEventPublisher}: a PUB socket sending
 * {@code [topic, 8-byte big-endian seq, payload]} and a ROUTER replay socket answering {@code ["", startSeq]}
 * with {@code ["", seq, payload]} (or, as vLLM 0.26 does, {@code ["", topic, seq, payload]}) for every batch
 * its buffer still holds from {@code startSeq} on, then the end marker (seq -1, empty payload). The sequence
 * starts at 0 and again at 0 after a restart; a start the buffer no longer holds silently begins at its oldest.
 *
 * <p>Faults: {@link #dropNext} (batches numbered and kept for replay but not sent: lost on the wire),
 * {@link #silent} (nothing sent until it is lifted, then everything held back), {@link #restart} (the
 * sequence from 0 and an empty buffer, as a new process), and a small {@code bufferBatches} (a late
 * subscriber finds the start of the history gone).
 *
 * <p>Design: the engine thread {@linkplain #publish offers} payloads to a queue; one publisher thread owns
 * both sockets (ZMQ sockets are not thread-safe), numbers and sends the queued batches and answers replay
 * requests between them. Thread-safe.
 */
final class KvEventPublisher implements AutoCloseable {

    private static final byte[] END = {-1, -1, -1, -1, -1, -1, -1, -1};
    private static final byte[] RESTART = new byte[0];

    private record Kept(long seq, byte[] payload) {}

    private final ZContext ctx = new ZContext(1);
    private final ZMQ.Socket pub;
    private final ZMQ.Socket router;
    private final int pubPort;
    private final int replayPort;
    private final String host;
    private final String topic;
    private final boolean topicInReplay;
    private final int bufferBatches;
    private final LinkedBlockingQueue<byte[]> queue = new LinkedBlockingQueue<>();
    private final ArrayDeque<Kept> buffer = new ArrayDeque<>();
    private final List<Kept> withheld = new ArrayList<>();
    private final Thread thread;
    private final AtomicInteger dropNext = new AtomicInteger();
    private final AtomicLong published = new AtomicLong();
    private final AtomicLong replaysServed = new AtomicLong();
    private volatile boolean silent;
    private volatile boolean closed;
    private long seq;

    KvEventPublisher(String host, int pubPort, int replayPort, String topic, boolean topicInReplay, int bufferBatches) {
        this.host = host;
        this.topic = topic;
        this.topicInReplay = topicInReplay;
        this.bufferBatches = bufferBatches;
        pub = ctx.createSocket(SocketType.PUB);
        router = ctx.createSocket(SocketType.ROUTER);
        pub.setLinger(0);
        router.setLinger(0);
        pub.setSndHWM(100_000);
        try {
            this.pubPort = bind(pub, host, pubPort);
            this.replayPort = bind(router, host, replayPort);
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
        thread = new Thread(this::loop, "sim-kv-publisher-" + this.pubPort);
        thread.setDaemon(true);
        thread.start();
    }

    private static int bind(ZMQ.Socket s, String host, int port) {
        if (port == 0) {
            return s.bindToRandomPort("tcp://" + host);
        }
        s.bind("tcp://" + host + ":" + port);
        return port;
    }

    /** The PUB endpoint, e.g. {@code tcp://127.0.0.1:5557}. */
    String endpoint() {
        return "tcp://" + host + ":" + pubPort;
    }

    /** The replay endpoint. */
    String replayEndpoint() {
        return "tcp://" + host + ":" + replayPort;
    }

    /** Queues one batch for publishing (any thread). */
    void publish(byte[] payload) {
        queue.add(payload);
    }

    /** The next {@code n} batches are numbered and kept for replay, but never sent. */
    void dropNext(int n) {
        dropNext.addAndGet(n);
    }

    /** Stops sending (true) or sends everything held back and goes on (false). */
    void silent(boolean on) {
        this.silent = on;
    }

    /** A new process: the batches queued before this call keep the old numbering, then it starts from 0. */
    void restart() {
        queue.add(RESTART);
    }

    /** Batches sent so far. */
    long published() {
        return published.get();
    }

    /** Replay requests answered so far. */
    long replaysServed() {
        return replaysServed.get();
    }

    private void loop() {
        try (ZMQ.Poller poller = ctx.createPoller(1)) {
            poller.register(router, ZMQ.Poller.POLLIN);
            while (!closed) {
                poller.poll(1); // at most a millisecond before a queued batch goes out
                if (poller.pollin(0)) {
                    ZMsg req;
                    while ((req = ZMsg.recvMsg(router, ZMQ.DONTWAIT)) != null) {
                        answer(req);
                    }
                }
                byte[] p;
                while ((p = queue.poll()) != null) {
                    if (p == RESTART) {
                        seq = 0;
                        buffer.clear();
                        withheld.clear();
                        continue;
                    }
                    Kept k = new Kept(seq++, p);
                    buffer.addLast(k);
                    while (buffer.size() > bufferBatches) {
                        buffer.pollFirst();
                    }
                    if (silent) {
                        withheld.add(k);
                    } else if (dropNext.get() <= 0 || dropNext.getAndDecrement() <= 0) {
                        send(k); // unless dropped: numbered and kept, but lost on the wire
                    }
                }
                if (!silent && !withheld.isEmpty()) {
                    for (Kept k : withheld) {
                        send(k);
                    }
                    withheld.clear();
                }
            }
        } catch (RuntimeException e) {
            if (!closed) {
                throw e;
            }
        }
    }

    private void send(Kept k) {
        pub.sendMore(topic);
        pub.sendMore(seqBytes(k.seq));
        pub.send(k.payload);
        published.incrementAndGet();
    }

    private void answer(ZMsg req) {
        try {
            if (req.size() != 3) {
                return;
            }
            byte[] id = req.pop().getData();
            req.pop();
            byte[] start = req.pop().getData();
            if (start.length != 8) {
                return;
            }
            long from = 0;
            for (byte b : start) {
                from = (from << 8) | (b & 0xFF);
            }
            for (Kept k : buffer) {
                if (k.seq >= from) {
                    reply(id, seqBytes(k.seq), k.payload);
                }
            }
            reply(id, END, new byte[0]);
            replaysServed.incrementAndGet();
        } finally {
            req.destroy();
        }
    }

    private void reply(byte[] id, byte[] seqBytes, byte[] payload) {
        ZMsg m = new ZMsg();
        m.add(id);
        m.add(new byte[0]);
        if (topicInReplay) {
            m.add(topic);
        }
        m.add(seqBytes);
        m.add(payload);
        m.send(router);
    }

    static byte[] seqBytes(long v) {
        byte[] b = new byte[8];
        for (int i = 7; i >= 0; i--) {
            b[i] = (byte) v;
            v >>>= 8;
        }
        return b;
    }

    @Override
    public void close() {
        closed = true;
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ctx.close();
    }
}
