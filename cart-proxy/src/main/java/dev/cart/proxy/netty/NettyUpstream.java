package dev.cart.proxy.netty;

import dev.cart.proxy.upstream.UpstreamKeepAlive;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpRequestEncoder;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.FastThreadLocal;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Upstream HTTP/1.1 connections of the Netty front: a pool per event loop and per replica, so a request
 * takes a connection on its client connection's own loop and crosses no thread. A connection goes back to
 * its pool when an answer ended on it with keep-alive, and leaves it (closed) after
 * {@link UpstreamKeepAlive#SECONDS} idle, below uvicorn's 5 s, or as soon as the replica closes it (the
 * pooled channel still reads, so its end is seen while it waits). Netty's {@link HttpResponseDecoder} and
 * {@link HttpRequestEncoder} do the HTTP; the decoder is told when an answer is to a HEAD (no body) and
 * keeps both Transfer-Encoding and Content-Length when a replica sends both, so that the forwarder can
 * refuse that answer instead of relaying a guess.
 *
 * <p>Concurrency: everything runs on the event loop that owns the pool ({@link FastThreadLocal} per loop);
 * a channel's {@link Handler} hands its events to the {@link Listener} that holds it.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
final class NettyUpstream {

    /** What the holder of a connection hears from it. */
    interface Listener {
        void read(Object msg);

        void readComplete();

        void inactive();

        void exception(Throwable cause);
    }

    /** A connection: its channel and whether it had served an earlier request (a reused keep-alive one). */
    record Lease(Channel channel, boolean reused) {}

    private final Bootstrap bootstrap;
    private final FastThreadLocal<Map<String, ArrayDeque<Channel>>> pools = new FastThreadLocal<>() {
        @Override
        protected Map<String, ArrayDeque<Channel>> initialValue() {
            return new HashMap<>();
        }
    };

    NettyUpstream(Class<? extends Channel> channelClass, int connectTimeoutMillis) {
        this.bootstrap = new Bootstrap()
                .channel(channelClass)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis);
    }

    /** The pool key of a replica's {@code host} and {@code port}: computed once per request by the caller. */
    static String key(String host, int port) {
        return host + ":" + port;
    }

    /** A pooled connection to {@link #key} on {@code loop}, or null when there is none (connect one). */
    Lease pooled(EventLoop loop, String key, Listener listener) {
        ArrayDeque<Channel> pool = pools.get().get(key);
        while (pool != null && !pool.isEmpty()) {
            Channel ch = pool.pollLast(); // the most recently used: the least likely to have timed out
            Handler h = handler(ch);
            if (ch.isActive() && h != null) {
                h.holder = listener;
                h.pooled = false;
                h.decoder().head = false;
                return new Lease(ch, true);
            }
        }
        return null;
    }

    /** Connects a new connection to {@code host:port} on {@code loop}. */
    ChannelFuture connect(EventLoop loop, String host, int port, Listener listener) {
        Handler handler = new Handler();
        handler.holder = listener;
        return bootstrap
                .clone(loop)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline()
                                .addLast(new IdleStateHandler(0, 0, UpstreamKeepAlive.SECONDS, TimeUnit.SECONDS))
                                .addLast("decoder", new Decoder(handler))
                                .addLast(new HttpRequestEncoder())
                                .addLast(handler); // last: see handler(Channel)
                    }
                })
                .connect(host, port);
    }

    /**
     * The handler of a connection this made, or null once its pipeline is torn down: the last in its pipeline
     * (read in one step, where a lookup by name walks the pipeline comparing names, three times a request).
     */
    private static Handler handler(Channel ch) {
        return ch.pipeline().last() instanceof Handler h ? h : null;
    }

    /** Marks the next answer on {@code ch} as the answer to a HEAD request (it has no body). */
    static void expectHead(Channel ch, boolean head) {
        Handler h = handler(ch);
        if (h != null) {
            h.decoder().head = head;
        }
    }

    /** Gives {@code ch} back to its pool ({@link #key}, on its loop), its answer read whole and the connection kept alive. */
    void release(Channel ch, String key) {
        Handler h = handler(ch);
        if (!ch.isActive() || h == null) {
            ch.close();
            return;
        }
        h.holder = null;
        h.pooled = true;
        pools.get().computeIfAbsent(key, k -> new ArrayDeque<>()).addLast(ch);
        ch.config().setAutoRead(true);
    }

    private void forget(Channel ch) {
        for (ArrayDeque<Channel> pool : pools.get().values()) {
            pool.remove(ch);
        }
    }

    /** The response decoder: no body for a HEAD's answer; Transfer-Encoding and Content-Length both kept. */
    private static final class Decoder extends HttpResponseDecoder {
        boolean head;

        Decoder(Handler handler) {
            super(new HttpDecoderConfig().setMaxHeaderSize(64 * 1024).setMaxChunkSize(64 * 1024));
            handler.decoder = this;
        }

        @Override
        protected boolean isContentAlwaysEmpty(HttpMessage msg) {
            return head || super.isContentAlwaysEmpty(msg);
        }

        @Override
        protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
            // keep Content-Length: the forwarder refuses an answer framed both ways (a 502)
        }
    }

    /** Passes a connection's events to its holder; closes it when idle or failing in the pool. */
    private final class Handler extends ChannelInboundHandlerAdapter {
        Listener holder;
        boolean pooled;
        Decoder decoder;

        Decoder decoder() {
            return decoder;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (holder != null) {
                holder.read(msg);
            } else {
                io.netty.util.ReferenceCountUtil.release(msg); // nothing may arrive on an idle connection
                ctx.close();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (holder != null) {
                holder.readComplete();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (pooled) {
                forget(ctx.channel());
            }
            Listener l = holder;
            holder = null;
            if (l != null) {
                l.inactive();
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof IdleStateEvent && pooled) {
                ctx.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Listener l = holder;
            if (l != null) {
                l.exception(cause);
            }
            ctx.close();
        }
    }
}
