package dev.cart.kvevents;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZEvent;
import org.zeromq.ZFrame;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;
import org.zeromq.ZMonitor;
import org.zeromq.ZMsg;

/**
 * Subscribes to engines' KV-cache event streams over ZMQ (jeromq, pure Java) and feeds them to a
 * {@link KvIndex}: what a host starts once for its pool (one per router instance: every instance follows
 * every engine).
 *
 * <p>Design: one I/O thread per stream, owning that stream's two sockets (ZMQ sockets are not thread-safe):
 * a SUB socket connected to the engine's PUB endpoint (frames {@code [topic, 8-byte big-endian seq,
 * payload]}), bounded by its receive high-water mark, and, when the stream has a replay endpoint, a DEALER
 * socket that asks {@code ["", startSeq]} and reads {@code ["", seq, payload]} or, from vLLM 0.26 on,
 * {@code ["", topic, seq, payload]}, until the end marker (seq -1, empty payload). The thread polls both,
 * hands each frame to the stream's {@link KvFeed} (decoding and applying happen there, on this thread) and
 * checks the replay's time limit between polls. A frame of the wrong shape is counted and dropped. ZMQ
 * reconnects by itself; a restarted engine is recognised by its sequence starting again.
 *
 * <p>A subscription takes effect some time after its connect (the handshake, then the subscription reaching
 * the engine's PUB socket), possibly after the history replay has been answered: what the engine publishes
 * in between reaches no one, and only its next batch would show the gap. So a monitor of the SUB socket
 * reports each completed handshake (the first connect and every reconnect) to the feed, which then asks for
 * the batches from the one it expects ({@link KvFeed#subscribed}).
 *
 * <p>{@link #close} stops every thread (within the poll interval) and closes the sockets. Thread-safe.
 */
