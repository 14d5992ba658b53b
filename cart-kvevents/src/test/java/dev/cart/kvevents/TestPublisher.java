package dev.cart.kvevents;

import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * A vLLM-shaped publisher for the subscriber's transport tests: a PUB socket and a ROUTER replay socket on
 * loopback ports, a replay buffer, and switches to skip a sequence number on the wire, to answer replays in the
 * newer four-frame shape, and to send raw frames. The replay socket is served by its own thread; the PUB socket
 * is used by the test thread only.
 */
final class TestPublisher implements AutoCloseable {

    private final ZContext ctx = new ZContext(1);
    private final ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
    private final ZMQ.Socket router = ctx.createSocket(SocketType.ROUTER);
    private final int pubPort;
    private final int replayPort;
    private final List<byte[]> buffer = new ArrayList<>();
    private final Thread replayThread;
    private volatile boolean closed;
    volatile boolean topicInReplay;
    private long seq;

    TestPublisher() {
        this(false);
    }

    /**
     * With {@code pubLater}, the PUB socket is bound only by {@link #bindPub} (on a port free now): until then a
     * subscriber's connect keeps retrying, and what is published reaches no one.
     */
    TestPublisher(boolean pubLater) {
        pub.setLinger(0);
        router.setLinger(0);
        pubPort = pubLater ? freePort() : pub.bindToRandomPort("tcp://127.0.0.1");
        replayPort = router.bindToRandomPort("tcp://127.0.0.1");
        replayThread = new Thread(this::serveReplays, "test-replay");
        replayThread.setDaemon(true);
        replayThread.start();
    }

    KvStream stream(String replica) {
        return KvStream.of(replica, "tcp://127.0.0.1:" + pubPort, "tcp://127.0.0.1:" + replayPort, "m");
    }

    /** Binds the PUB socket of a publisher made with {@code pubLater}. */
    synchronized void bindPub() {
        pub.bind("tcp://127.0.0.1:" + pubPort);
    }

    private static int freePort() {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Publishes the next batch (and keeps it for replays). */
    synchronized void publish(byte[] payload) {
        buffer.add(payload);
        send(seq++, payload);
    }

    /** Keeps the next batch for replays without sending it: it is lost on the wire. */
    synchronized void lose(byte[] payload) {
        buffer.add(payload);
        seq++;
    }

    /** A process restart: sequence from 0, empty buffer. */
    synchronized void restart() {
        buffer.clear();
        seq = 0;
    }

    synchronized void sendRaw(byte[]... frames) {
        ZMsg m = new ZMsg();
        for (byte[] f : frames) {
            m.add(f);
        }
        m.send(pub);
    }

    private void send(long s, byte[] payload) {
        pub.sendMore("");
        pub.sendMore(KvSubscriber.be8(s));
        pub.send(payload);
    }

    private void serveReplays() {
        try (ZMQ.Poller poller = ctx.createPoller(1)) {
            poller.register(router, ZMQ.Poller.POLLIN);
            while (!closed) {
                if (poller.poll(50) <= 0) {
                    continue;
                }
                ZMsg req = ZMsg.recvMsg(router, ZMQ.DONTWAIT);
                if (req == null) {
                    continue;
                }
                byte[] id = req.pop().getData();
                req.pop(); // delimiter
                long from = KvSubscriber.seqOf(req.pop().getData());
                List<byte[]> copy;
                synchronized (this) {
                    copy = new ArrayList<>(buffer);
                }
                for (int s = (int) from; s < copy.size(); s++) {
                    reply(id, KvSubscriber.be8(s), copy.get(s));
                }
                reply(id, KvSubscriber.be8(-1), new byte[0]);
            }
        } catch (RuntimeException e) {
            if (!closed) {
                throw e;
            }
        }
    }

    private void reply(byte[] id, byte[] seqBytes, byte[] payload) {
        ZMsg m = new ZMsg();
        m.add(id);
        m.add(new byte[0]);
        if (topicInReplay) {
            m.add("");
        }
        m.add(seqBytes);
        m.add(payload);
        m.send(router);
    }

    @Override
    public void close() {
        closed = true;
        try {
            replayThread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ctx.close();
    }
}
