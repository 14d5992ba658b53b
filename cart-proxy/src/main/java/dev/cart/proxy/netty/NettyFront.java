package dev.cart.proxy.netty;

import com.sun.net.httpserver.Headers;
import dev.cart.proxy.Front;
import dev.cart.proxy.answer.ResponseObserver;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.http.BodyBudget;
import dev.cart.proxy.http.HeaderView;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.http.RequestHead;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.Relay;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
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
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * loop: preparing a body of {@link #OFFLOAD_BYTES} or more, or any routed body in token mode (extraction,
 * tokenizing, the remote-media scan), runs on a small pool so that one connection's tokenization never
 * keeps the loop's other connections (a {@code /health} probe) waiting; the connection reads nothing
 * meanwhile, and the result comes back to its loop, which alone touches the connection's state.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
public final class NettyFront implements Front {

    private static final Logger LOG = LoggerFactory.getLogger(NettyFront.class);

    /**
     * Where an answer's bytes are copied out of Netty's (direct) buffers for the {@link ResponseObserver},
     * one per event loop: the observer keeps nothing of the array it is handed, so a loop reuses one array
     * for every chunk of every answer instead of allocating one per chunk, and an idle stream holds none.
     */
    private static final int OBSERVE_SLICE_BYTES = 8 * 1024;

    private static final FastThreadLocal<byte[]> OBSERVE_SLICE = new FastThreadLocal<>() {
        @Override
        protected byte[] initialValue() {
            return new byte[OBSERVE_SLICE_BYTES];
        }
    };
    /**
     * How much of a client's next requests (pipelined) a connection holds while an answer is produced: it keeps
     * reading the client during the answer, so that a half-close (the client has gone) is noticed at once, and
     * stops reading beyond this many queued messages or body bytes until the answer is complete.
     */
    public static final int PIPELINED_MESSAGES = 16;

    static final int PIPELINED_BYTES = 64 * 1024;

    /** How long a connection answered before its request was read goes on dropping the request's rest. */
    static final long LINGER_MILLIS = 2_000;

    /**
     * Bodies from this size on, and every routed body in token mode, are prepared (extracted, tokenized,
     * scanned) on {@link #extractionPool} rather than on the event loop.
     */
    static final int OFFLOAD_BYTES = 64 * 1024;

    /**
     * The chunks of an answer that arrive in one read from the replica are written to the client as one chunk
     * while together they are at most this size; larger ones go out as they came, uncopied.
     */
    static final int GATHER_BYTES = 8 * 1024;

    /**
     * How many of the client's buffers a request body keeps as they are (retained) before it is copied into one
     * buffer of its own: a body trickled in many small reads holds no more than this many of the client's buffers.
     */
    public static final int BODY_PIECES = 16;

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final ThreadPoolExecutor extraction;
    private final Channel serverChannel;
    private final String transport;
    private final int threads;

