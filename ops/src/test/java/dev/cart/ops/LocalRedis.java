package dev.cart.ops;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/** A real {@code redis-server} (Debian's), without persistence, for the proxies' route sync. */
final class LocalRedis implements AutoCloseable {

    private final ChildProcess process;
    final int port;

    private LocalRedis(ChildProcess process, int port) {
        this.process = process;
        this.port = port;
    }

    static LocalRedis start(Path dir) throws IOException, InterruptedException {
        return start(dir, ChildProcess.freePort());
    }

    /** Starts one on {@code port} (a restart after a kill: the clients reconnect to the same address). */
    static LocalRedis start(Path dir, int port) throws IOException, InterruptedException {
        Path binary = Tools.binary("redis-server", "redis-server");
        ChildProcess p = ChildProcess.start(
                "redis",
                dir,
                List.of(
                        binary.toString(),
                        "--port",
                        String.valueOf(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        dir.toString()));
        p.awaitReady("answering PING", 30, () -> ping(port));
        return new LocalRedis(p, port);
    }

    String uri() {
        return "redis://127.0.0.1:" + port;
    }

    private static boolean ping(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            s.setSoTimeout(2_000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readNBytes(7), StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }

    /** Ends it at once, as a crash would (SIGKILL): no goodbye to its clients. */
    void kill() throws IOException, InterruptedException {
        process.signal("KILL");
        process.process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        process.close();
    }
}
