package dev.cart.proxy.netty;

import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.http.BodyBudget;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.Relay;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Netty front ({@code server.engine: netty}, the default): client connections and upstream connections
 * on the same event loops (epoll when its native library loads, NIO otherwise), one loop per core. A
 * client connection's request is parsed by Netty's {@link HttpServerCodec}, planned by {@link ProxyCore},
 * its body aggregated only as far as routing needs it (whole, within {@code proxy.max_body_bytes} and the
 * {@link BodyBudget}, refused while reading), and the {@link Forwarder}'s steps are performed on the
 * connection's own loop: the upstream connection comes from that loop's pool ({@link NettyUpstream}), the
 * backoff is a timer on the loop, so a request crosses no thread.
 *
 * <p>Why slow clients cost nothing here: a connection holds no thread, only its channel and what it has
 * sent. Each connection must send a whole request within {@code server.request_read_timeout_secs} from its
 * first byte (head and body: a trickle is cut off there) and may stay silent between requests for
 * {@code server.idle_timeout_secs}; {@code server.max_connections} bounds the connections.
 *
 * <p>A client connection's pipeline (deadlines, codec, body intake, exchange) is drawn in the package's
 * documentation; an {@link UpstreamCall} is the exchange's one send to a replica and the relay of its answer, on an
 * upstream channel of the same loop ({@link NettyUpstream}). {@link NettyHeaders} gives the core Netty's header
 * maps without a copy.
 *
 * <p>Relaying: the answer's head, then its body chunk by chunk as it arrives (flushed at the end of each
 * read from the replica, so a stream's events go out as they come). Backpressure: the client connection
 * buffers up to {@link Relay#BUFFER_BYTES} of answer; beyond that, reading from the replica pauses until
 * the client has read, so a slow reader costs at most that much memory, and an answer up to that size is
 * read from the replica whole at the replica's speed: its slot is released when its answer is complete,
 * however slowly the client reads. Across connections, the {@link AnswerBudget} bounds the total: while it
 * is spent, a connection whose client has not yet taken what was queued for it reads no more either.
 * Retries happen only before the first byte of an answer is relayed.
 *
 * <p>Concurrency: every handler of a connection, and the upstream connection it uses, runs on one event
 * loop; the only shared state is the core's (thread-safe) and the connection count. One step leaves the
 * loop: preparing a body of {@link BodyIntake#OFFLOAD_BYTES} or more, or any routed body in token mode (extraction,
 * tokenizing, the remote-media scan), runs on a small pool so that one connection's tokenization never
 * keeps the loop's other connections (a {@code /health} probe) waiting; the connection reads nothing
 * meanwhile, and the result comes back to its loop, which alone touches the connection's state.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
public final class NettyFront implements AutoCloseable {

    /** How many pipelined messages a connection queues while an answer is produced (tests size their load by it). */
    public static final int PIPELINED_MESSAGES = BodyIntake.PIPELINED_MESSAGES;

    /** How many of the client's buffers a request body keeps before it is copied into one (tests use it). */
    public static final int BODY_PIECES = RequestBody.PIECES;

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final ThreadPoolExecutor extraction;
    private final Channel serverChannel;
    private final String transport;
    private final int threads;
    /** The open client connections (a channel leaves the group when it closes). */
    private final ChannelGroup clients;

    private NettyFront(
            EventLoopGroup boss,
            EventLoopGroup workers,
            ThreadPoolExecutor extraction,
            Channel serverChannel,
            String transport,
            int threads,
            ChannelGroup clients) {
        this.clients = clients;
        this.boss = boss;
        this.workers = workers;
        this.extraction = extraction;
        this.serverChannel = serverChannel;
        this.transport = transport;
        this.threads = threads;
    }

    /**
     * Binds on {@code server.host:port}; the channel accepts at once, so {@link #start} has nothing to do. Epoll
     * when {@code nativeTransport} and its library loads, NIO otherwise.
     */
    public static NettyFront listen(
            ProxyConfig config, ProxyCore core, BodyBudget budget, AnswerBudget answers, boolean nativeTransport)
            throws IOException {
        boolean epoll = nativeTransport && Epoll.isAvailable();
        IoHandlerFactory factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> serverClass =
                epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        Class<? extends Channel> clientClass = epoll ? EpollSocketChannel.class : NioSocketChannel.class;
        int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, factory);
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(threads, factory);
        ProxyConfig.Server limits = config.server();
        NettyUpstream upstream = new NettyUpstream(
                clientClass, (int) Math.min(Integer.MAX_VALUE, config.proxy().connectTimeoutSecs() * 1000L));
        AtomicInteger connections = new AtomicInteger();
        ChannelGroup clients = new DefaultChannelGroup("cart-clients", GlobalEventExecutor.INSTANCE);
        ThreadPoolExecutor extraction = extractionPool(threads, limits.maxConcurrentRequests());
        boolean tokenMode = config.cache().tokens().on();
        HttpDecoderConfig decoding = new HttpDecoderConfig()
                .setMaxInitialLineLength(limits.maxRequestLineBytes())
                .setMaxHeaderSize(limits.maxHeaderBytes())
                .setMaxChunkSize(64 * 1024);
        ServerBootstrap b = new ServerBootstrap()
                .group(boss, workers)
                .channel(serverClass)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // a client that half-closes after sending still gets its answer (and a body cut short, a 400)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(
                        ChannelOption.WRITE_BUFFER_WATER_MARK,
                        new WriteBufferWaterMark(Relay.BUFFER_BYTES / 2, Relay.BUFFER_BYTES))
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (connections.incrementAndGet() > limits.maxConnections()) {
                            connections.decrementAndGet();
                            ch.close();
                            return;
                        }
                        ch.closeFuture().addListener(f -> connections.decrementAndGet());
                        clients.add(ch);
                        ConnectionDeadlines deadlines = new ConnectionDeadlines(limits);
                        BodyIntake intake = new BodyIntake(core, budget, extraction, tokenMode, deadlines);
                        ch.pipeline()
                                .addLast("deadlines", deadlines)
                                .addLast("codec", new HttpServerCodec(decoding.clone()))
                                .addLast("intake", intake)
                                .addLast(
                                        "exchange",
                                        new ClientExchange(config, core, answers, upstream, deadlines, intake));
                    }
                });
        try {
            Channel ch =
                    b.bind(limits.host(), limits.port()).syncUninterruptibly().channel();
            return new NettyFront(boss, workers, extraction, ch, epoll ? "epoll" : "nio", threads, clients);
        } catch (Exception e) { // Netty rethrows the bind's checked exception unchecked
            boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            extraction.shutdownNow();
            String m = String.valueOf(e.getMessage());
            if (e instanceof java.net.BindException || m.contains("Address already in use")) {
                // epoll reports a taken port as a native error: say it the way the JDK does
                java.net.BindException taken = new java.net.BindException("Address already in use");
                taken.initCause(e);
                throw taken;
            }
            throw new IOException(m, e);
        }
    }

    /** The port it listens on. */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /** Starts accepting connections (bound and accepting since {@link #listen}). */
    public void start() {
        // bound and accepting since listen
    }

    /** What serves requests, for the startup log line. */
    public String description() {
        return "the Netty front (" + transport + ", " + threads + " event loop(s))";
    }

    /**
     * Stops accepting connections: the listening socket is closed, so a new connection is refused. The open
     * connections go on. Idempotent; blocks until the socket is closed.
     */
    public void stopAccepting() {
        serverChannel.close().syncUninterruptibly();
    }

    /** How many client connections have a request being read or answered now (any thread; a moment's view). */
    public int requestsInProgress() {
        int n = 0;
        for (Channel ch : clients) {
            ClientExchange c = ch.pipeline().get(ClientExchange.class);
            if (c != null && c.inRequest()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Closes every client connection, each on its own loop; a request still in progress ends as
     * {@code drain_cut} and a stream being relayed gets an error event ({@code message}) first. Returns how
     * many connections had a request in progress; waits (up to 5 s) until the connections are closed.
     */
    public int cutAll(String message) {
        int cut = 0;
        for (Channel ch : clients) {
            ClientExchange c = ch.pipeline().get(ClientExchange.class);
            if (c == null) {
                ch.close();
                continue;
            }
            if (c.inRequest()) {
                cut++;
            }
            ch.eventLoop().execute(() -> c.cutForDrain(message));
        }
        clients.newCloseFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        return cut;
    }

    /** Stops accepting and cuts the connections off; in-flight exchanges end. */
    @Override
    public void close() {
        serverChannel.close().syncUninterruptibly();
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        boss.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        workers.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        extraction.shutdownNow();
    }

    /**
     * The threads that prepare large and token-mode bodies: one per event loop, a queue of at most
     * {@code queue} waiting bodies (beyond it a request gets 503), threads ended after 60 s idle.
     */
    private static ThreadPoolExecutor extractionPool(int threads, int queue) {
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
                threads, threads, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(Math.max(1, queue)), r -> {
                    Thread t = new Thread(r, "cart-extract-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }
}
