package dev.cart.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay on loopback in front of a real {@code redis-server} that can hold every chunk of bytes, in
 * either direction, for a set time before passing it on: a Redis that answers, but slower than the
 * client's command timeout. With the delay at zero it is a plain relay.
 *
 * <p>Each accepted connection gets its own connection to Redis and two pump threads (one per direction).
 * A pump reads a chunk, waits until the chunk is {@link #delay} old, then writes it: order is kept and the
 * delay does not add up along a stream. Closing the relay closes every socket, which ends the pumps.
 */
final class DelayingRelay implements AutoCloseable {

    private final ServerSocket server;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile long delayNanos;

    private DelayingRelay(ServerSocket server, int target) {
        this.server = server;
        this.target = target;
    }

    /** A relay on a free loopback port forwarding to {@code 127.0.0.1:targetPort}. */
    static DelayingRelay start(int targetPort) throws IOException {
        ServerSocket server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        DelayingRelay relay = new DelayingRelay(server, targetPort);
        Thread acceptor = new Thread(relay::accept, "relay-accept");
        acceptor.setDaemon(true);
        acceptor.start();
        return relay;
    }

    /** The URI a Redis client uses to reach Redis through this relay. */
    String uri() {
        return "redis://127.0.0.1:" + server.getLocalPort();
    }

    /** From now on every chunk waits {@code d} before it is passed on (zero: at once). */
    void delay(Duration d) {
        delayNanos = d.toNanos();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream, "relay-up");
                pump(upstream, client, "relay-down");
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void pump(Socket from, Socket to, String name) {
        Thread t = new Thread(
                () -> {
                    byte[] buf = new byte[16_384];
                    try (InputStream in = from.getInputStream();
                            OutputStream out = to.getOutputStream()) {
                        int n;
                        while ((n = in.read(buf)) >= 0) {
                            long due = System.nanoTime() + delayNanos;
                            long wait;
                            while ((wait = due - System.nanoTime()) > 0) {
                                Thread.sleep(Math.max(1, wait / 1_000_000)); // the fault itself: hold the bytes
                            }
                            out.write(buf, 0, n);
                            out.flush();
                        }
                    } catch (IOException | InterruptedException e) {
                        // the other side or the relay closed
                    } finally {
                        closeQuietly(from);
                        closeQuietly(to);
                    }
                },
                name);
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }
}