public final class KvSubscriber implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KvSubscriber.class);
    private static final byte[] EMPTY = new byte[0];
    private static final int MAX_PER_POLL = 4096;
    /** Numbers the SUB sockets' monitor addresses: one inproc address per stream. */
    private static final AtomicLong MONITORS = new AtomicLong();

    private final ZContext context = new ZContext(1);
    private final List<Thread> threads = new ArrayList<>();
    private final List<KvFeed> feeds = new ArrayList<>();
    private final int receiveHighWaterMark;
    private final long pollMillis;
    private volatile boolean closed;

    private KvSubscriber(Builder b) {
        this.receiveHighWaterMark = b.receiveHighWaterMark;
        this.pollMillis = b.poll.toMillis();
        try {
            for (KvStream s : b.streams) {
                KvFeed feed = b.index.feed(s, null); // its replayer is set on its thread, which owns the socket
                feeds.add(feed);
                Thread t = new Thread(new Loop(s, feed), "cart-kv-" + s.replica() + "-" + s.rank());
                t.setDaemon(true);
                threads.add(t);
            }
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
        for (Thread t : threads) {
            t.start();
        }
    }

    /**
     * A builder for {@code index}: add the streams, then {@link Builder#start()}.
     *
     * @param index the index the streams feed
     * @return a new builder
     * @throws NullPointerException if {@code index} is null
     */
    public static Builder builder(KvIndex index) {
        return new Builder(index);
    }

    /**
     * The streams followed.
     *
     * @return a copy, in the order they were added
     */
    public List<KvStream> streams() {
        List<KvStream> out = new ArrayList<>();
        for (KvFeed f : feeds) {
            out.add(f.stream());
        }
        return out;
    }

    /** Stops every stream's thread and closes the sockets; waits up to a few poll intervals. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Thread t : threads) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(5) + 4 * pollMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        context.close();
    }

    /** One stream's thread: its sockets and its poll loop. */
    private final class Loop implements Runnable {
        private final KvStream stream;
        private final KvFeed feed;

        Loop(KvStream stream, KvFeed feed) {
            this.stream = stream;
            this.feed = feed;
        }

        @Override
        public void run() {
            ZMQ.@Nullable Socket sub = null;
            ZMQ.@Nullable Socket monitor = null;
            ZMQ.@Nullable Socket dealer = null;
            ZMQ.@Nullable Poller poller = null;
            try {
                sub = context.createSocket(SocketType.SUB);
                sub.setLinger(0);
                sub.setRcvHWM(receiveHighWaterMark);
                sub.subscribe(stream.topic().getBytes(StandardCharsets.UTF_8));
                // the monitor's reader connects before the SUB does, so that the first handshake is reported
                String monitorAddress = "inproc://cart-kv-monitor-" + MONITORS.incrementAndGet();
                sub.monitor(monitorAddress, ZMQ.EVENT_HANDSHAKE_PROTOCOL);
                ZMQ.Socket mon = context.createSocket(SocketType.PAIR);
                monitor = mon;
                mon.setLinger(0);
                mon.connect(monitorAddress);
                sub.connect(stream.endpoint());
                String replayEndpoint = stream.replayEndpoint();
                if (replayEndpoint != null) {
                    ZMQ.Socket d = context.createSocket(SocketType.DEALER);
                    dealer = d;
                    d.setLinger(0);
                    d.connect(replayEndpoint);
                    feed.replayVia(from -> {
                        d.sendMore(EMPTY);
                        d.send(be8(from));
                    });
                }
                poller = context.createPoller(3);
                int subIndex = poller.register(sub, ZMQ.Poller.POLLIN);
                int dealerIndex = dealer == null ? -1 : poller.register(dealer, ZMQ.Poller.POLLIN);
                int monitorIndex = poller.register(mon, ZMQ.Poller.POLLIN);
                feed.start();
                while (!closed && !Thread.currentThread().isInterrupted()) {
                    poller.poll(pollMillis);
                    if (poller.pollin(monitorIndex)) {
                        for (ZEvent e = ZEvent.recv(mon, ZMQ.DONTWAIT); e != null; e = ZEvent.recv(mon, ZMQ.DONTWAIT)) {
                            if (e.getEvent() == ZMonitor.Event.HANDSHAKE_PROTOCOL) {
                                feed.subscribed();
                            }
                        }
                    }
                    if (poller.pollin(subIndex)) {
                        for (int i = 0; i < MAX_PER_POLL; i++) {
                            ZMsg m = ZMsg.recvMsg(sub, ZMQ.DONTWAIT);
                            if (m == null) {
                                break;
                            }
                            live(m);
                        }
                    }
                    if (dealerIndex >= 0 && poller.pollin(dealerIndex)) {
                        for (int i = 0; i < MAX_PER_POLL; i++) {
                            ZMsg m = ZMsg.recvMsg(dealer, ZMQ.DONTWAIT);
                            if (m == null) {
                                break;
                            }
                            replay(m);
                        }
                    }
                    feed.tick();
                }
            } catch (ZMQException e) {
                if (!closed) {
                    LOG.error("KV-event stream of {} rank {} stopped", stream.replica(), stream.rank(), e);
                }
            } catch (RuntimeException e) {
                LOG.error("KV-event stream of {} rank {} stopped", stream.replica(), stream.rank(), e);
            } finally {
                if (poller != null) {
                    poller.close();
                }
                if (dealer != null) {
                    dealer.close();
                }
                if (monitor != null) {
                    monitor.close();
                }
                if (sub != null) {
                    sub.close();
                }
            }
        }

        /** {@code [topic, seq, payload]}. */
        private void live(ZMsg m) {
            try {
                if (m.size() != 3) {
                    feed.malformedFrame();
                    return;
                }
                m.pop(); // topic
                ZFrame seq = m.pop();
                ZFrame payload = m.pop();
                if (seq.size() != 8) {
                    feed.malformedFrame();
                    return;
                }
                feed.live(seqOf(seq.getData()), payload.getData());
            } catch (RuntimeException e) {
                feed.malformedFrame();
            } finally {
                m.destroy();
            }
        }

        /** {@code ["", seq, payload]} or {@code ["", topic, seq, payload]}; seq -1 ends the replay. */
        private void replay(ZMsg m) {
            try {
                int n = m.size();
                if (n != 3 && n != 4) {
                    feed.malformedFrame();
                    return;
                }
                ZFrame delimiter = m.pop();
                if (delimiter.size() != 0) {
                    feed.malformedFrame();
                    return;
                }
                if (n == 4) {
                    m.pop(); // topic
                }
                ZFrame seq = m.pop();
                ZFrame payload = m.pop();
                if (seq.size() != 8) {
                    feed.malformedFrame();
                    return;
                }
                long s = seqOf(seq.getData());
                if (s == -1) {
                    feed.replayEnded();
                } else {
                    feed.replayed(s, payload.getData());
                }
            } catch (RuntimeException e) {
                feed.malformedFrame();
            } finally {
                m.destroy();
            }
        }
    }

    static long seqOf(byte[] b) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[i] & 0xFF);
        }
        return v;
    }

    static byte[] be8(long v) {
        byte[] b = new byte[8];
        for (int i = 7; i >= 0; i--) {
            b[i] = (byte) v;
            v >>>= 8;
        }
        return b;
    }

    /** Builds and starts a {@link KvSubscriber}. */
    public static final class Builder {
        private final KvIndex index;
        private final List<KvStream> streams = new ArrayList<>();
        private int receiveHighWaterMark = 100_000;
        private Duration poll = Duration.ofMillis(100);

        private Builder(KvIndex index) {
            this.index = Objects.requireNonNull(index);
        }

        /**
         * Follows {@code stream} (one I/O thread each).
         *
         * @param stream the stream; each replica and rank at most once per index
         * @return this builder
         * @throws NullPointerException if {@code stream} is null
         */
        public Builder stream(KvStream stream) {
            streams.add(Objects.requireNonNull(stream));
            return this;
        }

        /**
         * The SUB socket's receive high-water mark in messages (default 100,000, vLLM's send-side default): a
         * publisher that floods past it loses messages on the wire, which the stream sees as a gap and replays.
         *
         * @param messages at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code messages} is below 1
         */
        public Builder receiveHighWaterMark(int messages) {
            if (messages < 1) {
                throw new IllegalArgumentException("receiveHighWaterMark must be at least 1, was " + messages);
            }
            this.receiveHighWaterMark = messages;
            return this;
        }

        /**
         * How long a stream's thread waits for a frame before it checks its replay's time limit and its stop
         * flag. Default 100 ms; {@link KvSubscriber#close} takes up to a few of these.
         *
         * @param d positive (milliseconds are used)
         * @return this builder
         * @throws IllegalArgumentException if {@code d} is zero or negative
         */
        public Builder pollInterval(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("pollInterval must be positive, was " + d);
            }
            this.poll = d;
            return this;
        }

        /**
         * Registers the streams with the index and starts one daemon thread per stream. ZMQ connects in the
         * background: an engine that is not up yet is reached when it starts.
         *
         * @return the running subscriber; close it to stop the threads
         * @throws IllegalStateException if the index cannot follow another stream ({@link KvIndex#MAX_STREAMS}),
         *     or already follows one of these streams' replica and rank
         */
        public KvSubscriber start() {
            return new KvSubscriber(this);
        }
    }
}