    private NettyFront(
            EventLoopGroup boss,
            EventLoopGroup workers,
            ThreadPoolExecutor extraction,
            Channel serverChannel,
            String transport,
            int threads) {
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
    public static Front listen(
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
        ThreadPoolExecutor extraction = extractionPool(threads, limits.maxConcurrentRequests());
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
                        Connection c = new Connection(config, core, budget, answers, upstream, extraction);
                        ch.pipeline()
                                .addLast("clock", c.clock)
                                .addLast("codec", new HttpServerCodec(decoding.clone()))
                                .addLast("proxy", c);
                    }
                });
        try {
            Channel ch =
                    b.bind(limits.host(), limits.port()).syncUninterruptibly().channel();
            return new NettyFront(boss, workers, extraction, ch, epoll ? "epoll" : "nio", threads);
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

    @Override
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    @Override
    public void start() {
        // bound and accepting since listen
    }

    @Override
    public String description() {
        return "the Netty front (" + transport + ", " + threads + " event loop(s))";
    }

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

    /** Netty's headers as the core reads them ({@link HeaderView}): no copy. */
    static HeaderView view(HttpHeaders h) {
        return new NettyHeaders(h);
    }

    /**
     * The view of a Netty header map that a decoder made (names and values validated as it read them): the
     * front edits such a map into the next message's head ({@link Connection#pruned}) instead of copying it.
     */
    private static final class NettyHeaders implements HeaderView {
        final HttpHeaders map;

        NettyHeaders(HttpHeaders map) {
            this.map = map;
        }

        @Override
        public String first(String name) {
            return map.get(name);
        }

        @Override
        public List<String> all(String name) {
            return map.getAll(name);
        }

        @Override
        public void forEach(BiConsumer<String, String> each) {
            for (Iterator<Map.Entry<String, String>> it = map.iteratorAsString(); it.hasNext(); ) {
                Map.Entry<String, String> e = it.next();
                each.accept(e.getKey(), e.getValue());
            }
        }

        @Override
        public void forEachName(Consumer<CharSequence> each) {
            for (Iterator<Map.Entry<CharSequence, CharSequence>> it = map.iteratorCharSequence(); it.hasNext(); ) {
                each.accept(it.next().getKey());
            }
        }

        @Override
        public boolean has(String name) {
            return map.contains(name);
        }
    }

    private static void copy(Headers from, HttpHeaders to) {
        for (Map.Entry<String, List<String>> e : from.entrySet()) {
            for (String v : e.getValue()) {
                to.add(e.getKey(), v);
            }
        }
    }

    /** Where a client connection is. */
    private enum Phase {
        /** Waiting for a request head. */
        HEAD,
        /** Reading a proxied request's body. */
        BODY,
        /** Reading and dropping the rest of a request whose answer is already decided. */
        DISCARD,
        /** The request is read; its answer is being produced. */
        ANSWER
    }

    /**
     * One client connection: its request timers, the request in progress and the exchange it drives. All
     * of it runs on the connection's event loop.
     */
    private static final class Connection extends ChannelDuplexHandler {
        private final ProxyConfig config;
        private final ProxyCore core;
        private final BodyBudget budget;
        private final NettyUpstream upstream;
        /** Watches the raw bytes: the first byte of a request starts its read deadline. */
        final ChannelHandler clock = new Clock();

        private ChannelHandlerContext ctx;
        private Phase phase = Phase.HEAD;
        private boolean awaitingFirstByte = true;
        /*
         * The connection's three deadlines (idle between requests, a request read whole, an exchange's answer) are
         * checked by timers armed lazily, as IdleStateHandler does: a request moves a deadline (a field) instead
         * of cancelling one scheduled task and scheduling another, which cost three task allocations and six
         * priority-queue operations on the loop per request. A timer that fires finds its deadline moved and
         * re-arms itself for the rest, or finds nothing due (the connection busy, the request read, the call
         * finished) and stops until the deadline is set again. Deadlines only move later on a connection (each is
         * "now" plus a configured time), so a pending timer never fires after its deadline, except for a call
         * whose exchange has an earlier deadline than the pending timer's (a reload shortened the timeout):
         * that one is re-armed at once. Loop-confined, as the rest of the connection's state.
         */
        /** When the idle connection is closed ({@link System#nanoTime}), while {@link #awaitingFirstByte}. */
        private long idleBy;
        /** When the request in progress must have been read whole, while {@link #readDue}. */
        private long readBy;

        private boolean readDue;
        /** The pending idle check, null when none is armed. */
        private ScheduledFuture<?> idleTimer;
        /** The pending read check, null when none is armed. */
        private ScheduledFuture<?> readTimer;
        /** The pending check of the current call's deadline, null when none is armed; and when it fires. */
        private ScheduledFuture<?> callTimer;

        private long callTimerAt;
        /** The client's next requests, read while an answer is produced: handled once it is complete. */
        private final ArrayDeque<Object> queued = new ArrayDeque<>();
        /** The body bytes in {@link #queued}. */
        private int queuedBytes;

        // the request in progress
        private long start;
        private ProxyCore.Plan plan;
        private boolean keepAlive;
        private boolean head;
        private boolean requestComplete;
        private boolean responseComplete;
        private boolean closeAfter;
        /** The answer is out and the output shut; the rest of the request is read and dropped until it ends. */
        private boolean lingering;

        private int status = -1;
        private BodyBudget.Grant grant;
        /*
         * The request body read so far (bodyLength bytes): the client's buffers as Netty decoded them,
         * retained, not copied (as HttpObjectAggregator does), while they are at most BODY_PIECES; beyond that (a
         * body trickled in many small reads) one buffer of the channel's allocator they are copied into, which then
         * grows by doubling. So a body is copied once, into the array the core reads (extraction takes a byte[]),
         * and the request's first send to a replica is written from these (direct) buffers as they are: no heap
         * copy of it to encode, none into a direct buffer for the socket. The connection owns it until that
         * send takes it; released when the request ends otherwise (refused, the client gone, an answer without a
         * send). A retry sends the core's array.
         */
        private ByteBuf body;

        private int bodyLength;
        private Forwarder.Exchange exchange;
        private ScheduledFuture<?> backoff;
        private Call call;
        /** True while the request's body is being prepared off the loop. */
        private boolean extracting;
        /** Answer bytes queued for the client and not yet written to its socket. */
        private long pending;

        private final boolean tokenMode;
        private final Executor extraction;
        private final AnswerBudget answers;
        /** The names {@link #pruned} removes, gathered first (a Netty map is not edited while it is walked). */
        private final ArrayList<CharSequence> dropped = new ArrayList<>();

        private final Consumer<CharSequence> drop = dropped::add;

        Connection(
                ProxyConfig config,
                ProxyCore core,
                BodyBudget budget,
                AnswerBudget answers,
                NettyUpstream upstream,
                Executor extraction) {
            this.config = config;
            this.core = core;
            this.budget = budget;
            this.upstream = upstream;
            this.extraction = extraction;
            this.answers = answers;
            this.tokenMode = config.cache().tokens().on();
        }

        private final class Clock extends ChannelInboundHandlerAdapter {
            @Override
            public void channelRead(ChannelHandlerContext c, Object msg) {
                if (awaitingFirstByte && msg instanceof ByteBuf buf && buf.isReadable()) {
                    firstByte();
                }
                c.fireChannelRead(msg);
            }
        }

        /** A request's first byte is here: the connection is no longer idle, and the request must be read in time. */
        private void firstByte() {
            awaitingFirstByte = false; // the idle check, when it fires, finds the connection busy and stops
            long timeout = TimeUnit.SECONDS.toNanos(config.server().requestReadTimeoutSecs());
            readBy = System.nanoTime() + timeout;
            readDue = true;
            if (readTimer == null) {
                readTimer = ctx.executor().schedule(this::readCheck, timeout, TimeUnit.NANOSECONDS);
            }
        }

        /** The read check fired: the request's read deadline, if it still stands, is met, passed or moved. */
        private void readCheck() {
            readTimer = null;
            if (!readDue) {
                return;
            }
            long left = readBy - System.nanoTime();
            if (left > 0) {
                readTimer = ctx.executor().schedule(this::readCheck, left, TimeUnit.NANOSECONDS);
                return;
            }
            readDue = false;
            readTimedOut();
        }

        /** The idle check fired: the connection, if still idle, is closed once its idle time is up. */
        private void idleCheck() {
            idleTimer = null;
            if (!awaitingFirstByte) {
                return; // a request is in progress; idle() arms the check again after it
            }
            long left = idleBy - System.nanoTime();
            if (left > 0) {
                idleTimer = ctx.executor().schedule(this::idleCheck, left, TimeUnit.NANOSECONDS);
                return;
            }
            ctx.close();
        }

        /** The current call's deadline is {@code due} ({@link System#nanoTime}): the call check is armed for it. */
        private void callDue(long due) {
            if (callTimer != null && callTimerAt <= due) {
                return; // fires first, and re-arms for the rest
            }
            cancel(callTimer);
            long delay = Math.max(1, due - System.nanoTime());
            callTimerAt = System.nanoTime() + delay;
            callTimer = ctx.executor().schedule(this::callCheck, delay, TimeUnit.NANOSECONDS);
        }

        /** The call check fired: the current call, if unfinished, ends at its deadline or is checked again then. */
        private void callCheck() {
            callTimer = null;
            Call c = call;
            if (c == null || c.finished) {
                return;
            }
            long left = c.due - System.nanoTime();
            if (left > 0) {
                callTimerAt = System.nanoTime() + left;
                callTimer = ctx.executor().schedule(this::callCheck, left, TimeUnit.NANOSECONDS);
                return;
            }
            c.deadline();
        }

        @Override
        public void handlerAdded(ChannelHandlerContext c) {
            this.ctx = c;
        }

        @Override
        public void channelActive(ChannelHandlerContext c) {
            idle();
            c.fireChannelActive();
        }

        private void idle() {
            awaitingFirstByte = true;
            readDue = false; // the read check, when it fires, finds nothing due and stops
            long timeout = TimeUnit.SECONDS.toNanos(config.server().idleTimeoutSecs());
            idleBy = System.nanoTime() + timeout;
            if (idleTimer == null) {
                idleTimer = ctx.executor().schedule(this::idleCheck, timeout, TimeUnit.NANOSECONDS);
            }
        }

        /** The request was not read whole in time: the connection is closed (a trickle is cut off). */
        private void readTimedOut() {
            if (!requestComplete || phase == Phase.HEAD) {
                ctx.close();
            }
        }

        private static void cancel(ScheduledFuture<?> f) {
            if (f != null) {
                f.cancel(false);
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext c, Object msg) {
            if (phase == Phase.ANSWER || !queued.isEmpty()) {
                queued.add(msg); // pipelined: handled once the answer in progress is complete
                if (msg instanceof HttpContent content) {
                    queuedBytes += content.content().readableBytes();
                }
                c.channel().config().setAutoRead(readsDuringAnswer());
                return;
            }
            try {
                handle(msg);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void handle(Object msg) {
            if (msg instanceof HttpRequest req) {
                if (phase != Phase.HEAD) {
                    ctx.close(); // cannot happen with a well-behaved codec; never answer out of order
                    return;
                }
                head(req);
            }
            if (msg instanceof HttpContent content) {
                content(content);
            }
        }

        private void head(HttpRequest req) {
            start = System.nanoTime();
            requestComplete = false;
            responseComplete = false;
            closeAfter = false;
            status = -1;
            keepAlive = HttpUtil.isKeepAlive(req);
            head = HttpMethod.HEAD.equals(req.method());
            if (req.decoderResult().isFailure()) {
                Throwable cause = req.decoderResult().cause();
                Answer a;
                String rejected = null;
                if (cause instanceof TooLongHttpLineException) {
                    rejected = "request_line";
                    a = ProxyCore.uriTooLong(config.server());
                } else if (cause instanceof TooLongHttpHeaderException) {
                    rejected = "headers";
                    a = ProxyCore.headersTooLarge(config.server());
                } else {
                    a = Answer.error(400, "invalid_request", "the request is not valid HTTP/1.1");
                }
                core.refusedHead(rejected, a.status(), start);
                phase = Phase.DISCARD;
                writeAnswer(a, true, false);
                return;
            }
            URI uri;
            try {
                uri = new URI(req.uri());
            } catch (URISyntaxException e) {
                Answer a = Answer.error(400, "invalid_request_target", "the request target is not a valid URI");
                core.refusedHead(null, 400, start);
                phase = Phase.DISCARD;
                writeAnswer(a, true, false);
                return;
            }
            String method = req.method().name();
            RequestHead rh = new RequestHead(
                    method,
                    uri.getRawPath(),
                    uri.getRawQuery(),
                    uri.getPath(),
                    view(req.headers()),
                    method.length()
                            + req.uri().length()
                            + req.protocolVersion().text().length()
                            + 2);
            plan = core.plan(rh);
            if (plan instanceof ProxyCore.Own own) {
                phase = Phase.DISCARD;
                // an answer before a body the client waits to send (Expect: 100-continue) ends the connection
                writeAnswer(own.answer(), HttpUtil.is100ContinueExpected(req), true);
                return;
            }
            ProxyCore.Proxied p = (ProxyCore.Proxied) plan;
            grant = budget.grant();
            if (!p.needsBody()) {
                phase = Phase.DISCARD;
                return; // the exchange starts once the request has been read
            }
            long declared = HttpUtil.getContentLength(req, -1L);
            if (declared > core.maxBodyBytes()) {
                phase = Phase.DISCARD;
                writeAnswer(core.tooLarge(p), true, true);
                return;
            }
            if (HttpUtil.is100ContinueExpected(req)) {
                ctx.writeAndFlush(new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER));
            }
            dropBody();
            bodyLength = 0;
            phase = Phase.BODY;
        }

        private void content(HttpContent content) {
            boolean last = content instanceof LastHttpContent;
            if (phase == Phase.DISCARD) {
                if (content.decoderResult().isFailure()) {
                    closeAfter = true;
                }
                if (last) {
                    requestRead();
                    if (lingering) {
                        ctx.close();
                        return;
                    }
                    if (plan instanceof ProxyCore.Proxied p && status == -1 && !p.needsBody()) {
                        phase = Phase.ANSWER;
                        ProxyCore.Prepared prepared = core.prepare(p, new byte[0]);
                        if (prepared.answer() != null) {
                            writeAnswer(prepared.answer(), false, true);
                        } else if (prepared.pending() != null) {
                            // written on this connection's loop once every replica has answered
                            prepared.pending()
                                    .thenAccept(a -> ctx.executor().execute(() -> writeAnswer(a, false, true)));
                        } else {
                            drive(prepared.exchange().next(), prepared.exchange());
                        }
                    } else {
                        maybeNext();
                    }
                }
                return;
            }
            if (phase != Phase.BODY) {
                return;
            }
            ProxyCore.Proxied p = (ProxyCore.Proxied) plan;
            if (content.decoderResult().isFailure()) {
                phase = Phase.DISCARD;
                dropBody();
                writeAnswer(core.badBody(p), true, true);
                return;
            }
            ByteBuf buf = content.content();
            int n = buf.readableBytes();
            if (bodyLength + (long) n > core.maxBodyBytes()) {
                phase = Phase.DISCARD;
                dropBody();
                writeAnswer(core.tooLarge(p), true, true);
                return;
            }
            if (!grant.take(n)) {
                phase = Phase.DISCARD;
                dropBody();
                writeAnswer(budget.exhausted(p), true, true);
                return;
            }
            if (n > 0) {
                addToBody(buf, n);
            }
            if (last) {
                requestRead();
                phase = Phase.ANSWER;
                byte[] bytes = new byte[bodyLength];
                if (bodyLength > 0) {
                    body.getBytes(body.readerIndex(), bytes);
                }
                if (bytes.length < OFFLOAD_BYTES && !(tokenMode && p.kind == ProxyCore.Kind.ROUTED)) {
                    prepared(core.prepare(p, bytes));
                    return;
                }
                // extraction (tokenizing, scanning a large body) off the loop, so that the loop's other
                // connections are not kept waiting; the answer is still written on this connection's loop
                ctx.channel().config().setAutoRead(false);
                extracting = true;
                try {
                    extraction.execute(() -> {
                        ProxyCore.Prepared prepared;
                        try {
                            prepared = core.prepare(p, bytes);
                        } catch (RuntimeException | Error e) {
                            LOG.error("preparing a request failed", e);
                            prepared = new ProxyCore.Prepared(
                                    null,
                                    Answer.error(500, "internal_error", "the proxy failed to handle the request"));
                        }
                        ProxyCore.Prepared done = prepared;
                        ctx.executor().execute(() -> extracted(done));
                    });
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    extracting = false;
                    p.log.status(503);
                    p.log.result("overloaded");
                    writeAnswer(
                            Answer.error(503, "overloaded", "the proxy's extraction queue is full; retry shortly")
                                    .with("Retry-After", "1"),
                            false,
                            true);
                }
            }
        }

        /**
         * Adds {@code n} bytes of the client's buffer to {@link #body}: the buffer itself, retained, while the body
         * has fewer than {@link #BODY_PIECES} of them; past that, all in one buffer that grows by doubling.
         */
        private void addToBody(ByteBuf buf, int n) {
            ByteBuf b = body;
            if (b == null) {
                body = ctx.alloc().compositeDirectBuffer(BODY_PIECES).addComponent(true, buf.retain());
            } else if (b instanceof CompositeByteBuf pieces && pieces.numComponents() < BODY_PIECES) {
                pieces.addComponent(true, buf.retain());
            } else if (b instanceof CompositeByteBuf pieces) {
                int max = core.maxBodyBytes();
                ByteBuf one =
                        ctx.alloc().directBuffer((int) Math.min(max, Math.max(2L * bodyLength, bodyLength + n)), max);
                one.writeBytes(pieces, pieces.readerIndex(), bodyLength);
                one.writeBytes(buf, buf.readerIndex(), n);
                pieces.release();
                body = one;
            } else {
                b.writeBytes(buf, buf.readerIndex(), n);
            }
            bodyLength += n;
        }

        /** Releases the request body's buffers, if the connection still holds them. */
        private void dropBody() {
            ByteBuf b = body;
            if (b != null) {
                body = null;
                b.release();
            }
        }

        /**
         * The request body's buffers for its first send, when they hold the {@code length} bytes of the core's
         * array: the caller owns them then. Null when already taken (a retry) or dropped.
         */
        private ByteBuf takeBody(int length) {
            ByteBuf b = body;
            if (b == null || b.readableBytes() != length) {
                return null;
            }
            body = null;
            return b;
        }

        /** Back on the loop after an extraction off it: goes on, unless the client left meanwhile. */
        private void extracted(ProxyCore.Prepared prepared) {
            extracting = false;
            if (!ctx.channel().isActive()) {
                end(-1); // deferred by channelInactive: the exchange never started, so no lease was taken
                return;
            }
            prepared(prepared);
        }

        /** What the core prepared for the request just read: its answer, or the exchange to drive. */
        private void prepared(ProxyCore.Prepared prepared) {
            if (prepared.answer() != null) {
                writeAnswer(prepared.answer(), false, true);
            } else {
                drive(prepared.exchange().next(), prepared.exchange());
            }
        }

        /**
         * {@code map} less every line of each name in {@link #dropped}, which is emptied: a decoded message's
         * header map made into the head of the message the front sends next.
         */
        private HttpHeaders pruned(HttpHeaders map) {
            for (int i = 0; i < dropped.size(); i++) {
                map.remove(dropped.get(i));
            }
            dropped.clear();
            return map;
        }

        private void requestRead() {
            requestComplete = true;
            readDue = false;
        }

        // ---- answers

        /**
         * Writes one of the proxy's own answers, whole. {@code close} ends the connection after it; a
         * {@code finish} answer ends the request (releases its slot and counts it).
         */
        private void writeAnswer(Answer a, boolean close, boolean finish) {
            ByteBuf content = head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(a.body());
            FullHttpResponse r =
                    new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(a.status()), content);
            copy(a.headers(), r.headers());
            HttpUtil.setContentLength(r, a.body().length);
            closeAfter |= close || a.closeConnection() || !keepAlive;
            if (closeAfter) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            }
            status = a.status();
            ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> responseDone(finish));
        }

        /** The answer is written (or failed to be): the request ends; the next one may start. */
        private void responseDone(boolean finish) {
            responseComplete = true;
            if (finish) {
                end(status);
            }
            if (closeAfter || !ctx.channel().isActive()) {
                closeLingering();
                return;
            }
            maybeNext();
        }

        /**
         * Closes the connection after an answer. When the client is still sending the request (the proxy answered
         * before reading its whole body: too large, malformed, no budget), closing at once would reset the
         * connection with the client's bytes unread, and a client still writing would see the reset instead of the
         * answer. So, as nginx's lingering close does, the proxy shuts its output (the client reads the answer and
         * then the end of the stream), reads and drops the rest of the request, and closes when it ends or after
         * {@link #LINGER_MILLIS} at most.
         */
        private void closeLingering() {
            if (requestComplete
                    || phase != Phase.DISCARD
                    || !ctx.channel().isActive()
                    || !(ctx.channel() instanceof DuplexChannel duplex)) {
                ctx.close();
                return;
            }
            lingering = true;
            duplex.shutdownOutput();
            ctx.executor().schedule(() -> ctx.close(), LINGER_MILLIS, TimeUnit.MILLISECONDS);
            ctx.channel().config().setAutoRead(true);
            ctx.read();
        }

        /** Releases what the request held and counts it (once). */
        private void end(int finalStatus) {
            if (grant != null) {
                grant.close();
                grant = null;
            }
            dropBody();
            if (plan != null) {
                core.finished(plan, finalStatus, start);
                plan = null;
            }
        }

        private void maybeNext() {
            if (!requestComplete || !responseComplete || !ctx.channel().isActive()) {
                return;
            }
            phase = Phase.HEAD;
            exchange = null;
            call = null;
            idle();
            if (!queued.isEmpty()) {
                firstByte(); // the next request was read during the answer: its read deadline starts now
            }
            while (!queued.isEmpty() && phase != Phase.ANSWER) {
                Object msg = queued.poll();
                if (msg instanceof HttpContent content) {
                    queuedBytes -= content.content().readableBytes();
                }
                try {
                    handle(msg);
                } finally {
                    ReferenceCountUtil.release(msg);
                }
            }
            if (phase != Phase.ANSWER) {
                ctx.channel().config().setAutoRead(true);
                ctx.read();
            }
        }

        // ---- the exchange

        private void drive(Forwarder.Step step, Forwarder.Exchange x) {
            exchange = x;
            if (!ctx.channel().isActive()) {
                return;
            }
            // the next request waits for this answer; the client is still read (a bounded queue of what it sends
            // next) so that its half-close, meaning it has gone, is seen while the answer is produced
            ctx.channel().config().setAutoRead(readsDuringAnswer());
            if (step instanceof Forwarder.Reply r) {
                writeAnswer(r.answer(), false, true);
            } else if (step instanceof Forwarder.Wait w) {
                backoff = ctx.executor()
                        .schedule(
                                () -> {
                                    backoff = null;
                                    drive(x.next(), x);
                                },
                                w.pause().toNanos(),
                                TimeUnit.NANOSECONDS);
            } else if (step instanceof Forwarder.Send s) {
                call = new Call(x, s, false);
                call.start();
            } else {
                throw new IllegalStateException("a relay comes from an answer: " + step);
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext c, Object evt) {
            if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                closeAfter = true; // the client sends nothing more: the answer in progress is the last
                if (phase == Phase.HEAD) {
                    c.close();
                } else if (phase == Phase.BODY) {
                    phase = Phase.DISCARD; // the body ended before its length or its last chunk
                    dropBody();
                    requestComplete = true;
                    writeAnswer(core.badBody((ProxyCore.Proxied) plan), true, true);
                } else if (!requestComplete) {
                    requestComplete = true; // nothing more of this request will come
                    if (responseComplete) {
                        c.close();
                    }
                } else if (phase == Phase.ANSWER) {
                    // the client closed its side while its answer was being produced: it has gone (as nginx
                    // reads it); the upstream request is cancelled and the replica's slot freed at once
                    c.close();
                }
            }
            c.fireUserEventTriggered(evt);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext c) {
            resumeUpstream();
            c.fireChannelWritabilityChanged();
        }

        /** True while the client's next requests queued during an answer are within their bound. */
        private boolean readsDuringAnswer() {
            return queued.size() < PIPELINED_MESSAGES && queuedBytes < PIPELINED_BYTES;
        }

        /** {@code n} answer bytes queued for the client: counted here and in the {@link AnswerBudget}. */
        private void queued(int n) {
            pending += n;
            answers.add(n);
        }

        /** {@code n} queued answer bytes have gone to the client's socket (or were dropped with it). */
        private void written(int n) {
            pending -= n;
            answers.add(-n);
            if (pending == 0) {
                resumeUpstream();
            }
        }

        /**
         * True when reading from the replica must pause: the client connection's own buffer is full, or the
         * total of all connections' is and this client has not taken what waits for it.
         */
        private boolean mustPause() {
            return !ctx.channel().isWritable() || (pending > 0 && answers.over());
        }

        /** Reads from the replica again, if an answer is being relayed and nothing says to wait. */
        private void resumeUpstream() {
            Call current = call;
            if (current != null && current.ch != null && !current.finished && !mustPause()) {
                current.ch.config().setAutoRead(true);
                current.ch.read();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext c) {
            cancel(idleTimer);
            cancel(readTimer);
            cancel(callTimer);
            cancel(backoff);
            Call current = call;
            if (current != null && !current.finished) {
                current.clientGone();
            } else if (backoff != null && exchange != null) {
                exchange.clientGone(null);
            }
            while (!queued.isEmpty()) {
                ReferenceCountUtil.release(queued.poll());
            }
            queuedBytes = 0;
            if (!extracting) { // else ended when the extraction is back (it holds the request's state)
                end(responseComplete ? status : -1);
            }
            c.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
            LOG.debug("client connection failed: {}", cause.toString());
            c.close();
        }

        /**
         * One send to a replica and, if its answer is relayed, the relay: the upstream connection's events
         * arrive here ({@link NettyUpstream.Listener}) on the same loop.
         */
        private final class Call implements NettyUpstream.Listener {
            final Forwarder.Exchange x;
            final Forwarder.Send s;
            final boolean fresh;
            final String host;
            final int port;
            /** {@code host:port}: the upstream pool's key, and the Host header when the target names a port. */
            final String poolKey;

            Channel ch;
            boolean reused;
            boolean unsent;
            boolean headSeen;
            boolean upstreamKeepAlive;
            boolean discarding;
            boolean finished;
            Relay relay;
            Throwable cause;
            /** The exchange's deadline ({@link System#nanoTime}), checked by the connection's call check. */
            long due;
            /**
             * What the current read from the replica brought and is not yet written to the client. The chunks of one
             * read go out with no promise of their own but the last, which carries the promise and the one listener
             * that accounts for the whole read ({@link #readBytes}), at the read's end: a promise, a listener and a
             * hand-off to the answer budget per read instead of per chunk (a replica writes each event of a stream as
             * a chunk of its own). Small chunks of one read are also gathered into one ({@link #gathered}): the
             * client gets one chunk of HTTP framing where the replica wrote several, so the encoder makes one chunk
             * header and the socket one write entry for them instead of three entries per event.
             */
            HttpContent held;
            /** True when {@link #held}'s buffer is the connection's own gathering buffer, not the replica's. */
            boolean gathered;
            /** Answer bytes of the current read (the held chunk's included), not yet counted as queued. */
            int readBytes;

            Call(Forwarder.Exchange x, Forwarder.Send s, boolean fresh) {
                this.x = x;
                this.s = s;
                this.fresh = fresh;
                this.host = s.target.getHost();
                this.port = s.target.getPort() < 0 ? 80 : s.target.getPort();
                this.poolKey = NettyUpstream.key(host, port);
            }

            void start() {
                due = x.deadline();
                callDue(due);
                NettyUpstream.Lease lease =
                        fresh ? null : upstream.pooled(ctx.channel().eventLoop(), poolKey, this);
                if (lease != null) {
                    ch = lease.channel();
                    reused = true;
                    write();
                    return;
                }
                ChannelFuture f = upstream.connect(ctx.channel().eventLoop(), host, port, this);
                ch = f.channel();
                f.addListener((ChannelFutureListener) cf -> {
                    if (finished) {
                        cf.channel().close();
                    } else if (!cf.isSuccess()) {
                        finish();
                        drive(x.failed(s, Forwarder.Failure.CONNECT, Forwarder.describe(cf.cause())), x);
                    } else {
                        write();
                    }
                });
            }

            private void write() {
                Forwarder.Inbound in = x.in;
                boolean isHead = "HEAD".equalsIgnoreCase(in.method());
                NettyUpstream.expectHead(ch, isHead);
                String target =
                        s.target.getRawPath() == null || s.target.getRawPath().isEmpty() ? "/" : s.target.getRawPath();
                if (s.target.getRawQuery() != null) {
                    target += "?" + s.target.getRawQuery();
                }
                int length = in.body().length;
                ByteBuf content = length == 0 ? Unpooled.EMPTY_BUFFER : takeBody(length);
                // the client's own map (this front's sends carry its view, made in Connection.head), its names and
                // values validated by the decoder as it read them, less what does not go upstream: no copy.
                // Nothing reads the client's headers after a send, and a retry's send finds the same map, its own
                // Host and Content-Length among what is dropped again
                NettyHeaders client = (NettyHeaders) s.headers;
                HopByHop.forEachDroppedRequestName(client, drop);
                HttpHeaders h = pruned(client.map);
                // Host and Content-Length were dropped above, so adding them sets them; with a port, the Host
                // header is host:port, which the pool key already is
                h.add(HttpHeaderNames.HOST, s.target.getPort() < 0 ? host : poolKey);
                if (in.hasBody()) {
                    h.add(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(length));
                }
                FullHttpRequest req = new DefaultFullHttpRequest(
                        HttpVersion.HTTP_1_1,
                        HttpMethod.valueOf(in.method()),
                        target,
                        content != null ? content : Unpooled.wrappedBuffer(in.body()),
                        h,
                        EmptyHttpHeaders.INSTANCE);
                ch.writeAndFlush(req).addListener((ChannelFutureListener) wf -> {
                    if (!wf.isSuccess()) {
                        unsent = true; // nothing of the request reached the replica
                        cause = wf.cause();
                        wf.channel().close();
                    }
                });
            }

            private void finish() {
                finished = true; // the call check, when it fires, finds it finished and stops
                if (held != null) { // the answer ended otherwise (broken, deadline, client gone): dropped with it
                    ReferenceCountUtil.release(held);
                    held = null;
                    gathered = false;
                    readBytes = 0;
                }
            }

            /** Writes the held chunk, with the listener that accounts for the whole read. */
            private void writeHeld() {
                HttpContent h = held;
                if (h == null) {
                    return;
                }
                held = null;
                gathered = false;
                int n = readBytes;
                readBytes = 0;
                queued(n);
                ctx.write(h).addListener((ChannelFutureListener) f -> written(n));
            }

            @Override
            public void read(Object msg) {
                try {
                    if (finished && !discarding) {
                        return;
                    }
                    if (msg instanceof HttpResponse r) {
                        answerHead(r);
                    }
                    if (msg instanceof HttpContent c) {
                        answerContent(c);
                    }
                } finally {
                    ReferenceCountUtil.release(msg);
                }
            }

            private void answerHead(HttpResponse r) {
                if (r.decoderResult().isFailure()) {
                    finish();
                    ch.close();
                    drive(
                            x.failed(
                                    s,
                                    Forwarder.Failure.INVALID,
                                    Forwarder.describe(r.decoderResult().cause())),
                            x);
                    return;
                }
                int code = r.status().code();
                if (code >= 100 && code < 200 && code != 101) {
                    return; // an interim answer: the final one follows
                }
                headSeen = true;
                upstreamKeepAlive = HttpUtil.isKeepAlive(r);
                Forwarder.Step step = x.answered(s, code, view(r.headers()));
                if (step instanceof Relay rl) {
                    relay = rl;
                    relayHead(rl, r.headers());
                    return;
                }
                // not relayed: the rest of this answer is read and dropped, then the connection is reused
                finish();
                discarding = true;
                drive(step, x);
            }

            /**
             * The client's head, made of the replica's own header map ({@code upstream}, its names and values
             * validated by the upstream decoder as it read them) less what does not go to the client, plus what
             * the proxy adds and the framing: no new map, no copy. Content-Length, Transfer-Encoding and
             * Connection are among the dropped names, so adding them sets them.
             */
            private void relayHead(Relay rl, HttpHeaders upstream) {
                rl.droppedHeaders(drop);
                HttpHeaders h = pruned(upstream);
                rl.addedHeaders(h::add);
                if (!rl.noBody) {
                    if (rl.length >= 0) {
                        h.add(HttpHeaderNames.CONTENT_LENGTH, Long.toString(rl.length));
                    } else {
                        h.add(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
                    }
                } else if (rl.status != 204 && rl.status != 304 && rl.length >= 0) {
                    // a HEAD's answer says what a GET would send
                    h.add(HttpHeaderNames.CONTENT_LENGTH, Long.toString(rl.length));
                }
                if (!keepAlive) {
                    closeAfter = true;
                    h.add(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                }
                HttpResponse resp =
                        new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(rl.status), h);
                status = rl.status;
                ctx.write(resp, ctx.voidPromise()); // its failure is the connection's: exceptionCaught closes it
            }

            private void answerContent(HttpContent c) {
                boolean last = c instanceof LastHttpContent;
                if (discarding) {
                    if (last) {
                        discarding = false;
                        releaseUpstream();
                    }
                    return;
                }
                Relay rl = relay;
                if (rl == null) {
                    return;
                }
                if (c.decoderResult().isFailure()) {
                    broke(c.decoderResult().cause());
                    return;
                }
                ByteBuf buf = c.content();
                int n = buf.readableBytes();
                rl.firstByte();
                if (n > 0) {
                    if (rl.observing()) {
                        observe(rl, buf, n);
                    } else {
                        rl.body(null, 0, n);
                    }
                }
                if (last) {
                    rl.upstreamDone(); // the replica's slot is free before the client has the last bytes
                    ByteBuf tail;
                    if (held != null && (n == 0 || gather(buf, n))) {
                        tail = held.content(); // the read's chunks and the last bytes go out as the last chunk
                    } else {
                        if (held != null) {
                            ctx.write(held, ctx.voidPromise()); // accounted below, with the last chunk
                        }
                        tail = buf.retain();
                    }
                    held = null;
                    gathered = false;
                    int total = readBytes + n;
                    readBytes = 0;
                    finish();
                    releaseUpstream();
                    queued(total);
                    ctx.writeAndFlush(new DefaultLastHttpContent(tail)).addListener((ChannelFutureListener) f -> {
                        written(total);
                        if (f.isSuccess()) {
                            rl.delivered();
                        }
                        responseDone(true);
                    });
                    return;
                }
                if (n > 0) {
                    if (held == null || !gather(buf, n)) {
                        if (held != null) {
                            // an earlier chunk of this read: its bytes are accounted with the read's last chunk
                            ctx.write(held, ctx.voidPromise());
                        }
                        held = new DefaultHttpContent(buf.retain());
                        gathered = false;
                    }
                    readBytes += n;
                }
                if (mustPause()) {
                    ch.config().setAutoRead(false); // the client reads slower than the replica writes
                }
            }

            /**
             * Adds a chunk's {@code n} bytes to {@link #held} when both are small (at most {@link #GATHER_BYTES}
             * together): the replica's buffer is copied into the connection's gathering buffer (made on the first
             * such chunk, from the channel's allocator). False, with nothing changed, when they are not: a large
             * chunk goes out as it came, never copied.
             */
            private boolean gather(ByteBuf buf, int n) {
                ByteBuf h = held.content();
                int size = h.readableBytes();
                if (size + n > GATHER_BYTES) {
                    return false;
                }
                if (!gathered) {
                    ByteBuf g = ctx.alloc().buffer(Math.min(GATHER_BYTES, 4 * (size + n)), GATHER_BYTES);
                    g.writeBytes(h, h.readerIndex(), size);
                    held.release();
                    held = new DefaultHttpContent(g);
                    gathered = true;
                    h = g;
                }
                h.writeBytes(buf, buf.readerIndex(), n);
                return true;
            }

            /** Hands the chunk's bytes to the relay's observer, in slices of the loop's array (any cut will do). */
            private void observe(Relay rl, ByteBuf buf, int n) {
                if (buf.hasArray()) {
                    rl.body(buf.array(), buf.arrayOffset() + buf.readerIndex(), n);
                    return;
                }
                byte[] slice = OBSERVE_SLICE.get();
                for (int from = 0; from < n; ) {
                    int k = Math.min(slice.length, n - from);
                    buf.getBytes(buf.readerIndex() + from, slice, 0, k);
                    rl.body(slice, 0, k);
                    from += k;
                }
            }

            private void releaseUpstream() {
                if (upstreamKeepAlive && ch.isActive()) {
                    upstream.release(ch, poolKey);
                } else {
                    ch.close();
                }
            }

            @Override
            public void readComplete() {
                if (relay != null && !finished) {
                    writeHeld();
                    ctx.flush();
                }
            }

            @Override
            public void exception(Throwable t) {
                cause = t;
            }

            @Override
            public void inactive() {
                if (discarding) {
                    discarding = false; // the dropped answer ended with its connection
                    return;
                }
                if (finished) {
                    return;
                }
                if (!headSeen) {
                    finish();
                    if (x.resendStale(s, reused, unsent)) {
                        call = new Call(x, s, true);
                        call.start();
                        return;
                    }
                    String why = cause == null
                            ? "the replica closed the connection without answering"
                            : Forwarder.describe(cause);
                    drive(x.failed(s, Forwarder.Failure.IO, why), x);
                    return;
                }
                broke(cause == null ? new IOException("the replica closed the connection mid-answer") : cause);
            }

            /** The replica's answer broke after it started: the client connection is dropped, never framed complete. */
            private void broke(Throwable t) {
                finish();
                relay.upstreamBroke(t);
                ch.close();
                ctx.close();
            }

            private void deadline() {
                if (finished) {
                    return;
                }
                finish();
                if (relay == null) {
                    ch.close();
                    drive(x.failed(s, Forwarder.Failure.TIMEOUT, "no answer in time"), x);
                } else {
                    relay.deadline();
                    relay.upstreamBroke(new IOException("proxy.request_timeout_secs ended the answer"));
                    ch.close();
                    ctx.close();
                }
            }

            /** The client went away: the upstream side is cancelled. */
            void clientGone() {
                finish();
                if (relay != null) {
                    relay.clientGone();
                } else {
                    x.clientGone(s);
                }
                if (ch != null) {
                    ch.close();
                }
            }
        }
    }
}
